import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runInProcess } from "../../helpers/in-process.js";
import { FIXTURES, lines, makeTempDir, removeTempDirs, STACK_TRACE } from "../../helpers/run-wh.js";

interface Vector {
  secret: string;
  body: string;
  signature: string;
}

const { vectors } = JSON.parse(readFileSync(join(FIXTURES, "signatures.json"), "utf8")) as { vectors: Vector[] };
const named = vectors.map((vector, index) => ({ ...vector, name: `vector ${index + 1} (${Buffer.byteLength(vector.body)} bytes)` }));
const first = vectors[0] as Vector;

afterAll(removeTempDirs);

/** A temp dir holding body.json with these exact bytes. */
async function bodyFile(body: string | Buffer): Promise<{ cwd: string; file: string }> {
  const cwd = await makeTempDir();
  const file = join(cwd, "body.json");
  await writeFile(file, body);
  return { cwd, file };
}

describe.concurrent("wh sign", () => {
  it("has known-answer vectors to check against", () => {
    expect(vectors.length).toBeGreaterThanOrEqual(5);
  });

  it.each(named)("prints the signature of $name from a file", async ({ secret, body, signature }) => {
    const { file } = await bodyFile(body);
    const result = await runInProcess(["sign", "--secret", secret, file]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${signature}\n`);
  });

  it.each(named)("prints the signature of $name from standard input", async ({ secret, body, signature }) => {
    const result = await runInProcess(["sign", "--secret", secret], { input: body });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${signature}\n`);
  });

  it("reads standard input for -", async () => {
    const result = await runInProcess(["sign", "--secret", first.secret, "-"], { input: first.body });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${first.signature}\n`);
  });

  it("signs with WH_SHARED_SECRET", async () => {
    const result = await runInProcess(["sign"], { input: first.body, env: { WH_SHARED_SECRET: first.secret } });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${first.signature}\n`);
  });

  it("signs with --secret-file, whose trailing newline is not part of the secret", async () => {
    const { cwd } = await bodyFile(first.body);
    await writeFile(join(cwd, "secret.txt"), `${first.secret}\n`);
    const result = await runInProcess(["sign", "--secret-file", "secret.txt", "body.json"], { cwd });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${first.signature}\n`);
  });

  it("signs with the config file's sharedSecret when no other secret is given", async () => {
    const { cwd } = await bodyFile(first.body);
    await writeFile(join(cwd, ".whrc.json"), JSON.stringify({ sharedSecret: first.secret }));
    const result = await runInProcess(["sign", "body.json"], { cwd });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${first.signature}\n`);
  });

  it("prints parseable JSON with --json", async () => {
    const result = await runInProcess(["sign", "--json", "--secret", first.secret], { input: first.body });
    expect(result.code).toBe(0);
    const out = lines(result.stdout);
    expect(out).toHaveLength(1);
    expect(JSON.parse(out[0] as string)).toMatchObject({ signature: first.signature, bytes: Buffer.byteLength(first.body) });
  });

  it("exits 2 with no secret anywhere", async () => {
    const result = await runInProcess(["sign"], { input: first.body });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/secret/);
    expect(result.stdout).toBe("");
  });

  it("exits 2 on a body file that does not exist", async () => {
    const result = await runInProcess(["sign", "--secret", "s", "missing.json"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("missing.json");
    expect(result.stderr).not.toMatch(STACK_TRACE);
  });
});

describe.concurrent("wh verify", () => {
  it.each(named)("exits 0 when the signature of $name matches", async ({ secret, body, signature }) => {
    const { file } = await bodyFile(body);
    const result = await runInProcess(["verify", "--secret", secret, "--signature", signature, file]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/valid/);
  });

  it("accepts the body on standard input", async () => {
    const result = await runInProcess(["verify", "--secret", first.secret, "--signature", first.signature], { input: first.body });
    expect(result.code).toBe(0);
  });

  it("accepts an upper-case hex signature", async () => {
    const result = await runInProcess(["verify", "--secret", first.secret, "--signature", first.signature.toUpperCase()], { input: first.body });
    expect(result.code).toBe(0);
  });

  it("exits 1 when the signature does not match", async () => {
    const wrong = `${first.signature.slice(0, -1)}${first.signature.endsWith("0") ? "1" : "0"}`;
    const result = await runInProcess(["verify", "--secret", first.secret, "--signature", wrong], { input: first.body });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/invalid|does not match/);
    expect(result.stderr).not.toMatch(STACK_TRACE);
  });

  it("exits 1 when the secret is wrong", async () => {
    const result = await runInProcess(["verify", "--secret", "not-the-secret", "--signature", first.signature], { input: first.body });
    expect(result.code).toBe(1);
  });

  it.each([
    ["an empty signature", ""],
    ["a non-hex signature", "zz"],
    ["a sha1= prefixed signature", `sha1=${first.signature}`],
    ["a 64-hex (SHA-256 sized) signature", "a".repeat(64)],
    ["a 39-hex signature", first.signature.slice(0, 39)],
  ])("exits 1 on %s without a stack trace", async (_name, signature) => {
    const result = await runInProcess(["verify", "--secret", first.secret, "--signature", signature], { input: first.body });
    expect(result.code).toBe(1);
    expect(result.stderr).not.toMatch(STACK_TRACE);
    expect(result.stdout).toMatch(/invalid/);
  });

  it("says a sha1= prefix is not part of X-Signature with --explain", async () => {
    const result = await runInProcess(["verify", "--explain", "--secret", first.secret, "--signature", `sha1=${first.signature}`], { input: first.body });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("sha1=");
  });

  it("exits 2 without --signature", async () => {
    const result = await runInProcess(["verify", "--secret", first.secret], { input: first.body });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--signature");
  });

  it("exits 2 with no secret anywhere", async () => {
    const result = await runInProcess(["verify", "--signature", first.signature], { input: first.body });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/secret/);
  });

  it("exits 2 when both --secret and --secret-file are given", async () => {
    const { cwd } = await bodyFile(first.body);
    await writeFile(join(cwd, "secret.txt"), first.secret);
    const result = await runInProcess(["verify", "--secret", first.secret, "--secret-file", "secret.txt", "--signature", first.signature, "body.json"], {
      cwd,
    });
    expect(result.code).toBe(2);
  });

  it("names the trailing newline with --explain when one was added to the body", async () => {
    const result = await runInProcess(["verify", "--explain", "--secret", first.secret, "--signature", first.signature], { input: `${first.body}\n` });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/trailing newline/);
  });

  it("names re-serialisation with --explain when the body was pretty-printed", async () => {
    const pretty = JSON.stringify(JSON.parse(first.body), null, 2);
    const result = await runInProcess(["verify", "--explain", "--secret", first.secret, "--signature", first.signature], { input: pretty });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/serialised|whitespace|indentation/);
  });

  it("suspects the secret with --explain when no variant of the body matches", async () => {
    const result = await runInProcess(["verify", "--explain", "--secret", "another-secret", "--signature", first.signature], { input: first.body });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/secret/);
    expect(result.stdout).not.toContain("another-secret");
  });

  it("prints parseable JSON with --json for a match and a mismatch", async () => {
    const ok = await runInProcess(["verify", "--json", "--secret", first.secret, "--signature", first.signature], { input: first.body });
    expect(ok.code).toBe(0);
    expect(lines(ok.stdout)).toHaveLength(1);
    expect(JSON.parse(ok.stdout)).toEqual({ valid: true, batch: false });
    const bad = await runInProcess(["verify", "--json", "--explain", "--secret", first.secret, "--signature", first.signature], { input: `${first.body}\n` });
    expect(bad.code).toBe(1);
    expect(lines(bad.stdout)).toHaveLength(1);
    const record = JSON.parse(bad.stdout) as { valid: boolean; reason: string; explanation: string };
    expect(record.valid).toBe(false);
    expect(record.reason).toBe("mismatch");
    expect(record.explanation).toMatch(/trailing newline/);
  });

  it("reports a malformed signature as such in --json", async () => {
    const result = await runInProcess(["verify", "--json", "--secret", first.secret, "--signature", "zz"], { input: first.body });
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ valid: false, reason: "malformed-signature" });
  });

  it("verifies with WH_SHARED_SECRET", async () => {
    const result = await runInProcess(["verify", "--signature", first.signature], { input: first.body, env: { WH_SHARED_SECRET: first.secret } });
    expect(result.code).toBe(0);
  });

  it("verifies with --secret-file, whose trailing newline is not part of the secret", async () => {
    const { cwd } = await bodyFile(first.body);
    await writeFile(join(cwd, "secret.txt"), `${first.secret}\n`);
    const result = await runInProcess(["verify", "--secret-file", "secret.txt", "--signature", first.signature, "body.json"], { cwd });
    expect(result.code).toBe(0);
  });

  it("prefers --secret-file over WH_SHARED_SECRET", async () => {
    const { cwd } = await bodyFile(first.body);
    await writeFile(join(cwd, "secret.txt"), `${first.secret}\n`);
    const result = await runInProcess(["verify", "--secret-file", "secret.txt", "--signature", first.signature, "body.json"], {
      cwd,
      env: { WH_SHARED_SECRET: "wrong" },
    });
    expect(result.code).toBe(0);
  });

  it("exits 2 when --secret-file does not exist", async () => {
    const result = await runInProcess(["verify", "--secret-file", "nope.txt", "--signature", first.signature], { input: first.body });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("nope.txt");
    expect(result.stderr).not.toMatch(STACK_TRACE);
  });

  it("prints nothing on stdout with --quiet, and keeps the exit code", async () => {
    const result = await runInProcess(["verify", "--quiet", "--secret", first.secret, "--signature", first.signature], { input: `${first.body} ` });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
  });
});
