/** String tokens (skipped: digits in them are text) and number tokens of a JSON text. */
const TOKENS = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/**
 * What any number worth checking looks like where a value starts (after `:`, `,` or `[`): an
 * exponent, or 16 digits and more. Most lines have none, and this test costs a third of the
 * token scan (replay runs it on every line); it may match inside a string, which only means a scan.
 */
const CANDIDATE = /[:,[]\s*-?(?:\d[\d.]*[eE]|[\d.]{16})/;

/**
 * Why a JSON text cannot be sent as written, or undefined: a number that JSON.parse cannot hold
 * exactly would be re-serialised as another (12345678901234567890 as 12345678901234567000, 1e400
 * as null), signed and sent without a word. Only the value counts, not the spelling: `1.10`,
 * `1e3` and `-0` are kept as `1.1`, `1000` and `0`. Call it on text JSON.parse accepted.
 */
export function inexactNumberProblem(json: string): string | undefined {
  if (!CANDIDATE.test(json)) return undefined;
  TOKENS.lastIndex = 0;
  for (let match = TOKENS.exec(json); match !== null; match = TOKENS.exec(json)) {
    const token = match[0];
    // A string, or a number of at most 15 digits without an exponent: a double holds it exactly.
    if (token.charCodeAt(0) === 0x22 || (token.length <= 15 && !/[eE]/.test(token))) continue;
    const sent = JSON.stringify(Number(token));
    if (sent === "null" || decimalValue(sent) !== decimalValue(token)) {
      return `the number ${token.length > 40 ? `${token.slice(0, 40)}…` : token} cannot be sent exactly (it would become ${sent}); send it as a string`;
    }
  }
  return undefined;
}

/** A JSON number's value in one spelling (`-12345e-2`): its digits without leading or trailing zeros, and the exponent. */
function decimalValue(number: string): string {
  const [, sign, whole, fraction = "", exponent = "0"] = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(number) ?? [];
  const digits = `${whole}${fraction}`.replace(/^0+/, "");
  const significant = digits.replace(/0+$/, "");
  if (significant === "") return "0";
  return `${sign}${significant}e${Number(exponent) - fraction.length + (digits.length - significant.length)}`;
}
