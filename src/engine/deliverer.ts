import { readCaFiles } from "../adapters/read-ca.js";
import { systemClock } from "../adapters/system-clock.js";
import { createUndiciTransport } from "../adapters/undici-transport.js";
import type { Destination, DeliverySettings } from "../config/resolve.js";
import { type DeliveryCall, type DeliveryEvent, type DeliveryReport, messageSender } from "../core/deliver.js";
import type { Clock } from "../core/clock.js";
import type { SubscriptionRequest } from "../core/destination/route.js";
import { requestDestination } from "./request-destination.js";
import { DEFAULT_RETRY_POLICY } from "../core/retry-policy.js";
import { destinationUserAgent } from "../version.js";
import { AttemptsInFlight, type InFlight } from "./attempts-in-flight.js";
import { RetryWaits, type WaitReason } from "./retry-waits.js";

export interface DeliverCallOptions {
  signal?: AbortSignal | undefined;
  /** What X-Signature covers when not the body (an Actions batch: its first event). */
  signedText?: string | undefined;
  /** No Content-Type: a subscription's request without a body. */
  withoutContentType?: boolean | undefined;
  onEvent?: ((event: DeliveryEvent) => void) | undefined;
}

export type { WaitReason } from "./retry-waits.js";

/** What a run sends each event with: one destination (replay), or a batching client (ingest). */
export interface Sender {
  /** `onEvent` sees every attempt and answer (for --verbose). */
  send(body: string, signal: AbortSignal, onEvent?: (event: DeliveryEvent) => void, signedText?: string): Promise<DeliveryReport>;
  /** One request of a subscription (its own URL, method, headers and signed text). */
  sendRequest?(request: SubscriptionRequest, signal: AbortSignal, onEvent?: (event: DeliveryEvent) => void): Promise<DeliveryReport>;
  /** Deliveries now waiting to retry. */
  readonly retrying: number;
  /** Why they wait, per URL. */
  waiting(): WaitReason[];
  /** The requests on the wire, when the sender can tell (the batching client cannot). */
  readonly inFlight?: InFlight | undefined;
  /** Ends every wait to retry now (see RetryWaits.retryNow); returns how many were cut short. */
  retryNow(): number;
}

/** The delivery engine wired to the real network and a clock (the real one unless given), for one command run. */
export interface Deliverer {
  deliver(body: string, destination: Destination, options?: DeliverCallOptions): Promise<DeliveryReport>;
  /** One request of one of the destination's subscriptions, to its mapped URL with its method and headers. */
  deliverRequest(
    request: SubscriptionRequest,
    destination: Destination,
    options: Omit<DeliverCallOptions, "signedText" | "withoutContentType">,
  ): Promise<DeliveryReport>;
  /** A sender of every event to one destination, for a run (with the retries waiting and why). */
  to(destination: Destination): Sender;
  /** Ends every wait to retry now (see RetryWaits.retryNow); returns how many were cut short. */
  retryNow(): number;
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
  // One per mode, made here: spread per event ({ ...policy, statuses }), it was 390 bytes of garbage each.
  const policies = { classic: { ...policy, statuses: "classic" }, actions: { ...policy, statuses: "actions" } } as const;
  // The retries waiting and why (what the progress line says), and "retry now".
  const waits = new RetryWaits(options.clock ?? systemClock);
  const { clock } = waits;
  const observe = (event: DeliveryEvent): void => waits.observe(event);
  const retryNow = (): number => waits.retryNow();
  /** A message's own options, its events seen by the retry waits and by the caller. */
  const callOf = (
    signal: AbortSignal | undefined,
    onEvent: ((event: DeliveryEvent) => void) | undefined,
    signedText?: string,
    withoutContentType?: boolean,
  ): DeliveryCall => ({
    signal,
    onEvent:
      onEvent === undefined
        ? observe
        : (event) => {
            observe(event);
            onEvent(event);
          },
    signedText,
    withoutContentType,
  });
  // Each destination's options made and checked once, not per event: a run sends every event to one.
  const senders = new WeakMap<Destination, (body: string, call: DeliveryCall) => Promise<DeliveryReport>>();
  const senderTo = (destination: Destination): ((body: string, call: DeliveryCall) => Promise<DeliveryReport>) => {
    let send = senders.get(destination);
    if (send === undefined) {
      send = messageSender({
        targets: destination.targets,
        transport,
        clock,
        policy: policies[destination.mode],
        timeoutMs: destination.timeoutMs,
        userAgent: destinationUserAgent(destination.mode),
        sharedSecret: destination.sharedSecret,
        scheme: destination.scheme,
        method: destination.method,
        followRedirects: destination.mode === "actions",
      });
      senders.set(destination, send);
    }
    return send;
  };
  const deliverer: Deliverer = {
    // A run has one deliverer: a sender's figures and retryNow are the deliverer's.
    to: (destination) => {
      // Made at the first send: a destination of subscriptions has no URL of its own (no targets) and sends only requests.
      let send: ((body: string, call: DeliveryCall) => Promise<DeliveryReport>) | undefined;
      return {
        send: (body, signal, onEvent, signedText) => {
          send ??= senderTo(destination);
          return send(body, callOf(signal, onEvent, signedText));
        },
        sendRequest: (request, signal, onEvent) => deliverer.deliverRequest(request, destination, { signal, onEvent }),
        get retrying() {
          return waits.count;
        },
        waiting: () => waits.reasons(),
        inFlight,
        retryNow,
      };
    },
    retryNow,
    // async: options a destination's sender refuses reject the delivery, as deliverMessage's do.
    deliver: async (body, destination, options = {}) =>
      senderTo(destination)(body, callOf(options.signal, options.onEvent, options.signedText, options.withoutContentType)),
    deliverRequest: (request, destination, options) =>
      deliverer.deliver(request.body, requestDestination(destination, request), {
        ...options,
        signedText: request.signedText,
        withoutContentType: !request.json,
      }),
    close: () => undici.close(),
  };
  return deliverer;
}
