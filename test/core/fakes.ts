import type { Clock } from "../../src/core/clock.js";
import type { HttpTransport, TransportResult } from "../../src/core/deliver.js";

/** 2026-11-21T09:30:08.276Z: the fixed "now" of the core tests. */
export const START_MS = Date.parse("2026-11-21T09:30:08.276Z");

/**
 * A clock whose sleep records the requested ms and advances `now` at once. A test can hook
 * `onSleep` to hold a sleep open (until its signal aborts, say) or to act while it is pending.
 */
export class FakeClock implements Clock {
  nowMs: number;
  readonly sleeps: number[] = [];
  onSleep: ((ms: number, signal: AbortSignal | undefined) => Promise<void> | void) | undefined;

  constructor(startMs = START_MS) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    if (this.onSleep !== undefined) await this.onSleep(ms, signal);
    if (signal?.aborted) return;
    this.nowMs += ms;
  }
}

/** Resolves when the signal aborts (at once if it already has). */
export function untilAborted(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal === undefined) return;
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

export interface RecordedCall {
  url: URL;
  headers: Record<string, string>;
  body: Buffer;
  signal: AbortSignal;
  timeoutMs: number;
}

/** One scripted answer: a result, or a function of the call that produces one. */
export type ScriptStep = TransportResult | ((call: RecordedCall) => Promise<TransportResult> | TransportResult);

export const ok200: TransportResult = { kind: "response", status: 200 };
export const status = (code: number, retryAfter?: string): TransportResult =>
  retryAfter === undefined ? { kind: "response", status: code } : { kind: "response", status: code, retryAfter };

/** A step that answers only when the request is cancelled, as undici does with an aborted signal. */
export const hangUntilAborted: ScriptStep = async (call) => {
  await untilAborted(call.signal);
  return { kind: "error", code: "aborted", message: "This operation was aborted" };
};

/**
 * A transport that answers from a script per URL (by href) and records every call.
 * `latencyMs` advances the clock during each request. Running out of script is a test bug.
 */
export class FakeTransport implements HttpTransport {
  readonly calls: RecordedCall[] = [];
  private readonly scripts: Map<string, ScriptStep[]>;

  constructor(
    scripts: Record<string, ScriptStep[]>,
    private readonly clock?: FakeClock,
    private readonly latencyMs = 0,
  ) {
    this.scripts = new Map(Object.entries(scripts).map(([url, steps]) => [new URL(url).href, [...steps]]));
  }

  async post(url: URL, headers: Record<string, string>, body: Uint8Array, options: { signal: AbortSignal; timeoutMs: number }): Promise<TransportResult> {
    const call: RecordedCall = { url, headers: { ...headers }, body: Buffer.from(body), signal: options.signal, timeoutMs: options.timeoutMs };
    this.calls.push(call);
    const step = this.scripts.get(url.href)?.shift();
    if (step === undefined) throw new Error(`no scripted answer left for ${url.href}`);
    if (this.clock !== undefined) this.clock.nowMs += this.latencyMs;
    return typeof step === "function" ? step(call) : step;
  }

  callsTo(href: string): RecordedCall[] {
    return this.calls.filter((call) => call.url.href === new URL(href).href);
  }
}
