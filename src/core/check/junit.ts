import type { CaseResult, CheckSummary } from "./grade.js";

/** What the report says about the run as a whole. */
export interface JunitRun {
  /** The receiver's URL as wh shows it (credentials masked). */
  url: string;
  mode: string;
  totalMs: number;
}

/**
 * The results as JUnit XML, the report CI systems read: one testsuite, one testcase per case; a
 * failed required case has a <failure> (message and text), a skipped one a <skipped>, and an
 * advisory one that failed passes with its warning in <system-out>.
 */
export function junitXml(results: readonly CaseResult[], summary: CheckSummary, run: JunitRun): string {
  const suite = attributes({
    name: `wh check ${run.url} (${run.mode})`,
    tests: results.length,
    failures: summary.failed,
    errors: 0,
    skipped: summary.skipped,
    time: seconds(run.totalMs),
  });
  const cases = results.map((result) => testcase(result, run.mode));
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n  <testsuite${suite}>\n${cases.join("")}  </testsuite>\n</testsuites>\n`;
}

function testcase(result: CaseResult, mode: string): string {
  const head = `    <testcase${attributes({ name: result.name, classname: `wh check.${mode}`, time: seconds(result.latencyMs ?? 0) })}`;
  const inner: string[] = [];
  if (result.outcome === "fail") inner.push(`<failure${attributes({ message: result.reason ?? "", type: "required" })}>${text(result.reason ?? "")}</failure>`);
  if (result.outcome === "skip") inner.push(`<skipped${attributes({ message: result.reason ?? "" })}/>`);
  const said = [result.outcome === "warn" ? `warning (advisory): ${result.reason}` : undefined, result.note].filter((line) => line !== undefined);
  if (said.length > 0) inner.push(`<system-out>${text(said.join("\n"))}</system-out>`);
  return inner.length === 0 ? `${head}/>\n` : `${head}>\n${inner.map((line) => `      ${line}\n`).join("")}    </testcase>\n`;
}

function attributes(values: Record<string, string | number>): string {
  return Object.entries(values)
    .map(([name, value]) => ` ${name}="${text(String(value)).replace(/"/g, "&quot;").replace(/\n/g, "&#10;")}"`)
    .join("");
}

/** What XML 1.0 cannot hold at all: C0 controls but tab, newline and CR; lone surrogates; U+FFFE and U+FFFF. */
const C0_BUT_WHITESPACE = "\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f";
const NOT_XML = new RegExp(`[${C0_BUT_WHITESPACE}\\ufffe\\uffff]|[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]`, "g");

/** Text for XML: & < > escaped, and what XML cannot hold written as a visible \uNNNN. */
function text(value: string): string {
  return value
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(NOT_XML, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function seconds(ms: number): string {
  return (ms / 1_000).toFixed(3);
}
