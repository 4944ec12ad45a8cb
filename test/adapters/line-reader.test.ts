import { createReadStream } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { readLines, type InputLine } from "../../src/adapters/line-reader.js";

async function collect(stream: Readable): Promise<InputLine[]> {
  const lines: InputLine[] = [];
  for await (const line of readLines(stream)) lines.push(line);
  return lines;
}

/** A stream that delivers `bytes` in chunks of `size` bytes. */
function chunked(bytes: Buffer, size: number): Readable {
  const chunks: Buffer[] = [];
  for (let start = 0; start < bytes.length; start += size) chunks.push(bytes.subarray(start, start + size));
  return Readable.from(chunks);
}

function numbered(...texts: string[]): InputLine[] {
  return texts.map((text, index) => ({ number: index + 1, text }));
}

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("readLines", () => {
  it("strips CRLF line endings, even when the CR and LF arrive in different chunks", async () => {
    const bytes = Buffer.from("alpha\r\nbeta\r\ngamma\r\n");
    expect(await collect(chunked(bytes, 1024))).toEqual(numbered("alpha", "beta", "gamma"));
    // "alpha\r" | "\nbeta" …: a chunk ends between CR and LF.
    expect(await collect(chunked(bytes, 6))).toEqual(numbered("alpha", "beta", "gamma"));
  });

  it("keeps multi-byte UTF-8 characters whole when a chunk boundary splits them", async () => {
    const text = '{"name":"Zoë","city":"Kraków","price":"€5","mood":"🎉"}\n日本語\n';
    const bytes = Buffer.from(text, "utf8");
    for (const size of [1, 2, 3, 5]) {
      expect(await collect(chunked(bytes, size)), `chunks of ${size}`).toEqual(numbered('{"name":"Zoë","city":"Kraków","price":"€5","mood":"🎉"}', "日本語"));
    }
  });

  it("yields a last line that has no newline", async () => {
    expect(await collect(chunked(Buffer.from("one\ntwo"), 2))).toEqual(numbered("one", "two"));
    expect(await collect(chunked(Buffer.from("one\r\ntwo\r"), 3))).toEqual(numbered("one", "two"));
  });

  it("yields nothing after a final newline, and nothing for an empty input", async () => {
    expect(await collect(chunked(Buffer.from("one\n"), 1))).toEqual(numbered("one"));
    expect(await collect(Readable.from([] as Buffer[]))).toEqual([]);
  });

  it("strips a UTF-8 byte order mark from the first line only, even split across chunks", async () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from("first\n\uFEFFsecond\n")]);
    expect(await collect(chunked(bytes, 1))).toEqual(numbered("first", "\uFEFFsecond"));
    expect(await collect(chunked(bytes, 2))).toEqual(numbered("first", "\uFEFFsecond"));
  });

  it("counts blank lines in the numbering and yields them as empty text", async () => {
    const bytes = Buffer.from("a\n\n\r\nb\n   \nc");
    expect(await collect(chunked(bytes, 3))).toEqual(numbered("a", "", "", "b", "   ", "c"));
  });

  it("reads a real file through a small-chunk fs stream exactly as through one chunk", async () => {
    const dir = await mkdtemp(join(tmpdir(), "wh-lines-"));
    dirs.push(dir);
    const path = join(dir, "input.ndjson");
    const lines = Array.from({ length: 300 }, (_, index) => (index % 17 === 0 ? "" : JSON.stringify({ n: index, s: "é€🎉".repeat(index % 4) })));
    const content = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(lines.join("\r\n"), "utf8")]);
    await writeFile(path, content);

    const small = await collect(createReadStream(path, { highWaterMark: 7 }));
    const whole = await collect(createReadStream(path));

    expect(small).toEqual(numbered(...lines));
    expect(whole).toEqual(small);
  });

  it("handles a line longer than many chunks", async () => {
    const long = "x".repeat(100_000);
    expect(await collect(chunked(Buffer.from(`${long}\nshort\n`), 4096))).toEqual(numbered(long, "short"));
  });
});
