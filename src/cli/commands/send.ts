import { readTextInput } from "../../adapters/read-input.js";
import { keepWasmUnoptimized } from "../../adapters/v8-flags.js";
import { type DeliverySettings, resolveDeliverySettings, type Destination } from "../../config/resolve.js";
import type { DeliveryReport } from "../../core/deliver.js";
import { UsageError } from "../../core/errors.js";
import { isJsonObject } from "../../core/message/parse-json.js";
import type { EventFilter } from "../../core/destination/filters.js";
import { prepareMessage, type DestinationMode, type PreparedMessage } from "../../core/message/prepare.js";
import { stringFieldPaths } from "../../core/message/schema.js";
import { sampleMessage } from "../../core/samples/catalogue.js";
import { MESSAGE_TYPES, type MessageType } from "../../core/message/types.js";
import type { Deliverer } from "../../engine/deliverer.js";
import { printDryRun, renderVerboseEvent } from "../output/dry-run.js";
import type { FlagValues } from "../flags/spec.js";
import type { sendFlags } from "../flags/tables.js";
import { type CliIo, commandClock, commandStamps, type GlobalFlags } from "../wiring/io.js";
import { assignKeyValues, parseJsonObjectFlag } from "../flags/key-value.js";
import { deliveryRecord, describeTargets } from "../../core/delivery-record.js";
import { noteUnsigned, Output, renderDeliveryEvent } from "../output/render.js";
import { listenForRetryNow } from "../wiring/retry-now.js";

type SendFlags = FlagValues<typeof sendFlags>;

/**
 * The retry window of a send whose stderr is a terminal: a person typed one message and watches
 * for its answer, so a receiver that is down (not started yet, the wrong port) ends in a minute
 * with a failure they can read, not 4 h of retries. Scripts keep Segment's 4 h, as replays do;
 * --retry-window sets either.
 */
const TERMINAL_RETRY_WINDOW_MS = 60_000;

/** `wh send <type>`: one message from flags or --data, validated, signed and delivered. */
export async function runSend(typed: string | undefined, flags: SendFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  const type = messageType(typed, flags);
  const input = await buildInput(type, flags, io);
  // One moment and one messageId for the message, whichever shape each destination sends it in.
  const taken = commandStamps(io);
  const now = taken.now();
  const messageId = taken.newId();
  const stamps = { now: () => now, newId: () => messageId };
  const prepare = (mode: DestinationMode, filter?: EventFilter): PreparedMessage => {
    const prepared = prepareMessage(input, stamps, { mode, filter });
    if (!prepared.ok) throw new UsageError(`invalid ${type} message: ${prepared.error}`, { hint: "nothing was sent" });
    return prepared.message;
  };
  const message = prepare("classic");
  const output = new Output(io, globals);
  if (!message.enabled) {
    output.record({ type, messageId: message.messageId ?? null, outcome: "skipped", skip: "integrations", reason: "integrations" });
    output.result(`${output.out.yellow("skipped")} ${type}: ${message.skipReason}; nothing was sent`);
    return 0;
  }
  const retryWindow = flags.retryWindow ?? (io.stderr.isTTY === true ? TERMINAL_RETRY_WINDOW_MS : undefined);
  const settings = await resolveDeliverySettings({ ...flags, retryWindow }, io.env, io.cwd, type === "delete" ? "all-enabled" : "one", true);
  noteUnsigned(output, settings.destinations);
  const routed = settings.destinations[0]?.subscriptions;
  if (routed !== undefined) {
    const destination = settings.destinations[0] as Destination;
    // Its own file in the bundle, read only with subscriptions: a plain send starts as before.
    const { sendToSubscriptions } = await import("./send-subscriptions.js");
    const prepared = prepareMessage(input, stamps, { mode: "actions", filter: destination.filter });
    if (flags.dryRun === true)
      return sendToSubscriptions(prepared, { output, destination, subscriptions: routed, deliverer: undefined, signal: io.signal, verbose: false });
    return withDeliverer(settings, flags, io, output, (deliverer) =>
      sendToSubscriptions(prepared, { output, destination, subscriptions: routed, deliverer, signal: io.signal, verbose: flags.verbose === true }),
    );
  }
  // A delete's fan-out skips the sources in actions mode (the Actions webhook never sends delete), and a destination's filters may drop it.
  const sending = settings.destinations.filter((destination) => {
    const { enabled, skipReason, skipKind } = prepare(destination.mode, destination.filter);
    if (enabled) return true;
    output.record({ type, messageId, ...sourceField(destination), outcome: "skipped", skip: skipKind ?? null, reason: skipReason ?? null });
    output.result(
      `${output.out.yellow("skipped")} ${type}${destination.source === undefined ? "" : ` (source ${destination.source})`}: ${skipReason}; nothing was sent`,
    );
    return false;
  });
  if (flags.dryRun === true) {
    for (const destination of sending) printDryRun(output, prepare(destination.mode, destination.filter), destination, sourceField(destination));
    return 0;
  }
  if (sending.length === 0) return 0;
  return withDeliverer(settings, flags, io, output, async (deliverer) => {
    const reports = await Promise.all(
      sending.map(async (destination) => {
        const label = destination.source === undefined ? type : `${destination.source} ${type}`;
        const shaped = prepare(destination.mode, destination.filter);
        const report = await deliverer.deliver(shaped.body, destination, {
          signal: io.signal,
          onEvent: (event) => {
            if (flags.verbose === true) renderVerboseEvent(output, label, shaped.body, destination, event);
            renderDeliveryEvent(output, event, label, flags.verbose === true);
          },
        });
        printOutcome(output, shaped, destination, report);
        return report;
      }),
    );
    if (reports.some((report) => report.outcome === "aborted")) return 130;
    return reports.every((report) => report.outcome === "delivered") ? 0 : 1;
  });
}

/** Runs `use` with a deliverer for this one message (and "retry now"), closed after. */
async function withDeliverer(
  settings: DeliverySettings,
  flags: SendFlags,
  io: CliIo,
  output: Output,
  use: (deliverer: Deliverer) => Promise<number>,
): Promise<number> {
  // Loaded only to send: the deliverer brings undici's whole public entry (about 35 ms of CPU to
  // load), which a --dry-run, or a send whose filters drop the event, never uses.
  const { createDeliverer } = await import("../../engine/deliverer.js");
  // One message, then exit: not worth V8 optimizing undici's parser (and waiting for it at exit).
  keepWasmUnoptimized();
  const deliverer = await createDeliverer(settings, { env: io.env, keepEveryBody: flags.verbose === true, clock: commandClock(io) });
  const retryNow = listenForRetryNow(io, output, flags.data === "-", deliverer);
  try {
    return await use(deliverer);
  } finally {
    retryNow.stop();
    output.stopSpinner();
    await deliverer.close();
  }
}

function printOutcome(output: Output, message: PreparedMessage, destination: Destination, report: DeliveryReport): void {
  output.record({ type: message.type, messageId: message.messageId ?? null, ...sourceField(destination), ...deliveryRecord(report) });
  const c = output.out;
  const what = `${message.type}${message.messageId === undefined ? "" : ` ${message.messageId}`}${destination.source === undefined ? "" : ` (source ${destination.source})`}`;
  const tries = `${report.attempts} attempt${report.attempts === 1 ? "" : "s"}`;
  if (report.outcome === "delivered") output.result(`${c.green("✔ delivered")} ${what} to ${report.deliveredTo} (${tries})`);
  else if (report.outcome === "aborted") output.result(`${c.yellow("✖ interrupted")} ${what} before it was delivered (${tries})`);
  else output.result(`${c.red("✖ failed")} ${what}: ${describeTargets(report)}`);
}

function sourceField(destination: Destination): Record<string, unknown> {
  return destination.source === undefined ? {} : { source: destination.source };
}

/** The type to send: the argument, else --sample's (they must agree when both are given). */
function messageType(typed: string | undefined, flags: SendFlags): MessageType {
  const type = typed ?? flags.sample?.type;
  if (type === undefined)
    throw new UsageError("wh send needs a message type or --sample", { hint: `a type: ${MESSAGE_TYPES.join(", ")}; a sample: wh samples` });
  if (!(MESSAGE_TYPES as readonly string[]).includes(type)) {
    throw new UsageError(`unknown message type ${JSON.stringify(type)}`, { hint: `use one of: ${MESSAGE_TYPES.join(", ")}` });
  }
  if (flags.sample !== undefined && flags.sample.type !== type) {
    throw new UsageError(`--sample ${JSON.stringify(flags.sample.name)} is a ${flags.sample.type}, not a ${type}`, {
      hint: `wh send --sample ${JSON.stringify(flags.sample.name)}`,
    });
  }
  return type as MessageType;
}

/** The message: --sample's, then --data's fields over it, then the flags over both. */
async function buildInput(type: MessageType, flags: SendFlags, io: CliIo): Promise<Record<string, unknown>> {
  const data: Record<string, unknown> = flags.data === undefined ? {} : await readData(flags.data, io);
  const input: Record<string, unknown> = flags.sample === undefined ? data : { ...sampleMessage(flags.sample), ...data };
  if (input.type !== undefined && input.type !== type) {
    throw new UsageError(`--data has type ${JSON.stringify(input.type)} but the command sends ${type}`);
  }
  input.type = type;
  const fields: [keyof SendFlags, string][] = [
    ["userId", "userId"],
    ["anonymousId", "anonymousId"],
    ["event", "event"],
    ["name", "name"],
    ["category", "category"],
    ["groupId", "groupId"],
    ["previousId", "previousId"],
    ["messageId", "messageId"],
    ["timestamp", "timestamp"],
  ];
  for (const [flag, field] of fields) if (flags[flag] !== undefined) input[field] = flags[flag];
  for (const [flag, field, pairs] of [
    ["--prop", "properties", flags.prop],
    ["--trait", "traits", flags.trait],
    ["--context", "context", flags.context],
  ] as const) {
    if (pairs !== undefined && pairs.length > 0) input[field] = assignKeyValues(flag, pairs, objectField(input, field), stringFieldPaths(type, field));
  }
  if (flags.integrations !== undefined) input.integrations = parseJsonObjectFlag("--integrations", flags.integrations);
  return input;
}

function objectField(input: Record<string, unknown>, field: string): Record<string, unknown> {
  const value = input[field];
  return isJsonObject(value) ? { ...value } : {};
}

async function readData(data: string, io: CliIo): Promise<Record<string, unknown>> {
  const text = data === "-" || data.startsWith("@") ? await readTextInput(data === "-" ? "-" : data.slice(1), io, "--data") : data;
  return parseJsonObjectFlag("--data", text);
}
