import { resolve } from "node:path";
import { openInputStream } from "../../adapters/read-input.js";
import { loadSyncState, openSyncStateWriter, type SyncKind, type SyncStateWriter } from "../../adapters/sync-state.js";
import { readUserTable } from "../../adapters/user-table-reader.js";
import { resolveDeliverySettings, type DeliverySettings, type Destination } from "../../config/resolve.js";
import { diffMembership, diffTraitValues, toTraitName, type TraitChange } from "../../core/audience.js";
import { InputError, UsageError } from "../../core/errors.js";
import { type MessageStamps, prepareMessage, type PrepareOptions } from "../../core/message/prepare.js";
import { neutralize } from "../../core/untrusted.js";
import { createDeliverer } from "../../engine/deliverer.js";
import { runDeliveries, type RunSummary } from "../../engine/run-deliveries.js";
import { routeJobs } from "../../engine/routed-run.js";
import { runExitCode } from "../../engine/run-outcome.js";
import type { DeliveryJob } from "../../engine/delivery-job.js";
import type { FlagValues } from "../flags/spec.js";
import type { audienceSyncFlags, traitsSyncFlags } from "../flags/tables.js";
import { type CliIo, commandClock, commandStamps, type GlobalFlags } from "../wiring/io.js";
import { noteUnsigned, Output } from "../output/render.js";
import { listenForRetryNow } from "../wiring/retry-now.js";
import { printRunSummary, renderRun, warnFailureStop } from "../output/run-report.js";

type SyncFlags = FlagValues<typeof audienceSyncFlags> | FlagValues<typeof traitsSyncFlags>;

/** `wh audience sync NAME --members FILE --state FILE`: identify `{ trait: true|false }` for each change. */
export async function runAudienceSync(name: string, flags: FlagValues<typeof audienceSyncFlags>, globals: GlobalFlags, io: CliIo): Promise<number> {
  if (flags.members === undefined) throw new UsageError("--members FILE is required");
  const members = await readUsers(flags.members, io, false);
  return runSync("audience", name, flags, globals, io, (known) => diffMembership(new Set(members.keys()), new Set(known.keys())));
}

/** `wh traits sync NAME --values FILE`: identify `{ trait: value }` for users whose value changed. */
export async function runTraitsSync(name: string, flags: FlagValues<typeof traitsSyncFlags>, globals: GlobalFlags, io: CliIo): Promise<number> {
  if (flags.values === undefined) throw new UsageError("--values FILE is required");
  const values = await readUsers(flags.values, io, true);
  return runSync("trait", name, flags, globals, io, (known) => diffTraitValues(values, known));
}

async function runSync(
  kind: SyncKind,
  name: string,
  flags: SyncFlags,
  globals: GlobalFlags,
  io: CliIo,
  diff: (known: ReadonlyMap<string, unknown>) => TraitChange[],
): Promise<number> {
  const trait = toTraitName(name);
  if (trait === "") throw new UsageError(`${JSON.stringify(name)} has no letters or digits to make a trait name of`);
  const { concurrency, rate: ratePerSecond } = flags;
  const statePath = resolve(io.cwd, flags.state ?? `${trait}.wh-state.json`);
  const settings = await resolveDeliverySettings(flags, io.env, io.cwd, "one", true);
  const destination = settings.destinations[0];
  if (destination === undefined) throw new UsageError("no webhook URL to deliver to");
  const dryRun = flags.dryRun === true;
  const readsStdin = ("members" in flags ? flags.members : "values" in flags ? flags.values : undefined) === "-";
  // Taken (and checked writable) before the state is read and before anything is sent.
  const writer = dryRun ? undefined : openSyncStateWriter(statePath);
  try {
    return await syncChanges(
      {
        kind,
        name,
        trait,
        statePath,
        concurrency,
        ratePerSecond,
        maxFailures: flags.maxFailures,
        dryRun,
        verbose: flags.verbose === true,
        writer,
        settings,
        destination,
        readsStdin,
      },
      globals,
      io,
      diff,
    );
  } finally {
    writer?.close();
  }
}

interface SyncPlan {
  kind: SyncKind;
  name: string;
  trait: string;
  statePath: string;
  concurrency: number;
  ratePerSecond: number | undefined;
  maxFailures: number;
  dryRun: boolean;
  verbose: boolean;
  writer: SyncStateWriter | undefined;
  settings: DeliverySettings;
  destination: Destination;
  /** The members or values came from standard input: no keys are read from it. */
  readsStdin: boolean;
}

async function syncChanges(plan: SyncPlan, globals: GlobalFlags, io: CliIo, diff: (known: ReadonlyMap<string, unknown>) => TraitChange[]): Promise<number> {
  const { kind, name, trait, statePath, destination } = plan;
  const state = await loadSyncState(statePath, kind, name, trait);
  const changes = diff(state.values);
  const output = new Output(io, globals);
  noteUnsigned(output, [destination]);
  output.log(
    `${kind} ${JSON.stringify(name)} → trait ${trait}: ${changes.length} change${changes.length === 1 ? "" : "s"} to send (${state.values.size} known before)`,
  );
  const deliverer = plan.dryRun ? undefined : await createDeliverer(plan.settings, { env: io.env, keepEveryBody: plan.verbose, clock: commandClock(io) });
  const byNumber = (job: DeliveryJob): TraitChange => changes[job.number - 1] as TraitChange;
  const retryNow = listenForRetryNow(io, output, plan.readsStdin, deliverer);
  let summary: RunSummary | undefined;
  try {
    const jobs = changeJobs(changes, trait, { mode: destination.mode, filter: destination.filter }, commandStamps(io));
    // With subscriptions, each identify goes to those whose trigger matches it, as each maps it.
    const routed = destination.subscriptions;
    summary = await runDeliveries(routed === undefined ? jobs : routeJobs(jobs, routed), {
      ...renderRun(
        output,
        destination,
        (job, outcome) => {
          if (outcome !== "delivered") return;
          const change = byNumber(job);
          if (change.change === "left") state.values.delete(change.userId);
          else state.values.set(change.userId, change.value);
        },
        plan.verbose,
      ),
      sender: deliverer?.to(destination),
      concurrency: plan.concurrency,
      total: changes.length,
      ordered: false,
      ratePerSecond: plan.ratePerSecond,
      maxFailures: plan.maxFailures,
      journal: undefined,
      deadLetter: undefined,
      signal: io.signal,
      graceMs: io.timings?.graceMs,
    });
  } finally {
    retryNow.stop();
    await deliverer?.close();
    // Only delivered changes were applied: what failed or was not reached is sent next time.
    plan.writer?.save(state);
  }
  const interrupted = io.signal.aborted;
  const lines = plan.dryRun ? [] : [`state: ${statePath} (${state.values.size} ${kind === "audience" ? "members" : "values"} delivered so far)`];
  if (summary.failed > 0 || interrupted) lines.push("what was not delivered is sent again by the next sync");
  printRunSummary(output, summary, { trait, state: plan.dryRun ? null : statePath, interrupted }, lines);
  const stop = summary.stoppedByFailures;
  if (stop !== undefined && !interrupted)
    warnFailureStop(
      output,
      stop,
      stop.outcome === "invalid"
        ? "fix the input and run the sync again"
        : stop.wrongPath
          ? "check the URL's path, then run the sync again with the right --url"
          : "once the receiver answers, run the sync again",
    );
  return runExitCode(summary, interrupted);
}

/** The identifies to send, prepared a thousand at a time as the runner asks for them. */
async function* changeJobs(changes: TraitChange[], trait: string, options: PrepareOptions, stamps: MessageStamps): AsyncGenerator<DeliveryJob[]> {
  for (let start = 0; start < changes.length; start += 1_000) {
    yield changes.slice(start, start + 1_000).map((change, offset) => {
      const input = { type: "identify", userId: change.userId, traits: { [trait]: change.value } };
      return {
        number: start + offset + 1,
        original: JSON.stringify(input),
        prepared: prepareMessage(input, stamps, options),
        label: userLabel(change.userId),
        origin: { userId: change.userId, change: change.change, value: change.value },
      };
    });
  }
}

/** A user in log lines: at most 80 characters of the id, neutralised (a file's text may hold escape sequences and line breaks). */
function userLabel(userId: string): string {
  return `user ${neutralize(userId.length > 80 ? `${userId.slice(0, 80)}… (${userId.length} characters)` : userId)}`;
}

/** Reads a members or values file to its end (a bad line stops the sync before anything is sent). */
async function readUsers(file: string, io: CliIo, wantValue: boolean): Promise<Map<string, unknown>> {
  const rows = new Map<string, unknown>();
  for await (const { line, result } of readUserTable(await openInputStream(file, io.cwd, io), { wantValue, csv: /\.csv$/i.test(file) })) {
    if (!result.ok) throw new InputError(`${file} line ${line}: ${result.error}`, { hint: "nothing was sent" });
    rows.set(result.row.userId, result.row.value);
  }
  return rows;
}
