import { loadConfig } from "../../config/load.js";
import { compileWithEngines, resolveDeliverySettings } from "../../config/resolve.js";
import { formatDurationMs } from "../../core/duration.js";
import { UsageError } from "../../core/errors.js";
import { MASK, redactHeaderValue, redactUrl } from "../../core/redact.js";
import type { FlagValues } from "../flags/spec.js";
import type { configShowFlags, configValidateFlags } from "../flags/tables.js";
import type { CliIo, GlobalFlags } from "../wiring/io.js";
import { Output } from "../output/render.js";

/** `wh config show`: the settings in effect, after flags, environment and file; secrets masked. */
export async function runConfigShow(flags: FlagValues<typeof configShowFlags>, globals: GlobalFlags, io: CliIo): Promise<number> {
  const settings = await resolveDeliverySettings(flags, io.env, io.cwd, "all", true);
  const output = new Output(io, globals);
  const destinations = settings.destinations.map((destination) => ({
    ...(destination.source === undefined ? {} : { source: destination.source, enabled: destination.enabled }),
    webhooks: destination.targets.map((target) => ({
      url: redactUrl(target.url),
      headers: Object.fromEntries(Object.entries(target.headers).map(([name, value]) => [name, redactHeaderValue(name, value)])),
    })),
    ...(destination.subscriptions === undefined
      ? {}
      : {
          subscriptions: destination.subscriptions.subscriptions.map(({ name, enabled, trigger, batchSize }) => ({
            name,
            enabled,
            trigger,
            batchSize: batchSize ?? null,
          })),
        }),
    sharedSecret: destination.sharedSecret === undefined ? null : MASK,
    sharedSecretFrom: destination.secretOrigin ?? null,
    scheme: destination.scheme,
    mode: destination.mode,
    method: destination.method,
    batchSize: destination.batchSize,
    timeoutMs: destination.timeoutMs,
  }));
  output.record({
    configFile: settings.configPath ?? null,
    destinations,
    timeoutMs: settings.timeoutMs,
    retryWindowMs: settings.retryWindowMs,
    ca: settings.caFiles,
  });
  if (output.json) return 0;
  const lines = [`config file: ${settings.configPath ?? "(none found)"}`];
  for (const destination of destinations) {
    if (destination.source !== undefined) lines.push(`source ${destination.source}${destination.enabled ? "" : " (disabled)"}:`);
    for (const hook of destination.webhooks) {
      lines.push(`  webhook ${hook.url}`);
      for (const [name, value] of Object.entries(hook.headers)) lines.push(`    ${name}: ${value}`);
    }
    for (const each of destination.subscriptions ?? []) {
      const how = `${each.enabled ? "" : ", disabled"}${each.batchSize === null ? "" : `, batches of up to ${each.batchSize}`}`;
      lines.push(`  subscription ${JSON.stringify(each.name)}: ${each.trigger}${how === "" ? "" : ` (${how.slice(2)})`}`);
    }
    lines.push(
      `  shared secret: ${destination.sharedSecret === null ? "(none: requests are not signed)" : `${MASK} (from ${destination.sharedSecretFrom}, ${destination.scheme} scheme)`}`,
    );
    lines.push(
      `  ${destination.mode} mode: ${destination.method}${destination.batchSize > 1 ? `, batches of up to ${destination.batchSize}` : ", one event per request"}`,
    );
    // Actions mode waits as Segment's Actions destinations do, unless --timeout says otherwise.
    if (destination.timeoutMs !== settings.timeoutMs) lines.push(`  timeout: ${formatDurationMs(destination.timeoutMs)} (actions mode)`);
  }
  lines.push(`timeout: ${formatDurationMs(settings.timeoutMs)}`, `retry window: ${formatDurationMs(settings.retryWindowMs)}`);
  if (settings.caFiles.length > 0) lines.push(`extra CA files: ${settings.caFiles.join(", ")}`);
  output.result(lines.join("\n"));
  return 0;
}

/** `wh config validate`: exit 0 when the config file is valid, 2 with every problem when not. */
export async function runConfigValidate(flags: FlagValues<typeof configValidateFlags>, globals: GlobalFlags, io: CliIo): Promise<number> {
  const { config, filepath } = await loadConfig(io.cwd, flags.config);
  if (filepath === undefined)
    throw new UsageError("no config file found", { hint: "create .whrc.json (or another name listed in wh config --help), or pass --config FILE" });
  // Triggers and mappings are checked by Segment's own engines, loaded only for a config with subscriptions.
  if (config.subscriptions !== undefined) await compileWithEngines(config.subscriptions, filepath);
  const output = new Output(io, globals);
  output.record({ valid: true, configFile: filepath });
  output.result(`valid: ${filepath}`);
  return 0;
}
