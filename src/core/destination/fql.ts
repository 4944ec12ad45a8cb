/**
 * Segment's Filter Query Language (segment-docs src/api/public-api/fql.md), compiled to the
 * intermediate representation that @segment/tsub's `matches(event, { type: "fql", ir })`
 * evaluates. No published package does this: Segment compiles FQL on its servers and hands
 * analytics.js rules already compiled (analytics-next plugins/routing-middleware), and
 * @segment/fql-ts only lexes. The IR is the one tsub-js's own tests hold next to their FQL
 * (src/__tests__/matchers.test.ts): a field path is a string ("properties.plan"), a literal
 * `{"value": …}` (a list: `{"value": [item, …]}`), anything else an array `[operator, …operands]`
 * with `and`/`or` chains flat.
 */

export type FqlIr = string | { value: unknown } | FqlIr[];
export type FqlCompiled = { ok: true; ir: FqlIr } | { ok: false; error: string };

/** The functions tsub evaluates, by arity; FQL has more (uppercase, snakecase, …) that tsub cannot run. */
const FUNCTIONS: Record<string, number> = { contains: 2, match: 2, lowercase: 1, length: 1, typeof: 1 };
const COMPARISONS = new Set(["=", "!=", "<", "<=", ">", ">=", "in"]);

type Token =
  | { kind: "path"; segments: string[]; at: number }
  | { kind: "string" | "number"; value: string | number; at: number }
  | { kind: "punct"; value: string; at: number };

class FqlError extends Error {}

export function compileFql(text: string): FqlCompiled {
  try {
    const parser = new Parser(lex(text));
    const ir = parser.expression();
    parser.expectEnd();
    return { ok: true, ir };
  } catch (error) {
    if (error instanceof FqlError) return { ok: false, error: error.message };
    throw error;
  }
}

const PUNCT = ["!=", "<=", ">=", "=", "<", ">", "!", "(", ")", "[", "]", ","];
const PATH_CHAR = /[A-Za-z0-9_-]/;

function lex(text: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (at < text.length) {
    const char = text[at] as string;
    if (/\s/.test(char)) at += 1;
    else if (char === '"' || char === "'") at = lexString(text, at, tokens);
    else if (/[0-9]/.test(char) || (char === "-" && /[0-9]/.test(text[at + 1] ?? ""))) at = lexNumber(text, at, tokens);
    else if (PATH_CHAR.test(char) || char === "\\") at = lexPath(text, at, tokens);
    else {
      const punct = PUNCT.find((candidate) => text.startsWith(candidate, at));
      if (punct === undefined) throw new FqlError(`unexpected ${JSON.stringify(char)} at column ${at + 1}`);
      tokens.push({ kind: "punct", value: punct, at });
      at += punct.length;
    }
  }
  return tokens;
}

const STRING_ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r" };

function lexString(text: string, start: number, tokens: Token[]): number {
  const quote = text[start];
  let value = "";
  for (let at = start + 1; at < text.length; at += 1) {
    const char = text[at] as string;
    if (char === quote) {
      tokens.push({ kind: "string", value, at: start });
      return at + 1;
    }
    if (char === "\\") {
      at += 1;
      const escaped = text[at] ?? "";
      value += STRING_ESCAPES[escaped] ?? escaped;
    } else value += char;
  }
  throw new FqlError(`the string at column ${start + 1} is not closed`);
}

function lexNumber(text: string, start: number, tokens: Token[]): number {
  const match = /^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(start)) as RegExpExecArray;
  const end = start + match[0].length;
  if (PATH_CHAR.test(text[end] ?? "") || text[end] === ".")
    throw new FqlError(`${JSON.stringify(text.slice(start, end + 1))}… at column ${start + 1} is not a number`);
  tokens.push({ kind: "number", value: Number(match[0]), at: start });
  return end;
}

/** A dot-separated path; a character outside {a-z A-Z 0-9 _ -} is escaped with `\` (fql.md "Escaping Field Paths"). */
function lexPath(text: string, start: number, tokens: Token[]): number {
  const segments = [""];
  let at = start;
  for (; at < text.length; at += 1) {
    const char = text[at] as string;
    if (char === "\\") {
      at += 1;
      const escaped = text[at];
      if (escaped === undefined) throw new FqlError(`the path at column ${start + 1} ends in a lone "\\"`);
      // tsub finds a field by splitting its path at dots: a name holding one cannot be reached.
      if (escaped === ".") throw new FqlError(`column ${at + 1}: a field name with a dot in it cannot be matched (tsub splits paths at dots)`);
      segments[segments.length - 1] += escaped;
    } else if (char === ".") segments.push("");
    else if (PATH_CHAR.test(char)) segments[segments.length - 1] += char;
    else break;
  }
  if (segments.some((segment) => segment === "")) throw new FqlError(`the path at column ${start + 1} has an empty part`);
  tokens.push({ kind: "path", segments, at: start });
  return at;
}

const KEYWORD_VALUES: Record<string, unknown> = { true: true, false: false, null: null };

/** Precedence, loosest first: or, and, a comparison, then `!` and operands. */
class Parser {
  private next = 0;

  constructor(private readonly tokens: Token[]) {}

  expression(): FqlIr {
    return this.chain("or", () => this.chain("and", () => this.comparison()));
  }

  expectEnd(): void {
    const token = this.tokens[this.next];
    if (token !== undefined) throw new FqlError(`unexpected ${describe(token)} at column ${token.at + 1}`);
  }

  private chain(word: "and" | "or", operand: () => FqlIr): FqlIr {
    const operands = [operand()];
    while (this.takeWord(word)) operands.push(operand());
    return operands.length === 1 ? (operands[0] as FqlIr) : [word, ...operands];
  }

  private comparison(): FqlIr {
    const left = this.operand();
    const token = this.tokens[this.next];
    const operator = token?.kind === "punct" ? token.value : isWord(token, "in") ? "in" : undefined;
    if (operator === undefined || !COMPARISONS.has(operator)) return left;
    this.next += 1;
    return [operator, left, this.operand()];
  }

  private operand(): FqlIr {
    const token = this.take("an operand");
    if (token.kind === "string" || token.kind === "number") return { value: token.value };
    if (token.kind === "path") return this.pathOrCall(token);
    if (token.value === "!") return ["!", this.operand()];
    if (token.value === "(") {
      const inner = this.expression();
      this.expectPunct(")");
      return inner;
    }
    if (token.value === "[") return { value: this.list() };
    throw new FqlError(`unexpected ${describe(token)} at column ${token.at + 1}`);
  }

  private pathOrCall(token: Extract<Token, { kind: "path" }>): FqlIr {
    const name = token.segments.join(".");
    const following = this.tokens[this.next];
    if (following?.kind === "punct" && following.value === "(") return this.call(name, token.at);
    if (token.segments.length === 1 && name in KEYWORD_VALUES) return { value: KEYWORD_VALUES[name] };
    return name;
  }

  private call(name: string, at: number): FqlIr {
    const arity = FUNCTIONS[name];
    if (arity === undefined)
      throw new FqlError(`column ${at + 1}: ${name}() is not a function @segment/tsub evaluates (it has ${Object.keys(FUNCTIONS).join(", ")})`);
    this.next += 1;
    const args = this.items(")");
    if (args.length !== arity) throw new FqlError(`column ${at + 1}: ${name}() takes ${arity} argument${arity === 1 ? "" : "s"}, not ${args.length}`);
    return [name, ...args];
  }

  private list(): FqlIr[] {
    return this.items("]");
  }

  /** Comma-separated expressions up to `close` (taken). */
  private items(close: string): FqlIr[] {
    const items: FqlIr[] = [];
    if (this.takePunct(close)) return items;
    do items.push(this.expression());
    while (this.takePunct(","));
    this.expectPunct(close);
    return items;
  }

  private take(what: string): Token {
    const token = this.tokens[this.next];
    if (token === undefined) throw new FqlError(`${what} is missing at the end`);
    this.next += 1;
    return token;
  }

  private takeWord(word: string): boolean {
    if (!isWord(this.tokens[this.next], word)) return false;
    this.next += 1;
    return true;
  }

  private takePunct(value: string): boolean {
    const token = this.tokens[this.next];
    if (token?.kind !== "punct" || token.value !== value) return false;
    this.next += 1;
    return true;
  }

  private expectPunct(value: string): void {
    const token = this.take(`"${value}"`);
    if (token.kind !== "punct" || token.value !== value) throw new FqlError(`expected "${value}" at column ${token.at + 1}, found ${describe(token)}`);
  }
}

function isWord(token: Token | undefined, word: string): boolean {
  return token?.kind === "path" && token.segments.length === 1 && token.segments[0] === word;
}

function describe(token: Token): string {
  if (token.kind === "path") return JSON.stringify(token.segments.join("."));
  return JSON.stringify(token.value);
}
