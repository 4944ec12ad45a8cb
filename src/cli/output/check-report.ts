import type { BuiltCase } from "../../core/check/cases.js";
import type { CaseResult, CheckSummary } from "../../core/check/grade.js";
import { formatDurationMs } from "../../core/duration.js";
import type { Output } from "./render.js";

/** How `wh check` shows its cases: a table on a terminal, records with --json. */

const NAME_WIDTH = 24;

/** One row of the table as soon as the case is graded, with its reason and note below it. */
export function renderCaseResult(output: Output, result: CaseResult): void {
  const { name, ...fields } = result;
  output.record({ case: name, ...fields });
  const c = output.out;
  const mark =
    result.outcome === "pass"
      ? c.green("✔ pass")
      : result.outcome === "fail"
        ? c.red("✖ FAIL")
        : result.outcome === "warn"
          ? c.yellow("! warn")
          : c.dim("- skip");
  const status = result.status === undefined ? "" : `HTTP ${result.status}`;
  const timing = result.p99Ms !== undefined ? `p50 ${formatDurationMs(result.p50Ms ?? 0)}, p99 ${formatDurationMs(result.p99Ms)}` : latency(result);
  const advisory = result.required ? "" : c.dim(" (advisory)");
  output.result(`${mark}  ${name.padEnd(NAME_WIDTH)} ${status.padEnd(9)} ${timing}${advisory}`.trimEnd());
  if (result.reason !== undefined) output.result(`        ${result.outcome === "skip" ? c.dim(result.reason) : result.reason}`);
  if (result.note !== undefined) output.result(`        ${c.cyan("note:")} ${result.note}`);
}

function latency(result: CaseResult): string {
  return result.latencyMs === undefined ? "" : formatDurationMs(result.latencyMs);
}

/** The summary line (and record): what passed, what failed, and the exit code it comes to. */
export function renderSummary(output: Output, summary: CheckSummary, total: number): void {
  output.record({ summary: true, cases: total, ...summary });
  const c = output.out;
  const parts = [
    c.green(`${summary.passed} passed`),
    summary.failed > 0 ? c.red(`${summary.failed} failed`) : `${summary.failed} failed`,
    ...(summary.warned > 0 ? [c.yellow(`${summary.warned} advisory warning${summary.warned === 1 ? "" : "s"}`)] : []),
    ...(summary.skipped > 0 ? [`${summary.skipped} skipped`] : []),
  ];
  output.result(`\n${total} case${total === 1 ? "" : "s"}: ${parts.join(", ")}`);
  output.result(summary.failed > 0 ? c.red("✖ your receiver is not ready for Segment's Webhooks destination") : c.green("✔ every required case passed"));
}

/** --dry-run: each case with the exact bytes and headers of its requests; nothing is sent. */
export function renderDryRun(output: Output, cases: readonly BuiltCase[], url: string): void {
  for (const built of cases) {
    const { definition } = built;
    if (built.skip !== undefined) {
      output.record({ dryRun: true, case: definition.name, skipped: built.skip });
      output.result(`# ${definition.name}: skipped: ${built.skip}\n`);
      continue;
    }
    const kind = definition.required ? "required" : "advisory";
    output.result(`# ${definition.name} (${kind}): ${definition.sends}; passes: ${definition.passes}`);
    const requests = [
      ...built.requests.map((request) => ({ request, probe: false })),
      ...(built.probe === undefined ? [] : [{ request: built.probe.request, probe: true }]),
    ];
    for (const [index, { request, probe }] of requests.entries()) {
      output.record({
        dryRun: true,
        case: definition.name,
        request: index + 1,
        ...(probe ? { probe: true } : {}),
        url,
        ...request,
        method: request.method ?? "POST",
      });
      if (probe) output.result(`(sent only when the exact bytes above are refused with a 4xx: ${built.probe?.sends})`);
      const headers = Object.entries(request.headers).map(([name, value]) => `${name}: ${value}`);
      output.result(`${request.method ?? "POST"} ${url}\n${headers.join("\n")}\n\n${request.body}\n`);
    }
  }
}
