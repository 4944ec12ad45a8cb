import { execFileSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runInProcess } from "../../helpers/in-process.js";
import { makeTempDir, removeTempDirs, STACK_TRACE } from "../../helpers/run-wh.js";

/**
 * The bad-input catalogue: every command's paths, files, URLs and numbers given wrong. Each case
 * must end with a clear message naming the problem and its own exit code, never 70 (an internal
 * error) and never a hang. Cases that send use a refused port and one attempt, so none can wait.
 */
interface BadInput {
  args: readonly string[];
  code: 1 | 2;
  /** What wh must say (on stderr, or on stdout for a verdict such as verify's). */
  says: RegExp;
}

const REFUSED = "http://127.0.0.1:1/";
const HEX = "0123456789abcdef0123456789abcdef01234567";
const SEND = ["send", "track", "--event", "E", "--user-id", "u", "--url", REFUSED, "--max-attempts", "1"];
const REPLAY = ["replay", "ok.ndjson", "--url", REFUSED, "--max-attempts", "1"];
const INGEST = ["ingest", "ok.ndjson", "--write-key", "k"];
const SYNC = ["audience", "sync", "A", "--state", "state.json", "--url", REFUSED, "--max-attempts", "1"];

const CATALOGUE: Record<string, BadInput[]> = {
  "send: URLs": [
    { args: [...SEND, "--url", "notaurl"], code: 2, says: /--url "notaurl" is not an absolute URL/ },
    { args: [...SEND, "--url", "ftp://x/"], code: 2, says: /is not an http or https URL/ },
    { args: [...SEND, "--url", "http://"], code: 2, says: /--url "http:\/\/" is not an absolute URL/ },
    { args: [...SEND, "--url", "http://127.0.0.1:99999/"], code: 2, says: /--url "http:\/\/127.0.0.1:99999\/"/ },
    { args: [...SEND, "--url", "http://[::1/"], code: 2, says: /is not an absolute URL/ },
    { args: [...SEND, "--url", "http://a b/"], code: 2, says: /is not an absolute URL/ },
    { args: [...SEND, ...Array.from({ length: 5 }, () => ["--url", REFUSED]).flat()], code: 2, says: /6 webhooks given; at most 5/ },
  ],
  "send: headers, secrets, certificates": [
    { args: [...SEND, "--header", "nocolon"], code: 2, says: /--header "nocolon": expected 'Name: value'/ },
    { args: [...SEND, "--header", "X-Signature: a"], code: 2, says: /X-Signature is set by wh/ },
    { args: [...SEND, "--secret-file", "missing.txt"], code: 2, says: /--secret-file missing.txt: no such file/ },
    { args: [...SEND, "--secret-file", "adir"], code: 2, says: /--secret-file adir: is a directory/ },
    { args: [...SEND, "--secret-file", "empty.txt"], code: 2, says: /--secret-file empty.txt: the file is empty/ },
    { args: [...SEND, "--ca", "missing.pem"], code: 2, says: /--ca missing.pem: no such file/ },
    { args: [...SEND, "--ca", "adir"], code: 2, says: /--ca adir: is a directory/ },
    { args: [...SEND, "--ca", "bad.pem"], code: 2, says: /--ca bad.pem: no PEM certificate/ },
    { args: [...SEND, "--ca", "bin.dat"], code: 2, says: /--ca bin.dat: no PEM certificate/ },
  ],
  "send: durations and numbers": [
    { args: [...SEND, "--timeout", "5"], code: 2, says: /a duration needs a unit: did you mean 5s/ },
    { args: [...SEND, "--timeout", "-1s"], code: 2, says: /--timeout "-1s": expected a duration/ },
    { args: [...SEND, "--timeout", "99999999999h"], code: 2, says: /--timeout "99999999999h": at most 24d/ },
    { args: [...SEND, "--retry-window", "30d"], code: 2, says: /--retry-window "30d": at most 24d/ },
    { args: [...SEND, "--retry-window", "abc"], code: 2, says: /--retry-window "abc": expected a duration/ },
    { args: [...SEND, "--max-attempts", "0"], code: 2, says: /--max-attempts "0": expected a whole number/ },
    { args: [...SEND, "--max-attempts", "1e99"], code: 2, says: /--max-attempts "1e99": expected a whole number/ },
    { args: [...SEND, "--mode", "nope"], code: 2, says: /--mode "nope": expected classic or actions/ },
    { args: [...SEND, "--mode", "actions", "--method", "GET"], code: 2, says: /--method "GET": expected POST, PUT or PATCH/ },
    { args: [...SEND, "--mode", "actions", "--batch-size", "0"], code: 2, says: /--batch-size "0": expected a whole number/ },
    { args: [...SEND, "--source", "nope"], code: 2, says: /--source nope: the config defines no sources/ },
  ],
  "send: message input": [
    { args: [...SEND, "--data", "@missing.json"], code: 2, says: /missing.json: no such file/ },
    { args: [...SEND, "--data", "@adir"], code: 2, says: /adir: is a directory/ },
    { args: [...SEND, "--data", "@broken.json"], code: 2, says: /--data: invalid JSON/ },
    { args: [...SEND, "--data", "@empty.txt"], code: 2, says: /--data: invalid JSON/ },
    { args: [...SEND, "--data", "[]"], code: 2, says: /--data: expected a JSON object/ },
    { args: [...SEND, "--data", "null"], code: 2, says: /--data: expected a JSON object/ },
    { args: [...SEND, "--timestamp", "yesterday"], code: 2, says: /timestamp: "yesterday" is not an ISO 8601 date-time/ },
    { args: [...SEND, "--timestamp", "2026-13-45T00:00:00Z"], code: 2, says: /is not an ISO 8601 date-time/ },
    { args: [...SEND, "--integrations", "notjson"], code: 2, says: /--integrations: invalid JSON/ },
    { args: [...SEND, "--integrations", "[]"], code: 2, says: /--integrations: expected a JSON object/ },
    { args: [...SEND, "--prop", "=1"], code: 2, says: /--prop "=1": expected key=value/ },
    { args: [...SEND, "--prop", "a..b=1"], code: 2, says: /--prop "a..b=1": invalid key/ },
    { args: [...SEND, "--prop", "__proto__.x=1"], code: 2, says: /--prop "__proto__.x=1": invalid key/ },
    { args: [...SEND, "--context", "constructor.prototype.x=1"], code: 2, says: /invalid key/ },
    { args: ["send", "nope", "--url", REFUSED], code: 2, says: /unknown message type "nope"/ },
  ],
  "replay: files and flags": [
    { args: ["replay", "missing.ndjson", "--url", REFUSED], code: 2, says: /missing.ndjson: no such file/ },
    { args: ["replay", "adir", "--url", REFUSED], code: 2, says: /adir: is a directory/ },
    { args: ["replay", "bin.dat", "--url", REFUSED, "--dry-run"], code: 1, says: /line 1: invalid: not valid UTF-8/ },
    { args: [...REPLAY, "--concurrency", "0"], code: 2, says: /--concurrency "0": expected a whole number/ },
    { args: [...REPLAY, "--rate", "-5"], code: 2, says: /--rate "-5": expected events per second/ },
    { args: [...REPLAY, "--shard", "2/2"], code: 2, says: /--shard "2\/2": expected i\/n/ },
    { args: [...REPLAY, "--shard", "0/0"], code: 2, says: /--shard "0\/0": expected i\/n/ },
    { args: [...REPLAY, "--ordered", "maybe"], code: 2, says: /--ordered "maybe": expected user or none/ },
    { args: [...REPLAY, "--dead-letter", "adir"], code: 2, says: /--dead-letter .*adir: is a directory/ },
    { args: [...REPLAY, "--dead-letter", "/nonexistent/dir/x"], code: 2, says: /--dead-letter \/nonexistent\/dir\/x: no such directory/ },
    { args: [...REPLAY, "--journal", "adir"], code: 2, says: /--journal .*adir: is a directory/ },
    { args: [...REPLAY, "--journal", "/nonexistent/dir/x"], code: 2, says: /no such directory: \/nonexistent\/dir/ },
    { args: [...REPLAY, "--dead-letter", "fifo"], code: 2, says: /--dead-letter .*fifo/ },
    { args: [...REPLAY, "--journal", "fifo"], code: 2, says: /--journal .*fifo/ },
    { args: [...REPLAY, "--dead-letter", "ok.ndjson"], code: 2, says: /--dead-letter .*ok.ndjson/ },
  ],
  "verify and sign": [
    { args: ["verify", "--secret", "s", "--signature", HEX, "missing"], code: 2, says: /missing: no such file/ },
    { args: ["verify", "--secret", "s", "--signature", HEX, "adir"], code: 2, says: /adir: is a directory/ },
    { args: ["verify", "--secret-file", "missing", "--signature", HEX, "ok.ndjson"], code: 2, says: /--secret-file missing: no such file/ },
    { args: ["verify", "--secret", "s", "ok.ndjson"], code: 2, says: /--signature HEX is required/ },
    { args: ["verify", "--signature", HEX, "ok.ndjson"], code: 2, says: /no shared secret/ },
    { args: ["verify", "--secret", "s", "--signature", "zz", "ok.ndjson"], code: 1, says: /not a 40-character hex signature/ },
    { args: ["verify", "--secret", "s", "--capture", "missing"], code: 2, says: /missing: no such file/ },
    { args: ["verify", "--secret", "s", "--capture", "adir"], code: 2, says: /adir: is a directory/ },
    { args: ["verify", "--secret", "s", "--capture", "bin.dat"], code: 1, says: /unreadable: not valid UTF-8/ },
    { args: ["verify", "--secret", "s", "--capture", "broken.json"], code: 1, says: /unreadable: not JSON/ },
    { args: ["sign", "ok.ndjson"], code: 2, says: /no shared secret/ },
    { args: ["sign", "--secret", "s", "missing"], code: 2, says: /missing: no such file/ },
    { args: ["sign", "--secret", "s", "adir"], code: 2, says: /adir: is a directory/ },
    { args: ["sign", "--secret-file", "adir", "ok.ndjson"], code: 2, says: /--secret-file adir: is a directory/ },
  ],
  "listen: ports, hosts, paths": [
    { args: ["listen", "--port", "99999"], code: 2, says: /--port "99999": expected a whole number from 0 to 65535/ },
    { args: ["listen", "--port", "-1"], code: 2, says: /--port "-1"/ },
    { args: ["listen", "--status", "700"], code: 2, says: /--status "700": expected a whole number from 100 to 599/ },
    { args: ["listen", "--host", "999.1.1.1"], code: 2, says: /--host 999\.1\.1\.1/ },
    { args: ["listen", "--host", "192.0.2.1"], code: 2, says: /--host 192\.0\.2\.1/ },
    { args: ["listen", "--out", "adir"], code: 2, says: /--out .*adir: is a directory/ },
    { args: ["listen", "--out", "/nonexistent/x"], code: 2, says: /--out \/nonexistent\/x: no such directory/ },
    { args: ["listen", "--forward-to", "ftp://x"], code: 2, says: /--forward-to "ftp:\/\/x": expected an http or https URL/ },
    { args: ["listen", "--secret-file", "missing"], code: 2, says: /--secret-file missing: no such file/ },
  ],
  "serve: flags and paths": [
    { args: ["serve", "--port", "99999"], code: 2, says: /--port "99999"/ },
    { args: ["serve", "--host", "999.1.1.1", "--port", "0"], code: 2, says: /--host 999\.1\.1\.1/ },
    { args: ["serve", "--data-dir", "ok.ndjson", "--port", "0"], code: 2, says: /--data-dir .*ok.ndjson.*not a directory/ },
    { args: ["serve", "--max-body", "abc"], code: 2, says: /--max-body "abc": expected a size/ },
    { args: ["serve", "--max-spool", "-1"], code: 2, says: /--max-spool "-1": expected a size/ },
    { args: ["serve", "--dedup-window", "-1"], code: 2, says: /--dedup-window "-1"/ },
    { args: ["serve", "--queue", "http://x"], code: 2, says: /--queue "http:\/\/x\/": expected a redis:\/\/ or rediss:\/\/ URL/ },
    { args: ["serve", "--queue", "redis://127.0.0.1:1/notanumber"], code: 2, says: /--queue .*notanumber/ },
    { args: ["serve", "--queue", "redis://"], code: 2, says: /--queue "redis:\/\/": no host/ },
    { args: ["serve", "--role", "nope", "--queue", "redis://127.0.0.1:1/0"], code: 2, says: /--role "nope"/ },
    { args: ["serve", "--role", "forward"], code: 2, says: /--role needs --queue/ },
    { args: ["serve", "--url", "notaurl"], code: 2, says: /--url "notaurl" is not an absolute URL/ },
  ],
  "ingest: files, endpoints, numbers": [
    { args: ["ingest", "missing.ndjson", "--write-key", "k", "--endpoint", REFUSED], code: 2, says: /missing.ndjson: no such file/ },
    { args: ["ingest", "adir", "--write-key", "k", "--endpoint", REFUSED], code: 2, says: /adir: is a directory/ },
    { args: [...INGEST, "--endpoint", "notaurl"], code: 2, says: /--endpoint "notaurl": not an absolute http or https URL/ },
    { args: [...INGEST, "--endpoint", "http://u:pa55word@/"], code: 2, says: /--endpoint "http:\/\/\*\*\*:\*\*\*@\/"/ },
    { args: ["ingest", "ok.ndjson", "--endpoint", REFUSED], code: 2, says: /no write key/ },
    { args: [...INGEST, "--endpoint", REFUSED, "--flush-at", "0"], code: 2, says: /--flush-at "0"/ },
    { args: [...INGEST, "--endpoint", REFUSED, "--flush-after", "x"], code: 2, says: /--flush-after "x": expected a duration/ },
  ],
  "audience and traits syncs": [
    { args: ["audience", "sync", "A", "--url", REFUSED], code: 2, says: /required option '--members <file>'/ },
    { args: [...SYNC, "--members", "missing.csv"], code: 2, says: /missing.csv: no such file/ },
    { args: [...SYNC, "--members", "adir"], code: 2, says: /adir: is a directory/ },
    { args: [...SYNC, "--members", "bin.dat"], code: 2, says: /bin.dat.*not valid UTF-8/ },
    { args: [...SYNC, "--members", "noheader.csv"], code: 2, says: /noheader.csv line 1: no user column/ },
    { args: ["traits", "sync", "T", "--values", "bin.dat", "--state", "s.json", "--url", REFUSED], code: 2, says: /bin.dat.*not valid UTF-8/ },
    { args: ["audience", "sync", "A", "--members", "members.csv", "--state", "adir", "--url", REFUSED], code: 2, says: /adir: is a directory/ },
    { args: ["audience", "sync", "A", "--members", "members.csv", "--state", "broken.json", "--url", REFUSED], code: 2, says: /broken.json/ },
    { args: ["audience", "sync", "A", "--members", "members.csv", "--state", "array-values.json", "--url", REFUSED], code: 2, says: /array-values.json/ },
  ],
  "check: URLs, files, numbers": [
    { args: ["check", "notaurl", "--secret", "s"], code: 2, says: /"notaurl".*not an absolute URL|not an absolute http or https URL/ },
    { args: ["check", "ftp://x/", "--secret", "s"], code: 2, says: /http or https URL/ },
    { args: ["check", REFUSED, "--secret-file", "adir"], code: 2, says: /--secret-file adir: is a directory/ },
    { args: ["check", REFUSED, "--secret-file", "missing.txt"], code: 2, says: /--secret-file missing.txt: no such file/ },
    { args: ["check", REFUSED, "--secret", "s", "--ca", "adir"], code: 2, says: /--ca adir: is a directory/ },
    { args: ["check", REFUSED, "--secret", "s", "--junit", "adir"], code: 2, says: /--junit .*adir: is a directory/ },
    {
      args: ["check", REFUSED, "--secret", "s", "--junit", "/nonexistent/dir/x.xml"],
      code: 2,
      says: /--junit \/nonexistent\/dir\/x\.xml: no such directory: \/nonexistent\/dir$/m,
    },
    { args: ["check", REFUSED, "--secret", "s", "--junit", "fifo"], code: 2, says: /--junit .*fifo: not a regular file/ },
    { args: ["check", REFUSED, "--secret", "s", "--only", "nope"], code: 2, says: /--only: no case is named "nope"/ },
    { args: ["check", REFUSED, "--secret", "s", "--skip", ""], code: 2, says: /--skip "": / },
    { args: ["check", REFUSED, "--secret", "s", "--concurrency", "0"], code: 2, says: /--concurrency "0": expected a whole number/ },
    { args: ["check", REFUSED, "--secret", "s", "--mode", "actions", "--batch-size", "1"], code: 2, says: /--batch-size "1": expected a whole number/ },
    { args: ["check", REFUSED, "--secret", "s", "--mode", "nope"], code: 2, says: /--mode "nope": expected classic or actions/ },
  ],
  "serve dead-letters: data directories and their files": [
    { args: ["serve", "dead-letters", "list", "--data-dir", "missing"], code: 2, says: /--data-dir missing: no such directory/ },
    { args: ["serve", "dead-letters", "list", "--data-dir", "ok.ndjson"], code: 2, says: /--data-dir ok.ndjson: not a directory/ },
    { args: ["serve", "dead-letters", "replay", "--data-dir", "missing"], code: 2, says: /--data-dir missing: no such directory/ },
    { args: ["serve", "dead-letters", "list", "--data-dir", "dl-dir"], code: 2, says: /dl-dir\/dead-letters\.ndjson: is a directory/ },
    { args: ["serve", "dead-letters", "replay", "--data-dir", "dl-dir"], code: 2, says: /dl-dir\/dead-letters\.ndjson: is a directory/ },
    { args: ["serve", "dead-letters", "list", "--data-dir", "dl-fifo"], code: 2, says: /dl-fifo\/dead-letters\.web\.ndjson: .*named pipe/ },
    { args: ["serve", "dead-letters", "replay", "--data-dir", "dl-fifo"], code: 2, says: /dl-fifo\/dead-letters\.web\.ndjson: .*named pipe/ },
    { args: ["serve", "dead-letters", "replay", "--data-dir", "dl-ok", "--id", "nope"], code: 2, says: /--id nope: no such dead letter/ },
    { args: ["serve", "dead-letters", "replay", "--data-dir", "dl-ok", "--id", ""], code: 2, says: /--id : no such dead letter|--id "": / },
    { args: ["serve", "dead-letters", "list", "--queue", "http://x"], code: 2, says: /--queue "http:\/\/x\/": expected a redis:\/\/ or rediss:\/\/ URL/ },
    {
      args: ["serve", "dead-letters", "replay", "--queue", "redis://u:pa55word@127.0.0.1:1/0"],
      code: 2,
      says: /--queue redis:\/\/\*\*\*:\*\*\*@127\.0\.0\.1:1\/0: cannot connect/,
    },
    { args: ["serve", "dead-letters", "list", "--config", "missing.json"], code: 2, says: /missing.json:\s+no such file/ },
  ],
  "replay of a dead-letter file, and --max-failures": [
    { args: ["replay", "adir.failed.ndjson", "--url", REFUSED], code: 2, says: /adir.failed.ndjson: is a directory/ },
    { args: ["replay", "missing.failed.ndjson", "--url", REFUSED], code: 2, says: /missing.failed.ndjson: no such file/ },
    {
      args: ["replay", "fifo-out.ndjson", "--url", REFUSED, "--max-attempts", "1"],
      code: 2,
      says: /--dead-letter .*fifo-out\.ndjson\.failed\.ndjson: .*named pipe/,
    },
    {
      args: ["replay", "dir-out.ndjson", "--url", REFUSED, "--max-attempts", "1"],
      code: 2,
      says: /--dead-letter .*dir-out\.ndjson\.failed\.ndjson: is a directory/,
    },
    {
      args: ["replay", "dir-journal.ndjson", "--url", REFUSED, "--max-attempts", "1"],
      code: 2,
      says: /--journal .*dir-journal\.ndjson\.wh-journal: is a directory/,
    },
    { args: ["replay", "ok.failed.ndjson", "--url", REFUSED, "--dry-run"], code: 1, says: /line 1: invalid: invalid JSON/ },
    { args: [...REPLAY, "--max-failures", "-1"], code: 2, says: /--max-failures "-1": expected a whole number/ },
    { args: [...REPLAY, "--max-failures", "abc"], code: 2, says: /--max-failures "abc": expected a whole number/ },
    { args: [...REPLAY, "--max-failures", "1e99"], code: 2, says: /--max-failures "1e99": expected a whole number/ },
    { args: [...INGEST, "--endpoint", REFUSED, "--max-failures", "x"], code: 2, says: /--max-failures "x": expected a whole number/ },
    { args: [...SYNC, "--members", "members.csv", "--max-failures", "1.5"], code: 2, says: /--max-failures "1.5": expected a whole number/ },
  ],
  "config and the rest": [
    { args: ["config", "show", "--config", "missing.json"], code: 2, says: /missing.json:\s+no such file/ },
    { args: ["config", "show", "--config", "broken.json"], code: 2, says: /broken.json:\s+not valid JSON/ },
    { args: ["config", "validate", "--config", "badrc.json"], code: 2, says: /webhooks\[0\]\.url: "ftp:\/\/x\/" is not an http or https URL/ },
    { args: ["config", "validate", "--config", "bin.dat"], code: 2, says: /no loader for .*\.dat/ },
    { args: ["config", "validate", "--config", "twins.json"], code: 2, says: /writeKey/ },
    { args: ["config", "nope"], code: 2, says: /unknown command 'nope'/ },
    { args: ["completion", "nope"], code: 2, says: /expected one of bash, zsh, fish/ },
    { args: ["demo", "--nope"], code: 2, says: /unknown option '--nope'/ },
  ],
};

let dir = "";

beforeAll(async () => {
  dir = await makeTempDir();
  const files: Record<string, string | Buffer> = {
    "ok.ndjson": '{"type":"track","userId":"u","event":"E"}\n',
    "empty.txt": "",
    "bad.pem": "not pem\n",
    "bin.dat": Buffer.from([0xff, 0xfe, 0x00, 0x67, 0x61, 0x72, 0x62, 0x0a]),
    "broken.json": "{\n",
    "badrc.json": '{"webhooks":[{"url":"ftp://x"}]}',
    "twins.json": JSON.stringify({ sources: { a: { writeKey: "k", webhooks: [{ url: REFUSED }] }, b: { writeKey: "k", webhooks: [{ url: REFUSED }] } } }),
    "members.csv": "userId\nu1\n",
    "noheader.csv": "id\nu1\n",
    "array-values.json": JSON.stringify({ "wh-sync-state": 1, kind: "audience", name: "A", trait: "a", values: ["u0", "u1"] }),
  };
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), content);
  await mkdir(join(dir, "adir"));
  execFileSync("mkfifo", [join(dir, "fifo")]);
  // wh serve data directories whose dead-letter file is a directory, a named pipe, or fine.
  await mkdir(join(dir, "dl-dir", "dead-letters.ndjson"), { recursive: true });
  await mkdir(join(dir, "dl-fifo"));
  execFileSync("mkfifo", [join(dir, "dl-fifo", "dead-letters.web.ndjson")]);
  await mkdir(join(dir, "dl-ok"));
  await writeFile(join(dir, "dl-ok", "dead-letters.ndjson"), "");
  await mkdir(join(dir, "adir.failed.ndjson"));
  // A dead-letter record whose original is not an event; inputs whose default outputs cannot be written.
  await writeFile(join(dir, "ok.failed.ndjson"), `${JSON.stringify({ line: 1, outcome: "failed", reason: "r", at: "now", original: "not json" })}\n`);
  for (const name of ["fifo-out.ndjson", "dir-out.ndjson", "dir-journal.ndjson"])
    await writeFile(join(dir, name), '{"type":"track","userId":"u","event":"E"}\n');
  execFileSync("mkfifo", [join(dir, "fifo-out.ndjson.failed.ndjson")]);
  await mkdir(join(dir, "dir-out.ndjson.failed.ndjson"));
  await mkdir(join(dir, "dir-journal.ndjson.wh-journal"));
});

afterAll(removeTempDirs);

describe.each(Object.entries(CATALOGUE))("bad input: %s", (_group, cases) => {
  it.concurrent.each(cases.map((bad) => [bad.args.join(" "), bad] as const))("wh %s", async (_name, bad) => {
    const result = await runInProcess(bad.args, { cwd: dir });
    expect(result.stderr).not.toMatch(STACK_TRACE);
    // The one password in the catalogue is never shown.
    expect(`${result.stderr}${result.stdout}`).not.toContain("pa55word");
    expect(`${result.stderr}${result.stdout}`).toMatch(bad.says);
    expect(result.code).toBe(bad.code);
  });
});
