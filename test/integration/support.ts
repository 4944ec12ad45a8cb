import type { DeliveryEvent, DeliveryOptions, DeliveryReport, WebhookTarget } from "../../src/core/deliver.js";
import { deliverMessage } from "../../src/core/deliver.js";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "../../src/core/retry-policy.js";
import { systemClock } from "../../src/adapters/system-clock.js";
import { createUndiciTransport, type ClosableTransport, type UndiciTransportOptions } from "../../src/adapters/undici-transport.js";
import { startRecordingServer, type RecordingServer, type RecordingServerOptions } from "../helpers/recording-server.js";
import { USER_AGENT } from "../../src/version.js";

/** Short backoff so a retried case takes milliseconds; the window still bounds every test. */
export const FAST_POLICY: RetryPolicy = { ...DEFAULT_RETRY_POLICY, baseMs: 5, capMs: 20, windowMs: 2_000 };

/** Generous enough never to fire on a healthy local reply; the timeout cases pass their own. */
const DEFAULT_TIMEOUT_MS = 2_000;

/**
 * For cases where a broken timeout would hang: the delivery is aborted instead, so the test
 * fails on its assertions in seconds rather than on vitest's own timeout.
 */
export const safetyNet = (): AbortSignal => AbortSignal.timeout(5_000);

export const wait = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export function targetOf(url: string, headers: Record<string, string> = {}): WebhookTarget {
  return { url: new URL(url), headers };
}

/**
 * Servers and transports made through one harness are closed together in afterEach, so a
 * failing test never leaks a listening socket or a keep-alive connection into the next one.
 */
export interface Harness {
  server(options?: RecordingServerOptions): Promise<RecordingServer>;
  transport(options?: UndiciTransportOptions): ClosableTransport;
  /** A port that was listening a moment ago and now refuses connections. */
  closedPort(): Promise<number>;
  close(): Promise<void>;
}

export function createHarness(): Harness {
  const closers: Array<() => Promise<void>> = [];
  return {
    async server(options) {
      const server = await startRecordingServer(options);
      closers.push(() => server.close());
      return server;
    },
    transport(options) {
      const transport = createUndiciTransport(options);
      closers.push(() => transport.close());
      return transport;
    },
    async closedPort() {
      const server = await startRecordingServer();
      await server.close();
      return server.port;
    },
    async close() {
      // All at once: an agent's close waits for its requests, which a server's close ends.
      await Promise.all(closers.splice(0).map((close) => close()));
    },
  };
}

export interface Delivery {
  report: DeliveryReport;
  events: DeliveryEvent[];
}

/** deliverMessage with the real clock and the fast policy; every event is kept for assertions. */
export async function deliver(
  body: string,
  options: Pick<DeliveryOptions, "targets" | "transport"> & Partial<Omit<DeliveryOptions, "targets" | "transport" | "onEvent">>,
): Promise<Delivery> {
  const events: DeliveryEvent[] = [];
  const report = await deliverMessage(body, {
    clock: systemClock,
    policy: FAST_POLICY,
    timeoutMs: DEFAULT_TIMEOUT_MS,
    userAgent: USER_AGENT,
    ...options,
    onEvent: (event) => events.push(event),
  });
  return { report, events };
}

/** The gap between two recorded requests, as the server saw it. */
export function gapMs(server: RecordingServer, from: number, to: number): number {
  const first = server.requests[from];
  const second = server.requests[to];
  if (first === undefined || second === undefined) throw new Error(`the server recorded ${server.requests.length} requests; wanted #${from} and #${to}`);
  return second.at - first.at;
}
