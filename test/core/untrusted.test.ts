import { Chalk } from "chalk";
import { describe, expect, it } from "vitest";
import { describeOutcome } from "../../src/core/deliver.js";
import { jsonLine, neutralize, untrusted } from "../../src/core/untrusted.js";

const ESC = "\u001b";
const BEL = "\u0007";
const CSI = "\u009b";
const OSC = "\u009d";
const NEL = "\u0085";
/** What a terminal acts on: C0 controls but newline's own escape, DEL, C1 controls, bidi controls. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what this test looks for.
const ACTIVE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;

describe("neutralize", () => {
  it.each([
    ["ESC", ESC, "\\x1b"],
    ["BEL", BEL, "\\x07"],
    ["CR", "\r", "\\r"],
    ["LF", "\n", "\\n"],
    ["NUL", "\u0000", "\\x00"],
    ["DEL", "\u007f", "\\x7f"],
  ])("shows the C0 control %s as an escape", (_name, char, shown) => {
    expect(neutralize(`a${char}b`)).toBe(`a${shown}b`);
  });

  it.each([
    ["U+0080 (the first C1 control)", "\u0080", "\\x80"],
    ["U+0085 NEL", NEL, "\\x85"],
    ["U+009B CSI", CSI, "\\x9b"],
    ["U+009D OSC", OSC, "\\x9d"],
    ["U+009F (the last C1 control)", "\u009f", "\\x9f"],
  ])("shows the C1 control %s as an escape", (_name, char, shown) => {
    expect(neutralize(`a${char}b`)).toBe(`a${shown}b`);
  });

  it.each([
    ["U+202A LRE", "\u202a"],
    ["U+202E RLO", "\u202e"],
    ["U+2066 LRI", "\u2066"],
    ["U+2067 RLI", "\u2067"],
    ["U+2068 FSI", "\u2068"],
    ["U+2069 PDI", "\u2069"],
    ["U+200E LRM", "\u200e"],
    ["U+200F RLM", "\u200f"],
    ["U+061C ALM", "\u061c"],
    ["U+2028 LINE SEPARATOR", "\u2028"],
  ])("shows the bidi or line control %s as \\u escape", (_name, char) => {
    expect(neutralize(`a${char}b`)).toBe(`a\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}b`);
  });

  it("defuses an OSC title sequence, a clear screen and an 8-bit CSI, keeping their text visible", () => {
    const attack = `${ESC}]0;pwned${BEL}${ESC}[2J${CSI}31mred${OSC}8;;http://x${ESC}\\`;
    const shown = neutralize(attack);
    expect(shown).toBe("\\x1b]0;pwned\\x07\\x1b[2J\\x9b31mred\\x9d8;;http://x\\x1b\\");
    expect(shown).not.toMatch(ACTIVE);
  });

  it("leaves printable text alone, accents, emoji and right-to-left letters included", () => {
    const text = 'Zoë 😀 שלום track "Order" \\ tab-less';
    expect(neutralize(text)).toBe(text);
  });

  it("neutralises every code point of the C1 range (U+0080 to U+009F)", () => {
    for (let code = 0x80; code <= 0x9f; code += 1) expect(neutralize(String.fromCharCode(code))).toBe(`\\x${code.toString(16)}`);
  });
});

describe("untrusted", () => {
  const attack = `u1${ESC}]0;pwned${BEL}${CSI}2J`;

  it("prints only its neutralised form, in a template, String(), concatenation and join", () => {
    const text = untrusted(attack);
    const shown = "u1\\x1b]0;pwned\\x07\\x9b2J";
    expect(`${text}`).toBe(shown);
    expect(String(text)).toBe(shown);
    expect(`${text}`).toBe(shown);
    expect([text].join(" ")).toBe(shown);
  });

  it("gives the raw text only through unsafeRaw()", () => {
    expect(untrusted(attack).unsafeRaw()).toBe(attack);
  });

  it("cannot reach the terminal raw through chalk, with colours on or off", () => {
    for (const level of [0, 1, 3] as const) {
      const painted = new Chalk({ level }).red(untrusted(attack));
      // Only chalk's own colour codes (ESC [ n m) remain.
      // biome-ignore lint/suspicious/noControlCharactersInRegex: strips the colour escapes the test painted.
      expect(painted.replace(/\u001b\[\d+m/g, "")).toBe("u1\\x1b]0;pwned\\x07\\x9b2J");
    }
  });

  it("serialises to its exact text in JSON, which jsonLine keeps exact and inert", () => {
    const record = { userId: untrusted(attack), note: `${NEL}\u202e` };
    const line = jsonLine(record);
    expect(line).not.toMatch(ACTIVE);
    expect(JSON.parse(line)).toEqual({ userId: attack, note: `${NEL}\u202e` });
  });
});

describe("jsonLine", () => {
  it("escapes C1 and bidi controls that JSON.stringify leaves raw, and is the same JSON value", () => {
    const value = { text: `${CSI}2J${OSC}0;t${BEL}\u2066x\u2069\u2028`, list: [`${ESC}[31m`] };
    expect(JSON.stringify(value)).toMatch(/[\u009b\u009d\u2066]/);
    const line = jsonLine(value);
    expect(line).not.toMatch(ACTIVE);
    expect(JSON.parse(line)).toEqual(value);
  });
});

describe("describeOutcome", () => {
  it("neutralises what the server said: its body, its Location and an error quoting it", () => {
    const said = `no${ESC}]0;t${BEL}${CSI}2J`;
    const described = [
      describeOutcome({ kind: "response", status: 404, body: said }),
      describeOutcome({ kind: "response", status: 301, location: said }),
      describeOutcome({ kind: "error", code: "tls", message: `certificate names ${said}` }),
    ];
    for (const line of described) {
      expect(line).not.toMatch(ACTIVE);
      expect(line).toContain("no\\x1b]0;t\\x07\\x9b2J");
    }
  });
});
