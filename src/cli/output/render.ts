import { stripVTControlCharacters } from "node:util";
import { Chalk, type ChalkInstance } from "chalk";
import { userOf } from "../../core/shard.js";
import type { Ora } from "ora";
import type { DeliveryEvent } from "../../core/deliver.js";
import { describeOutcome } from "../../core/deliver.js";
import { classifyOutcome } from "../../core/retry-policy.js";
import { clockTime, formatDurationMs } from "../../core/duration.js";
import type { Destination } from "../../config/resolve.js";
import { jsonLine, untrusted, type Untrusted } from "../../core/untrusted.js";
import type { CliIo, CliTimings, GlobalFlags } from "../wiring/io.js";

/**
 * Where output goes. Results: stdout (human lines, or one JSON object per line with --json).
 * Progress and logs: stderr, silenced by --quiet. Spinners: only on a TTY. Text from the
 * network reaches these lines as Untrusted (see core/untrusted), neutralised wherever it is put.
 */
export class Output {
  readonly json: boolean;
  readonly quiet: boolean;
  readonly out: ChalkInstance;
  readonly err: ChalkInstance;
  readonly interactive: boolean;
  /** The io's timings (tests shorten them); each absent one is its default where it is used. */
  readonly timings: Partial<CliTimings>;
  /** Whether the r key retries now (a command reading keys on a terminal): the hints say so. */
  retryKey = false;
  private spinner: Ora | undefined;
  private spinnerLoading: Promise<void> | undefined;
  private spinnerWanted = false;
  private spinnerText = "";
  /** The live line (logLive) that is the last line on stderr, if one is. */
  private lastLive: object | undefined;

  constructor(
    private readonly io: CliIo,
    flags: GlobalFlags,
  ) {
    this.json = flags.json === true;
    this.quiet = flags.quiet === true;
    this.timings = io.timings ?? {};
    this.out = new Chalk({ level: colorsOn(io.stdout, io.env, flags) ? 1 : 0 });
    this.err = new Chalk({ level: colorsOn(io.stderr, io.env, flags) ? 1 : 0 });
    // A terminal of no width (a pseudo-terminal nobody sized) cannot show a spinner: ora would
    // divide by its zero columns and clear lines forever.
    const columns = (io.stderr as { columns?: number }).columns;
    this.interactive = io.stderr.isTTY === true && !this.quiet && io.env.CI === undefined && columns !== 0;
  }

  /** What a person at the terminal may press, for a hint: `stop` ("Ctrl-C stops"), and r while it retries now. */
  keyHints(stop = "Ctrl-C stops"): string {
    return this.retryKey ? `${stop}; r retries now` : stop;
  }

  /** A human result line on stdout; nothing with --json. */
  result(line: string | Untrusted): void {
    if (!this.json) this.io.stdout.write(`${line}\n`);
  }

  /** One JSON record on stdout, with --json only: exact values, nothing a terminal acts on. */
  record(value: Record<string, unknown>): void {
    if (this.json) this.io.stdout.write(`${jsonLine(value)}\n`);
  }

  /** A progress or log line on stderr; nothing with --quiet. */
  log(line: string | Untrusted): void {
    if (this.quiet) return;
    this.withSpinnerPaused(() => this.io.stderr.write(`${line}\n`));
  }

  /** A line on stderr that --quiet does not silence: what the user must know to go on (how to resume). */
  warn(line: string | Untrusted): void {
    this.withSpinnerPaused(() => this.io.stderr.write(`${line}\n`));
  }

  /**
   * A log line that can be rewritten (a count that grows): returns what rewrites it. On a terminal
   * the line is rewritten in place while it is still the last line on stderr (cut to the
   * terminal's width, so that it is one row); off one, or once another line followed it, each
   * rewrite is a line of its own.
   */
  logLive(line: string): (line: string) => void {
    const live = {};
    const show = (text: string): void => {
      if (this.quiet) return;
      const rewrite = this.interactive && this.lastLive === live;
      const shown = rewrite ? oneRow(text, (this.io.stderr as { columns?: number }).columns) : text;
      this.withSpinnerPaused(() => this.io.stderr.write(`${rewrite ? "\u001b[1A\r\u001b[2K" : ""}${shown}\n`));
      this.lastLive = live;
    };
    show(line);
    return show;
  }

  /** Shows a spinner on stderr (TTY only) until stopSpinner(). There is only ever one. */
  async spin(text: string): Promise<void> {
    if (!this.interactive) return;
    this.spinnerText = text;
    this.spinnerWanted = true;
    // One import and one spinner, however many calls arrive while ora loads.
    this.spinnerLoading ??= import("ora").then(({ default: ora }) => {
      this.spinner = ora({ stream: this.io.stderr, discardStdin: false, color: this.err.level > 0 ? "cyan" : false });
    });
    await this.spinnerLoading;
    const spinner = this.spinner;
    // Stopped while ora loaded: a spinner started now would never be stopped.
    if (!this.spinnerWanted || spinner === undefined) return;
    spinner.text = this.spinnerText;
    if (!spinner.isSpinning) spinner.start();
  }

  stopSpinner(): void {
    this.spinnerWanted = false;
    this.spinner?.stop();
  }

  private withSpinnerPaused(write: () => void): void {
    this.lastLive = undefined;
    const spinning = this.spinner?.isSpinning === true;
    if (spinning) this.spinner?.clear();
    write();
    if (spinning) this.spinner?.render();
  }
}

/** A line cut to a terminal's width (its colours dropped when cut), so that it takes one row. */
function oneRow(line: string, columns: number | undefined): string {
  const plain = stripVTControlCharacters(line);
  return columns === undefined || plain.length < columns ? line : `${plain.slice(0, Math.max(0, columns - 2))}…`;
}

/**
 * Whether a stream gets colours, decided from the io (never from the process, so a command run
 * in-process decides like a spawned one): off with --no-color, a non-empty NO_COLOR or
 * FORCE_COLOR=0/false; on with any other FORCE_COLOR; otherwise on a terminal that is not dumb.
 * wh paints with the 16 basic colours only, so on or off is all there is to decide.
 */
function colorsOn(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv, flags: GlobalFlags): boolean {
  if (flags.color === false || (env.NO_COLOR ?? "") !== "") return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== "0" && force !== "false";
  return stream.isTTY === true && env.TERM !== "dumb";
}

/** Renders delivery events as stderr lines: one per attempt's answer, one per retry. */
export function renderDeliveryEvent(output: Output, event: DeliveryEvent, label: string, verbose = false): void {
  const c = output.err;
  switch (event.type) {
    case "attempt":
      output.stopSpinner();
      return;
    case "response": {
      if (verbose) return; // the verbose line has said it
      const classification = classifyOutcome(event.outcome);
      const paint = classification === "success" ? c.green : classification === "retryable" ? c.yellow : c.red;
      output.log(
        `${c.dim(label)} ${event.url} attempt ${event.attempt}: ${paint(describeOutcome(event.outcome))} ${c.dim(`(${formatDurationMs(event.durationMs)})`)}`,
      );
      return;
    }
    case "retry": {
      const delay = formatDurationMs(event.delayMs);
      output.log(`${c.dim(label)} ${event.url} retrying in ${delay}`);
      void output.spin(
        `${event.url} → ${describeWait({ problem: describeOutcome(event.outcome), giveUpAtMs: event.giveUpAtMs })} — ${output.keyHints()} (next attempt in ${delay})`,
      );
      return;
    }
    case "delivered":
    case "failed":
      output.stopSpinner();
      return;
  }
}

/**
 * Why deliveries to a URL wait, in the words send's spinner and a run's progress line share:
 * `nothing is listening on 127.0.0.1:42031 (connection refused): retrying until 14:05:00`.
 */
export function describeWait(reason: { problem: string; giveUpAtMs: number }): string {
  return `${reason.problem}: retrying until ${clockTime(reason.giveUpAtMs)}`;
}

/** A short human summary of a message body that came from the network: `track u1 "Order Completed"`. */
export function summarizeMessage(json: unknown): Untrusted {
  if (typeof json !== "object" || json === null) return untrusted("(not a message)");
  const m = json as Record<string, unknown>;
  const who = userOf(m) ?? "";
  const what = m.event ?? m.name ?? m.groupId ?? (m["Previous ID"] === undefined ? undefined : `from ${String(m["Previous ID"])}`);
  return untrusted([String(m.type ?? "?"), String(who), what === undefined ? "" : JSON.stringify(what)].filter(Boolean).join(" "));
}

/** One notice when something will be sent without a signature: receivers that verify will refuse it. */
export function noteUnsigned(output: Output, destinations: readonly Destination[]): void {
  const unsigned = destinations.filter((destination) => destination.sharedSecret === undefined);
  if (unsigned.length === 0) return;
  const sources = unsigned.map((destination) => destination.source).filter((source) => source !== undefined);
  const which = sources.length === 0 ? "" : ` for ${sources.join(", ")}`;
  output.log(
    output.err.yellow(`note: no shared secret${which}: requests are sent unsigned, without X-Signature (set WH_SHARED_SECRET, --secret-file or sharedSecret)`),
  );
}
