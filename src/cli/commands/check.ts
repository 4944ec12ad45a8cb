import { resolve } from "node:path";
import { readCaFiles } from "../../adapters/read-ca.js";
import { describeOutputError } from "../../adapters/output-file.js";
import { openReplacedFile, type ReplacedFile } from "../../adapters/replaced-file.js";
import { createUndiciTransport } from "../../adapters/undici-transport.js";
import { loadConfig } from "../../config/load.js";
import { readSubscriptions } from "../../config/resolve.js";
import { secretFromFlagsOrEnv } from "../../config/secret.js";
import { routeCases } from "../../core/check/subscription-cases.js";
import type { SubscriptionSet } from "../../core/destination/subscriptions.js";
import { type CaseName, CASE_NAMES } from "../../core/check/case-names.js";
import { buildCases } from "../../core/check/cases.js";
import { summarize } from "../../core/check/grade.js";
import { junitXml } from "../../core/check/junit.js";
import { destinationTimeoutMs } from "../../core/deliver.js";
import type { SigningScheme } from "../../core/standard-webhooks.js";
import { OutputWriteError, UsageError } from "../../core/errors.js";
import { redactUrl, redactUrlText } from "../../core/redact.js";
import { runCheck as sendCases } from "../../engine/check/run-check.js";
import { destinationUserAgent } from "../../version.js";
import { renderCaseResult, renderDryRun, renderSummary } from "../output/check-report.js";
import type { checkFlags } from "../flags/check-tables.js";
import type { FlagValues } from "../flags/spec.js";
import { type CliIo, commandStamps, type GlobalFlags } from "../wiring/io.js";
import { Output } from "../output/render.js";

type CheckFlags = FlagValues<typeof checkFlags>;

/** The Actions batch, unless --batch-size says otherwise. */
const DEFAULT_BATCH_SIZE = 3;

/**
 * `wh check URL`: sends the battery of cases to the user's own receiver, one attempt each, and
 * grades the answers against what Segment's Webhooks destination requires. Exit 0 when every
 * required case passed, 1 when one failed, 2 on bad usage (nothing sent), 130 when interrupted.
 */
export async function runCheck(urlText: string, flags: CheckFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  const url = receiverUrl(urlText);
  const { routed, configSecret } = await checkSubscriptions(flags, io.cwd);
  const mode = routed === undefined ? (flags.mode ?? "classic") : "actions";
  if (flags.batchSize !== undefined && mode !== "actions") throw new UsageError("--batch-size: only the Actions destination sends batches: add --mode actions");
  const names = chosenCases(flags.only?.flat(), flags.skip?.flat(), flags.scheme ?? "segment");
  const secret = (await secretFromFlagsOrEnv(flags, io.env, io.cwd))?.value ?? configSecret;
  const ca = flags.ca === undefined ? undefined : await readCaFiles(flags.ca, io.cwd);
  const stamps = commandStamps(io);
  const settings = {
    mode,
    scheme: flags.scheme ?? "segment",
    secret,
    nowMs: stamps.now().getTime(),
    userAgent: destinationUserAgent(mode),
    batchSize: flags.batchSize ?? DEFAULT_BATCH_SIZE,
    concurrency: flags.concurrency,
    stamps,
  };
  const built = buildCases(names, settings);
  const cases = routed === undefined ? built : await routeCases(built, settings, routed);
  const output = new Output(io, globals);
  const shown = redactUrl(url);
  if (flags.dryRun === true) {
    renderDryRun(output, cases, shown);
    return 0;
  }
  const junitPath = flags.junit === undefined ? undefined : resolve(io.cwd, flags.junit);
  const junit = junitPath === undefined ? undefined : openReplacedFile(junitPath, "--junit");
  if (secret === undefined) {
    output.log(
      output.err.yellow("note: no shared secret: requests are sent unsigned and the signature cases are skipped (--secret-file, --secret or WH_SHARED_SECRET)"),
    );
  }
  const timeoutMs = io.timings?.checkTimeoutMs ?? destinationTimeoutMs(mode);
  // Every answer's start is kept: what a receiver said when it accepted a bad signature is worth showing.
  const transport = createUndiciTransport({ ca, env: io.env, connectTimeoutMs: timeoutMs, keepEveryBody: true });
  try {
    const by = routed === undefined ? "" : `, as subscriptions ${routed.subscriptions.map((each) => JSON.stringify(each.name)).join(", ")} map the events`;
    output.result(`wh check ${shown} (${mode} mode${by})\n`);
    const startedAt = performance.now();
    const results = await sendCases(cases, {
      url,
      transport,
      timeoutMs,
      concurrency: settings.concurrency,
      signal: io.signal,
      onResult: (result) => renderCaseResult(output, result),
    });
    if (io.signal.aborted) {
      output.warn(`interrupted after ${results.length} of ${cases.length} cases${junit === undefined ? "" : `; ${flags.junit} was not written`}`);
      return 130;
    }
    const summary = summarize(results);
    renderSummary(output, summary, results.length);
    if (junit !== undefined && junitPath !== undefined)
      writeJunit(junit, junitPath, junitXml(results, summary, { url: shown, mode, totalMs: performance.now() - startedAt }));
    return summary.exitCode;
  } finally {
    junit?.discard();
    await transport.close();
  }
}

/**
 * The subscriptions of --subscriptions FILE or the config, if any, and then the config's
 * sharedSecret, which is theirs (as wh send and wh replay take it).
 */
async function checkSubscriptions(flags: CheckFlags, cwd: string): Promise<{ routed: SubscriptionSet | undefined; configSecret: string | undefined }> {
  const { config } = await loadConfig(cwd, flags.config);
  const routed = await readSubscriptions(flags, config, cwd, true);
  if (routed === undefined) return { routed, configSecret: undefined };
  if (flags.mode === "classic")
    throw new UsageError("--mode classic cannot be used with subscriptions: they are a Webhooks (Actions) destination's", {
      hint: "leave --mode out, or use a config without subscriptions (--config FILE)",
    });
  return { routed, configSecret: config.sharedSecret };
}

/** The receiver's URL: an absolute http or https URL, without credentials (wh check sends none). */
function receiverUrl(text: string): URL {
  const shown = JSON.stringify(redactUrlText(text));
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`${shown} is not an absolute URL`, { hint: "give the receiver's whole URL, such as http://127.0.0.1:3000/hook" });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`${shown} is not an http or https URL`);
  if (url.username !== "" || url.password !== "") throw new UsageError(`${shown}: wh check sends no credentials; give the URL without user:password@`);
  return url;
}

/**
 * The cases --only and --skip leave, in their order; none left is a usage error. A replay is
 * only a case for Standard Webhooks (X-Signature has no timestamp): Segment's scheme runs it only
 * when asked for (--only), to say why it is skipped.
 */
function chosenCases(only: readonly CaseName[] | undefined, skip: readonly CaseName[] | undefined, scheme: SigningScheme): Set<CaseName> {
  const names = new Set<CaseName>(only ?? CASE_NAMES.filter((name) => scheme === "standard" || name !== "signature-replayed"));
  for (const name of skip ?? []) names.delete(name);
  if (names.size === 0) throw new UsageError("--only and --skip leave no case to run");
  return names;
}

function writeJunit(junit: ReplacedFile, path: string, xml: string): void {
  try {
    junit.replace(xml);
  } catch (error) {
    throw new OutputWriteError(`could not write the JUnit report ${path}: ${describeOutputError(error, path)}`, { cause: error });
  }
}
