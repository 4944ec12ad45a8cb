import { describe, expect, it } from "vitest";
import { createRowParser, parseCsvLine, type RowResult, type UserRow } from "../../src/core/user-table.js";

/** Parses a whole file the way the syncs read one: blank lines skipped, the first other line picks the format. */
function parseFile(text: string, wantValue: boolean, csv = false): { rows: UserRow[]; errors: { line: number; error: string }[] } {
  const rows: UserRow[] = [];
  const errors: { line: number; error: string }[] = [];
  let parse: ((line: string) => RowResult) | undefined;
  for (const [index, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    if (parse === undefined) {
      const created = createRowParser(line, wantValue, csv);
      if ("error" in created) return { rows, errors: [{ line: index + 1, error: created.error }] };
      parse = created;
    }
    const result = parse(line);
    if (!result.ok) errors.push({ line: index + 1, error: result.error });
    else if (result.row !== undefined) rows.push(result.row);
  }
  return { rows, errors };
}

function members(text: string): string[] {
  const { rows, errors } = parseFile(text, false);
  expect(errors).toEqual([]);
  for (const row of rows) expect(row.value).toBe(true);
  return rows.map((row) => row.userId);
}

function values(text: string): [string, unknown][] {
  const { rows, errors } = parseFile(text, true);
  expect(errors).toEqual([]);
  return rows.map((row) => [row.userId, row.value]);
}

function firstError(text: string, wantValue: boolean): string {
  const { errors } = parseFile(text, wantValue);
  expect(errors.length).toBeGreaterThan(0);
  return (errors[0] as { error: string }).error;
}

describe("parseCsvLine", () => {
  it.each<[string, string[]]>([
    ["a,b,c", ["a", "b", "c"]],
    ["u1", ["u1"]],
    ["", [""]],
    ["a,,c", ["a", "", "c"]],
    ["a,b,", ["a", "b", ""]],
    ['"Smith, Jo",u7', ["Smith, Jo", "u7"]],
    ['"say ""hi""",u8', ['say "hi"', "u8"]],
    ['u9,"a, ""quoted"", cell"', ["u9", 'a, "quoted", cell']],
    ['""', [""]],
    ['"",x', ["", "x"]],
    ['it"s,x', ['it"s', "x"]],
  ])("splits %j into %j", (line, cells) => {
    expect(parseCsvLine(line)).toEqual(cells);
  });
});

describe("createRowParser: members", () => {
  it("reads one userId per line", () => {
    expect(members("u1\nu2\n\nu3\n")).toEqual(["u1", "u2", "u3"]);
  });

  it("trims spaces around a plain userId", () => {
    expect(members("  u1  \nu2\t\n")).toEqual(["u1", "u2"]);
  });

  it("reads NDJSON objects with a userId", () => {
    expect(members('{"userId":"u1"}\n{"userId":"u2","email":"b@example.com"}\n')).toEqual(["u1", "u2"]);
  });

  it("reads NDJSON objects with user_id", () => {
    expect(members('{"user_id":"u1"}\n')).toEqual(["u1"]);
  });

  it("reads CSV with a userId header and skips the header", () => {
    expect(members("userId\nu1\nu2\n")).toEqual(["u1", "u2"]);
  });

  it("reads CSV with a user_id header", () => {
    expect(members("user_id\nu1\nu2\n")).toEqual(["u1", "u2"]);
  });

  it("matches the userId header in any case", () => {
    expect(members("UserID,plan\nu1,pro\n")).toEqual(["u1"]);
  });

  it("finds the userId column among extra columns", () => {
    expect(members("email,userId,plan\na@example.com,u1,pro\nb@example.com,u2,free\n")).toEqual(["u1", "u2"]);
  });

  it("reads a quoted cell with a comma and doubled quotes in another column", () => {
    expect(members('name,userId\n"Smith, ""Jo""",u7\n"Plain",u8\n')).toEqual(["u7", "u8"]);
  });

  it("reads a quoted userId", () => {
    expect(members('userId,name\n"u,1","x"\n')).toEqual(["u,1"]);
  });
});

describe("createRowParser: values", () => {
  it("reads CSV userId,value without a header, numbers and booleans as JSON and text as is", () => {
    expect(values("u1,100\nu2,250.5\nu3,true\nu4,gold\nu5,null\nu6,-3\nu7,1e3\n")).toEqual([
      ["u1", 100],
      ["u2", 250.5],
      ["u3", true],
      ["u4", "gold"],
      ["u5", null],
      ["u6", -3],
      ["u7", 1000],
    ]);
  });

  it("keeps text that only looks like a number in part as text", () => {
    expect(values('u1,007\nu2,12abc\nu3,"Paris, France"\nu4,  spaced text  \n')).toEqual([
      ["u1", "007"],
      ["u2", "12abc"],
      ["u3", "Paris, France"],
      ["u4", "spaced text"],
    ]);
  });

  it("reads CSV with a userId,value header", () => {
    expect(values("userId,value\nu1,10\nu2,20\n")).toEqual([
      ["u1", 10],
      ["u2", 20],
    ]);
  });

  it("takes the value column by name among extra columns", () => {
    expect(values("email,value,userId\na@example.com,42,u1\n")).toEqual([["u1", 42]]);
  });

  it("takes the first other column as the value when none is named value", () => {
    expect(values("user_id,ltv\nu1,99.9\n")).toEqual([["u1", 99.9]]);
  });

  it("reads NDJSON {userId, value} with any JSON value", () => {
    expect(values('{"userId":"u1","value":100}\n{"userId":"u2","value":"gold"}\n{"userId":"u3","value":{"tier":2}}\n{"userId":"u4","value":null}\n')).toEqual([
      ["u1", 100],
      ["u2", "gold"],
      ["u3", { tier: 2 }],
      ["u4", null],
    ]);
  });
});

describe("createRowParser: errors", () => {
  it("refuses an NDJSON line without a userId", () => {
    expect(firstError('{"userId":"u1"}\n{"email":"x@example.com"}\n', false)).toMatch(/userId/);
  });

  it("refuses an NDJSON userId that is not a non-empty string", () => {
    expect(firstError('{"userId":42}\n', false)).toMatch(/userId/);
    expect(firstError('{"userId":""}\n', false)).toMatch(/userId/);
  });

  it("refuses bad JSON in an NDJSON file", () => {
    expect(firstError('{"userId":"u1"}\n{"userId":\n', false)).toMatch(/invalid JSON/);
  });

  it("refuses an NDJSON line that is not an object", () => {
    expect(firstError('{"userId":"u1"}\n["u2"]\n', false)).toMatch(/object/);
  });

  it("refuses an NDJSON value line without a value", () => {
    expect(firstError('{"userId":"u1","value":1}\n{"userId":"u2"}\n', true)).toBe("no value for u2");
  });

  it("refuses a CSV value line without a value", () => {
    expect(firstError("u1,1\nu2\n", true)).toBe("no value for u2");
  });

  it("refuses a CSV line with an empty userId", () => {
    expect(firstError("userId,plan\n,pro\n", false)).toBe("no userId");
    expect(firstError("u1,1\n,5\n", true)).toBe("no userId");
  });

  it("reports the line of the error", () => {
    const { errors } = parseFile('{"userId":"u1"}\n\n{"nope":1}\n', false);
    expect(errors).toEqual([{ line: 3, error: expect.stringMatching(/userId/) as unknown as string }]);
  });
});

describe("files whose user column cannot be found", () => {
  it("refuses a .csv file whose header names no userId column (email, then a@x)", () => {
    expect(parseFile("email\na@x\n", false, true).errors).toEqual([{ line: 1, error: expect.stringMatching(/no user column: the header \("email"\) has no userId or user_id column/) }]);
  });

  it("refuses a file of several columns none of which is userId", () => {
    expect(parseFile("id,email,plan\n1,a@x,pro\n", false).errors[0]?.error).toMatch(/no user column/);
  });

  it("still reads a plain list of one userId per line", () => {
    expect(members("email\na@x\n")).toEqual(["email", "a@x"]);
  });
});
