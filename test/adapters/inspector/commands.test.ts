import { readFileSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandBuilders, type CommandSource } from "../../../src/adapters/inspector/commands.js";
import { INSPECTOR_PAGE } from "../../../src/adapters/inspector/page.generated.js";
import { MESSAGE_TYPES } from "../../../src/core/message/types.js";
import { shellWords } from "../../helpers/shell-words.js";

// The inspector's copied commands, run by a real `sh -c` (see shellWords): every hostile text
// must arrive as the one word it was, and no marker file may appear.

const { curlCommand, whSendCommand } = commandBuilders(MESSAGE_TYPES);
const ORIGIN = "http://127.0.0.1:4000/";
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wh-commands-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const wordsOf = (command: string): Promise<string[]> => shellWords(command, dir);

const marker = (name: string): string => `$(touch ${name})\`touch ${name}-2\`;touch ${name}-3`;

const HOSTILE_TYPES = [`track; echo INJECTED #`, `track'; touch type-1; '`, "--url=http://evil.example/", "-h", `$(touch type-2)`, "batch of 2", ""];
const HOSTILE_PATHS = ["/hook", `/hook';touch path-1;'`, `/h?a=1&b=$(touch path-2)`, "/h\n touch path-3", `/'"'"'; touch path-4 #`];
const HOSTILE_BODIES = [
  '{"type":"track","userId":"u1"}',
  `{"userId":"it's"}'; ${marker("body")} '`,
  `'\n${marker("nl")}\n'`,
  "\\'$HOME\\",
  "@/etc/passwd",
  "-",
  `"; ${marker("dq")}`,
];

function entry(type: string, path: string, body: string): CommandSource {
  return { method: "POST", path, type, body, headers: { host: "x", "content-type": "application/json", "x-evil": `a'; ${marker("header")}; '` } };
}

describe("the inspector's copy as wh send and copy as curl", () => {
  it("quote every value so that sh passes each as one word and runs nothing from it", async () => {
    for (const type of HOSTILE_TYPES) {
      for (const path of HOSTILE_PATHS) {
        for (const body of HOSTILE_BODIES) {
          const source = entry(type, path, body);
          const url = `http://127.0.0.1:4000${path}`;
          const sent = MESSAGE_TYPES.includes(type as never) ? type : "track";
          const wh = await wordsOf(whSendCommand(source, ORIGIN));
          const expected =
            body === "-" || body.startsWith("@")
              ? ["wh", "send", sent, "--data", "-", "--url", url, "<stdin>", body]
              : ["wh", "send", sent, "--data", body, "--url", url];
          expect(wh, whSendCommand(source, ORIGIN)).toEqual(expected);
          expect(await wordsOf(curlCommand(source, ORIGIN))).toEqual([
            "curl",
            "-X",
            "POST",
            url,
            "-H",
            `content-type: application/json`,
            "-H",
            `x-evil: ${source.headers["x-evil"]}`,
            "--data-binary",
            body,
          ]);
        }
      }
    }
    expect(await readdir(dir)).toEqual([]);
  });

  it("quote the type, the body and the URL of an ordinary event too", () => {
    const source = entry("identify", "/hook", '{"type":"identify","userId":"u1"}');
    expect(whSendCommand(source, ORIGIN)).toBe(`wh send 'identify' --data '{"type":"identify","userId":"u1"}' --url 'http://127.0.0.1:4000/hook'`);
  });

  it("are the code the inspector page runs", () => {
    // The page's script bundles these builders in (the generated module names what it is made of;
    // inspector-page.test.ts checks that it is what the sources give), and no quoter of its own.
    expect(readFileSync(new URL("../../../src/adapters/inspector/page.generated.ts", import.meta.url), "utf8")).toContain(
      "\n// - src/adapters/inspector/commands.ts\n",
    );
    expect(INSPECTOR_PAGE).not.toMatch(/function (whSendCommand|curlCommand)|shellQuote/);
  });
});
