import { readCaFiles } from "../adapters/read-ca.js";
import { systemClock } from "../adapters/system-clock.js";
import { createUndiciTransport } from "../adapters/undici-transport.js";
import type { Destination, DeliverySettings } from "../config/resolve.js";
import { deliverMessage, describeOutcome, type DeliveryEvent, type DeliveryReport } from "../core/deliver.js";
import type { Clock } from "../core/clock.js";
import { DEFAULT_RETRY_POLICY } from "../core/retry-policy.js";
import { USER_AGENT } from "../version.js";
import { AttemptsInFlight, type InFlight } from "./attempts-in-flight.js";

export interface DeliverCallOptions {
  signal?: AbortSignal | undefined;
  /** What X-Signature covers when not the body (an Actions batch: its first event). */
  signedText?: string | undefined;
  onEvent?: ((event: DeliveryEvent) => void) | undefined;
}

/** Why deliveries are waiting: a URL's last retryable answer or error, and when its retries end. */
export interface WaitReason {
  url: string;
  problem: string;
  giveUpAtMs: number;
}

/** What a run sends each event with: one destination (replay), or a batching client (ingest). */
export interface Sender {
  /** `onEvent` sees every attempt and answer (for --verbose). */
  send(body: string, signal: AbortSignal, onEvent?: (event: DeliveryEvent) => void, signedText?: string): Promise<DeliveryReport>;
  /** Deliveries now waiting to retry. */
  readonly retrying: number;
  /** Why they wait, per URL. */
  waiting(): WaitReason[];
  /** The requests on the wire, when the sender can tell (the batching client cannot). */
  readonly inFlight?: InFlight | undefined;
}

/** The delivery engine wired to the real network and a clock (the real one unless given), for one command run. */
export interface Deliverer {
  deliver(body: string, destination: Destination, options?: DeliverCallOptions): Promise<DeliveryReport>;
  /** A sender of every event to one destination, for a run (with the retries waiting and why). */
  to(destination: Destination): Sender;
  close(): Promise<void>;
}

export interface DelivererOptions {
  /** HTTPS_PROXY, HTTP_PROXY and NO_PROXY are read from here. */
  env?: NodeJS.ProcessEnv | undefined;
  /** Keep every answer's body for the reports (--verbose), not only those of failures. */
  keepEveryBody?: boolean | undefined;
  /** What retries wait by and the retry window is judged by (default: the real clock). */
  clock?: Clock | undefined;
}

export async function createDeliverer(settings: DeliverySettings, options: DelivererOptions = {}): Promise<Deliverer> {
  const undici = createUndiciTransport({
    ca: await readCaFiles(settings.caFiles, settings.cwd),
    env: options.env,
    keepEveryBody: options.keepEveryBody,
    connectTimeoutMs: settings.timeoutMs,
  });
  const inFlight = new AttemptsInFlight();
  const transport = inFlight.watch(undici);
  const policy = { ...DEFAULT_RETRY_POLICY, windowMs: settings.retryWindowMs, maxAttempts: settings.maxAttempts };
  let retrying = 0;
  // The engine sleeps only between attempts: counting its sleeps counts the retries waiting.
  const given = options.clock ?? systemClock;
  const clock: Clock = {
    now: () => given.now(),
    async sleep(ms, signal) {
      retrying += 1;
      try {
        await given.sleep(ms, signal);
      } finally {
        retrying -= 1;
      }
    },
  };
  // Each URL's last retryable answer, while it has deliveries waiting: what the progress line says.
  const reasons = new Map<string, WaitReason>();
  const observe = (event: DeliveryEvent): void => {
    if (event.type === "retry") reasons.set(event.url, { url: event.url, problem: describeOutcome(event.outcome), giveUpAtMs: event.giveUpAtMs });
    else if (event.type === "delivered") reasons.delete(event.url);
  };
  const waiting = (): WaitReason[] => (retrying === 0 ? [] : [...reasons.values()]);
  const deliverer: Deliverer = {
    to: (destination) => ({
      send: (body, signal, onEvent, signedText) => deliverer.deliver(body, destination, { signal, onEvent, signedText }),
      get retrying() {
        return retrying;
      },
      waiting,
      inFlight,
    }),
    deliver: (body, destination, options = {}) =>
      deliverMessage(body, {
        targets: destination.targets,
        transport,
        clock,
        policy: { ...policy, statuses: destination.mode },
        timeoutMs: destination.timeoutMs,
        userAgent: USER_AGENT,
        sharedSecret: destination.sharedSecret,
        method: destination.method,
        signedText: options.signedText,
        signal: options.signal,
        onEvent:
          options.onEvent === undefined
            ? observe
            : (event) => {
                observe(event);
                options.onEvent?.(event);
              },
      }),
    close: () => undici.close(),
  };
  return deliverer;
}
