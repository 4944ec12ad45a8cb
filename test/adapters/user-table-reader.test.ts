import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { readUserTable } from "../../src/adapters/user-table-reader.js";
import type { UserRow } from "../../src/core/user-table.js";

/** Reads a whole file the way the syncs read one: the rows, and the first error with its line. */
async function parseFile(text: string | Buffer, wantValue: boolean, csv = false): Promise<{ rows: UserRow[]; errors: { line: number; error: string }[] }> {
  const rows: UserRow[] = [];
  const errors: { line: number; error: string }[] = [];
  // Two bytes at a time (a thousand chunks for a big file): records, lines and a byte-order mark that span chunks are read whole.
  const bytes = Buffer.from(text);
  const size = Math.max(2, Math.ceil(bytes.length / 1000));
  const chunks = Array.from({ length: Math.ceil(bytes.length / size) }, (_, index) => bytes.subarray(index * size, (index + 1) * size));
  for await (const { line, result } of readUserTable(Readable.from(chunks), { wantValue, csv })) {
    if (result.ok) rows.push(result.row);
    else errors.push({ line, error: result.error });
  }
  return { rows, errors };
}

async function members(text: string): Promise<string[]> {
  const { rows, errors } = await parseFile(text, false);
  expect(errors).toEqual([]);
  for (const row of rows) expect(row.value).toBe(true);
  return rows.map((row) => row.userId);
}

async function values(text: string): Promise<[string, unknown][]> {
  const { rows, errors } = await parseFile(text, true);
  expect(errors).toEqual([]);
  return rows.map((row) => [row.userId, row.value]);
}

async function firstError(text: string, wantValue: boolean): Promise<string> {
  const { errors } = await parseFile(text, wantValue);
  expect(errors.length).toBeGreaterThan(0);
  return (errors[0] as { error: string }).error;
}

describe("readUserTable: members", () => {
  it("reads one userId per line", async () => {
    expect(await members("u1\nu2\n\nu3\n")).toEqual(["u1", "u2", "u3"]);
  });

  it("trims spaces around a plain userId", async () => {
    expect(await members("  u1  \nu2\t\n")).toEqual(["u1", "u2"]);
  });

  it("reads NDJSON objects with a userId", async () => {
    expect(await members('{"userId":"u1"}\n{"userId":"u2","email":"b@example.com"}\n')).toEqual(["u1", "u2"]);
  });

  it("reads NDJSON objects with user_id", async () => {
    expect(await members('{"user_id":"u1"}\n')).toEqual(["u1"]);
  });

  it("reads CSV with a userId header and skips the header", async () => {
    expect(await members("userId\nu1\nu2\n")).toEqual(["u1", "u2"]);
  });

  it("reads CSV with a user_id header", async () => {
    expect(await members("user_id\nu1\nu2\n")).toEqual(["u1", "u2"]);
  });

  it("matches the userId header in any case", async () => {
    expect(await members("UserID,plan\nu1,pro\n")).toEqual(["u1"]);
  });

  it("finds the userId column among extra columns", async () => {
    expect(await members("email,userId,plan\na@example.com,u1,pro\nb@example.com,u2,free\n")).toEqual(["u1", "u2"]);
  });

  it("reads a quoted cell with a comma and doubled quotes in another column", async () => {
    expect(await members('name,userId\n"Smith, ""Jo""",u7\n"Plain",u8\n')).toEqual(["u7", "u8"]);
  });

  it("reads a quoted userId", async () => {
    expect(await members('userId,name\n"u,1","x"\n')).toEqual(["u,1"]);
  });
});

describe("readUserTable: CSV records", () => {
  it("reads quoted cells with commas, doubled quotes, and line breaks (LF or CRLF) whole", async () => {
    const text = 'userId,value\r\n"u,1","say ""hi"""\r\nu2,"two\r\nlines"\r\n"u\n3",""\r\nu4,"a,\n\n""b"""\r\n';
    expect(await values(text)).toEqual([
      ["u,1", 'say "hi"'],
      ["u2", "two\r\nlines"],
      ["u\n3", ""],
      ["u4", 'a,\n\n"b"'],
    ]);
  });

  it("keeps a quote inside an unquoted cell as text", async () => {
    expect(await values('userId,value\nit"s,x"y\n')).toEqual([['it"s', 'x"y']]);
  });

  it("names the line each record starts on, blank lines and line breaks in cells counted", async () => {
    const text = 'userId,note\n\nu1,"one\ntwo\nthree"\n   \n,"no user\nhere"\n';
    expect((await parseFile(text, false)).errors).toEqual([{ line: 7, error: "no userId" }]);
  });

  it("skips a byte-order mark and reads an empty or blank file as no rows", async () => {
    expect(await members("\uFEFFuserId\nu1\n")).toEqual(["u1"]);
    expect(await members('\uFEFF{"userId":"j1"}\n')).toEqual(["j1"]);
    expect(await members("")).toEqual([]);
    expect(await members(" \n\n\t\n")).toEqual([]);
  });

  it("refuses a quote that is never closed, naming the line the record starts on", async () => {
    expect((await parseFile('userId\nu1\n"u2\nu3\nu4\n', false)).errors).toEqual([
      { line: 3, error: expect.stringMatching(/closing quote never comes/) as unknown as string },
    ]);
  });

  it("refuses a record over 1 MiB, naming the line it starts on", async () => {
    const { rows, errors } = await parseFile(`userId\nu1\n"${"x".repeat(2 * 1024 * 1024)}"\nu3\n`, false);
    expect(errors).toEqual([{ line: 3, error: expect.stringMatching(/longer than the 1 MiB a record may have/) as unknown as string }]);
    expect(rows.length).toBeLessThanOrEqual(1);
  });

  it("refuses a cell that is not UTF-8, and an NDJSON line that is not", async () => {
    expect((await parseFile(Buffer.from([...Buffer.from("userId\nu1\nu"), 0xc3, 0x28, 0x0a]), false)).errors).toEqual([
      { line: 3, error: expect.stringMatching(/^not valid UTF-8/) as unknown as string },
    ]);
    expect((await parseFile(Buffer.from([...Buffer.from('{"userId":"u1"}\n{"userId":"u'), 0xff, ...Buffer.from('"}\n')]), false)).errors).toEqual([
      { line: 2, error: expect.stringMatching(/not valid UTF-8/) as unknown as string },
    ]);
  });
});

describe("readUserTable: values", () => {
  it("reads CSV userId,value without a header, numbers and booleans as JSON and text as is", async () => {
    expect(await values("u1,100\nu2,250.5\nu3,true\nu4,gold\nu5,null\nu6,-3\n")).toEqual([
      ["u1", 100],
      ["u2", 250.5],
      ["u3", true],
      ["u4", "gold"],
      ["u5", null],
      ["u6", -3],
    ]);
  });

  it("keeps as text a number JSON would change, as --trait does: 1.10, 1e3, -0, past 2^53", async () => {
    expect(await values("u1,1.10\nu2,1e3\nu3,-0\nu4,18446744073709551616\nu5,9007199254740993\nu6,0.5\n")).toEqual([
      ["u1", "1.10"],
      ["u2", "1e3"],
      ["u3", "-0"],
      ["u4", "18446744073709551616"],
      ["u5", "9007199254740993"],
      ["u6", 0.5],
    ]);
  });

  it("keeps text that only looks like a number in part as text", async () => {
    expect(await values('u1,007\nu2,12abc\nu3,"Paris, France"\nu4,  spaced text  \n')).toEqual([
      ["u1", "007"],
      ["u2", "12abc"],
      ["u3", "Paris, France"],
      ["u4", "spaced text"],
    ]);
  });

  it("reads CSV with a userId,value header", async () => {
    expect(await values("userId,value\nu1,10\nu2,20\n")).toEqual([
      ["u1", 10],
      ["u2", 20],
    ]);
  });

  it("takes the value column by name, in any case, among extra columns", async () => {
    expect(await values("email,value,userId\na@example.com,42,u1\n")).toEqual([["u1", 42]]);
    expect(await values("email,Value,userId\na@example.com,7,u1\n")).toEqual([["u1", 7]]);
  });

  it("takes the first other column as the value when none is named value", async () => {
    expect(await values("user_id,ltv\nu1,99.9\n")).toEqual([["u1", 99.9]]);
  });

  it("takes the first other column as the value when it comes before the user column", async () => {
    expect(await values("ltv,user_id\n99.9,u1\n")).toEqual([["u1", 99.9]]);
  });

  it("reads NDJSON {userId, value} with any JSON value", async () => {
    expect(
      await values('{"userId":"u1","value":100}\n{"userId":"u2","value":"gold"}\n{"userId":"u3","value":{"tier":2}}\n{"userId":"u4","value":null}\n'),
    ).toEqual([
      ["u1", 100],
      ["u2", "gold"],
      ["u3", { tier: 2 }],
      ["u4", null],
    ]);
  });
});

describe("readUserTable: errors", () => {
  it("refuses an NDJSON line without a userId", async () => {
    expect(await firstError('{"userId":"u1"}\n{"email":"x@example.com"}\n', false)).toMatch(/userId/);
  });

  it("refuses an NDJSON userId that is not a non-empty string", async () => {
    expect(await firstError('{"userId":42}\n', false)).toMatch(/userId/);
    expect(await firstError('{"userId":""}\n', false)).toMatch(/userId/);
  });

  it("refuses bad JSON in an NDJSON file", async () => {
    expect(await firstError('{"userId":"u1"}\n{"userId":\n', false)).toMatch(/invalid JSON/);
  });

  it("refuses an NDJSON line that is not an object", async () => {
    expect(await firstError('{"userId":"u1"}\n["u2"]\n', false)).toMatch(/object/);
  });

  it("refuses an NDJSON value line without a value", async () => {
    expect(await firstError('{"userId":"u1","value":1}\n{"userId":"u2"}\n', true)).toBe("no value for u2");
  });

  it("refuses a CSV value line without a value", async () => {
    expect(await firstError("u1,1\nu2\n", true)).toBe("no value for u2");
  });

  it("refuses a CSV line with an empty userId", async () => {
    expect(await firstError("userId,plan\n,pro\n", false)).toBe("no userId");
    expect(await firstError("u1,1\n,5\n", true)).toBe("no userId");
  });

  it("reports the line of the error", async () => {
    const { errors } = await parseFile('{"userId":"u1"}\n\n{"nope":1}\n', false);
    expect(errors).toEqual([{ line: 3, error: expect.stringMatching(/userId/) as unknown as string }]);
  });
});

describe("files whose user column cannot be found", () => {
  it("refuses a .csv file whose header names no userId column (email, then a@x)", async () => {
    expect((await parseFile("email\na@x\n", false, true)).errors).toEqual([
      { line: 1, error: expect.stringMatching(/no user column: the header \("email"\) has no userId or user_id column/) },
    ]);
  });

  it("refuses a file of several columns none of which is userId", async () => {
    expect((await parseFile("id,email,plan\n1,a@x,pro\n", false)).errors[0]?.error).toMatch(/no user column/);
  });

  it("still reads a plain list of one userId per line", async () => {
    expect(await members("email\na@x\n")).toEqual(["email", "a@x"]);
  });
});
