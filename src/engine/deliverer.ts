import { readCaFiles } from "../adapters/read-ca.js";
import { systemClock } from "../adapters/system-clock.js";
import { createUndiciTransport } from "../adapters/undici-transport.js";
import type { Destination, DeliverySettings } from "../config/resolve.js";
import { deliverMessage, type DeliveryEvent, type DeliveryReport } from "../core/deliver.js";
import type { Clock } from "../core/clock.js";
import { DEFAULT_RETRY_POLICY } from "../core/retry-policy.js";
import { USER_AGENT } from "../version.js";

export interface DeliverCallOptions {
  signal?: AbortSignal | undefined;
  onEvent?: ((event: DeliveryEvent) => void) | undefined;
}

/** What a run sends each event with: one destination (replay), or a batching client (ingest). */
export interface Sender {
  send(body: string, signal: AbortSignal): Promise<DeliveryReport>;
  /** Deliveries now waiting to retry. */
  readonly retrying: number;
}

/** The delivery engine wired to the real network and clock, for one command run. */
export interface Deliverer {
  deliver(body: string, destination: Destination, options?: DeliverCallOptions): Promise<DeliveryReport>;
  /** Deliveries now waiting to retry a URL. */
  readonly retrying: number;
  /** A sender of every event to one destination, for a run. */
  to(destination: Destination): Sender;
  close(): Promise<void>;
}

export interface DelivererOptions {
  /** HTTPS_PROXY, HTTP_PROXY and NO_PROXY are read from here. */
  env?: NodeJS.ProcessEnv | undefined;
  /** Keep every answer's body for the reports (--verbose), not only those of failures. */
  keepEveryBody?: boolean | undefined;
}

export async function createDeliverer(settings: DeliverySettings, options: DelivererOptions = {}): Promise<Deliverer> {
  const transport = createUndiciTransport({ ca: await readCaFiles(settings.caFiles), env: options.env, keepEveryBody: options.keepEveryBody });
  const policy = { ...DEFAULT_RETRY_POLICY, windowMs: settings.retryWindowMs };
  let retrying = 0;
  // The engine sleeps only between attempts: counting its sleeps counts the retries waiting.
  const clock: Clock = {
    now: systemClock.now,
    async sleep(ms, signal) {
      retrying += 1;
      try {
        await systemClock.sleep(ms, signal);
      } finally {
        retrying -= 1;
      }
    },
  };
  const deliverer: Deliverer = {
    get retrying() {
      return retrying;
    },
    to: (destination) => ({
      send: (body, signal) => deliverer.deliver(body, destination, { signal }),
      get retrying() {
        return retrying;
      },
    }),
    deliver: (body, destination, options = {}) =>
      deliverMessage(body, {
        targets: destination.targets,
        transport,
        clock,
        policy,
        timeoutMs: settings.timeoutMs,
        userAgent: USER_AGENT,
        sharedSecret: destination.sharedSecret,
        signal: options.signal,
        onEvent: options.onEvent,
      }),
    close: () => transport.close(),
  };
  return deliverer;
}
