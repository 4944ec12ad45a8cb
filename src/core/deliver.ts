import { isObject, MAX_TIMER_MS, requireArgument } from "./arguments.js";
import type { Clock } from "./clock.js";
import type { DestinationMode } from "./message/prepare.js";
import { MAX_REDIRECTS, redirectedRequest, type RedirectableRequest } from "./redirect.js";
import { classifyOutcome, decideRetry, type AttemptOutcome, type RetryPolicy } from "./retry-policy.js";
import { neutralize, untrusted } from "./untrusted.js";
import { redactUrl } from "./redact.js";
import { attemptSigner, type AttemptSigner, buildRequestHeaders, segmentSecret, withTargetHeaders } from "./request-headers.js";
import { SIGNING_SCHEMES, type SigningScheme, standardKeys } from "./standard-webhooks.js";

/** One webhook URL and the static headers configured for it. */
export interface WebhookTarget {
  url: URL;
  headers: Readonly<Record<string, string>>;
}

export type TransportResult = AttemptOutcome;

/**
 * How long Segment's destination waits for the whole answer: 5 s for the classic one (the seed),
 * 10 s for the Actions ones (actions-core request-client.ts, DEFAULT_REQUEST_TIMEOUT).
 */
export function destinationTimeoutMs(mode: DestinationMode): number {
  return mode === "actions" ? 10_000 : 5_000;
}

/**
 * The narrow port to the network: undici in use, anything that posts bytes in tests. A string
 * body is sent as its UTF-8 bytes, the same bytes the signature was computed over.
 */
export interface HttpTransport {
  /** Sends the body with `method` (default POST; GET, with an empty body, only after a redirect that asks for it). */
  post(
    url: URL,
    headers: Record<string, string>,
    body: string | Uint8Array,
    options: { signal: AbortSignal; timeoutMs: number; method?: "GET" | "POST" | "PUT" | "PATCH" | undefined },
  ): Promise<TransportResult>;
}

export type DeliveryEvent =
  | { type: "attempt"; url: string; attempt: number }
  | { type: "response"; url: string; attempt: number; outcome: AttemptOutcome; durationMs: number }
  | { type: "retry"; url: string; attempt: number; delayMs: number; outcome: AttemptOutcome; giveUpAtMs: number }
  | { type: "delivered"; url: string; attempt: number }
  | { type: "failed"; report: DeliveryReport };

export interface TargetReport {
  url: string;
  attempts: number;
  /** The last answer or error from this URL, if any attempt finished. */
  last: AttemptOutcome | undefined;
  result: "delivered" | "failed" | "cancelled";
  /** Why a failed URL was given up on, when it was not its last outcome alone. */
  reason?: string | undefined;
}

export interface DeliveryReport {
  outcome: "delivered" | "failed" | "aborted";
  deliveredTo: string | undefined;
  attempts: number;
  durationMs: number;
  targets: TargetReport[];
}

export interface DeliveryOptions {
  targets: readonly WebhookTarget[];
  transport: HttpTransport;
  clock: Clock;
  policy: RetryPolicy;
  timeoutMs: number;
  userAgent: string;
  sharedSecret?: string | undefined;
  /** How the secret signs: Segment's X-Signature (default), or Standard Webhooks' three headers. */
  scheme?: SigningScheme | undefined;
  /** POST (default), PUT or PATCH. */
  method?: "POST" | "PUT" | "PATCH" | undefined;
  /** Follow redirects as Segment's Actions destinations do (core/redirect.ts); otherwise a 3xx is the answer. */
  followRedirects?: boolean | undefined;
  /**
   * What X-Signature is computed over, when not the body: the first event of an Actions batch,
   * as Segment signs batches. Standard Webhooks signs the body sent, whatever this says.
   */
  signedText?: string | undefined;
  /** A request without a body (a subscription whose data mapped to nothing) has no Content-Type, as actions-core's request client sends it. */
  withoutContentType?: boolean | undefined;
  random?: () => number;
  /**
   * The body and extra headers of attempt n (1-based), when they change per attempt: the
   * ingestion client's sentAt and X-Retry-Count. Not for signed bodies.
   */
  perAttempt?: ((attempt: number) => { body: string; headers: Record<string, string> }) | undefined;
  /** Aborting stops every attempt and sleep: the report's outcome is then "aborted". */
  signal?: AbortSignal | undefined;
  onEvent?: (event: DeliveryEvent) => void;
}

/** What changes from one message to the next of a sender: the rest of DeliveryOptions stays. */
export type DeliveryCall = Pick<DeliveryOptions, "signal" | "onEvent" | "signedText" | "withoutContentType">;

/** What a sender delivers every message with (DeliveryOptions without a message's own). */
export type SenderOptions = Omit<DeliveryOptions, keyof DeliveryCall>;

const NEVER_ABORTED = new AbortController().signal;

/** The URL as reports show it (password masked), worked out once per URL object. */
const urlLabels = new WeakMap<URL, string>();
function urlLabel(url: URL): string {
  let label = urlLabels.get(url);
  if (label === undefined) {
    label = redactUrl(url);
    urlLabels.set(url, label);
  }
  return label;
}

/**
 * Posts one message to every URL at once and retries each URL on its own schedule. The message
 * is delivered as soon as one URL answers 2xx; the other URLs are then cancelled, not retried.
 */
export async function deliverMessage(body: string, options: DeliveryOptions): Promise<DeliveryReport> {
  checkBody(body);
  checkDelivery(options);
  return deliverChecked(body, options, options);
}

/**
 * deliverMessage for many messages with the same options (a run's destination), checked once:
 * each message then takes its own few (signal, onEvent, signedText, withoutContentType), not a
 * whole DeliveryOptions object and its checks per event.
 */
export function messageSender(options: SenderOptions): (body: string, call: DeliveryCall) => Promise<DeliveryReport> {
  checkDelivery(options);
  return (body, call) => deliverChecked(body, options, call);
}

async function deliverChecked(body: string, options: SenderOptions, call: DeliveryCall): Promise<DeliveryReport> {
  checkBody(body);
  const { clock } = options;
  // The body stays a string: HMAC and the socket both take its UTF-8 bytes, so the bytes signed
  // are the bytes sent, without a Buffer copy per event (JSON.stringify output is well-formed
  // UTF-16, so the encoding has no choices to make).
  const secret = segmentSecret(options.scheme, options.sharedSecret);
  const headers = buildRequestHeaders(call.signedText ?? body, options.userAgent, secret, call.withoutContentType !== true);
  const request = { body, headers, sign: attemptSigner(options.scheme, options.sharedSecret, body) };
  const startedAtMs = clock.now();
  const only = options.targets.length === 1 ? options.targets[0] : undefined;
  const targets =
    only !== undefined ? [await deliverToTarget(only, request, options, call, call.signal ?? NEVER_ABORTED)] : await deliverToEach(request, options, call);
  let delivered: TargetReport | undefined;
  let attempts = 0;
  for (const target of targets) {
    if (delivered === undefined && target.result === "delivered") delivered = target;
    attempts += target.attempts;
  }
  const report: DeliveryReport = {
    outcome: delivered !== undefined ? "delivered" : call.signal?.aborted ? "aborted" : "failed",
    deliveredTo: delivered?.url,
    attempts,
    durationMs: clock.now() - startedAtMs,
    targets,
  };
  if (report.outcome === "failed") call.onEvent?.({ type: "failed", report });
  return report;
}

/** A message is a string (a caller in plain JavaScript may hand anything). */
function checkBody(body: string): void {
  requireArgument(typeof body === "string", "body", "a string", body);
}

/** What plain JavaScript may get wrong before the first attempt: the rest is typed data read as it goes. */
function checkDelivery(options: SenderOptions): void {
  requireArgument(isObject(options), "options", "an object of DeliveryOptions", options);
  const { targets, transport, clock, timeoutMs } = options;
  requireArgument(
    Array.isArray(targets) && targets.length > 0 && targets.every((target) => target?.url instanceof URL),
    "options.targets",
    "a list of { url: URL, headers }",
    targets,
  );
  requireArgument(typeof transport?.post === "function", "options.transport", "an HttpTransport, with post()", transport);
  requireArgument(typeof clock?.now === "function" && typeof clock.sleep === "function", "options.clock", "a Clock, with now() and sleep()", clock);
  requireArgument(isObject(options.policy), "options.policy", "a RetryPolicy", options.policy);
  requireArgument(options.scheme === undefined || SIGNING_SCHEMES.includes(options.scheme), "options.scheme", '"segment" or "standard"', options.scheme);
  if (options.scheme === "standard" && options.sharedSecret !== undefined) standardKeys(options.sharedSecret, "options.sharedSecret");
  requireArgument(typeof timeoutMs === "number" && timeoutMs >= 1 && timeoutMs <= MAX_TIMER_MS, "options.timeoutMs", TIMEOUT_RANGE, timeoutMs);
}

const TIMEOUT_RANGE = `a number from 1 to ${MAX_TIMER_MS}`;

/**
 * Several URLs at once: the first 2xx cancels the others. (One URL needs none of this: the
 * caller's signal is enough, and replay saves an AbortController and its listeners per event.)
 */
async function deliverToEach(request: OneRequest, options: SenderOptions, call: DeliveryCall): Promise<TargetReport[]> {
  const cancel = new AbortController();
  const outer = call.signal;
  const onOuterAbort = (): void => cancel.abort();
  outer?.addEventListener("abort", onOuterAbort, { once: true });
  if (outer?.aborted) cancel.abort();
  try {
    return await Promise.all(
      options.targets.map(async (target) => {
        const report = await deliverToTarget(target, request, options, call, cancel.signal);
        if (report.result === "delivered") cancel.abort();
        return report;
      }),
    );
  } finally {
    outer?.removeEventListener("abort", onOuterAbort);
  }
}

/** What every URL is sent: the body, its headers, and the signer of each attempt's own headers. */
interface OneRequest {
  body: string;
  headers: Record<string, string>;
  sign: AttemptSigner | undefined;
}

async function deliverToTarget(
  target: WebhookTarget,
  { body, headers: baseHeaders, sign }: OneRequest,
  options: SenderOptions,
  { onEvent }: DeliveryCall,
  signal: AbortSignal,
): Promise<TargetReport> {
  const { clock } = options;
  const url = urlLabel(target.url);
  const headers = hasKeys(target.headers) ? withTargetHeaders(baseHeaders, target.headers) : baseHeaders;
  const random = options.random ?? Math.random;
  const report: TargetReport = { url, attempts: 0, last: undefined, result: "cancelled" };
  const firstAttemptAtMs = clock.now();
  while (!signal.aborted) {
    report.attempts += 1;
    onEvent?.({ type: "attempt", url, attempt: report.attempts });
    const sentAtMs = clock.now();
    const attempt = options.perAttempt?.(report.attempts);
    const request = {
      url: target.url,
      method: options.method ?? "POST",
      headers: attempt === undefined && sign === undefined ? headers : { ...headers, ...attempt?.headers, ...sign?.(sentAtMs) },
      body: attempt?.body ?? body,
    };
    const outcome = await postOnce(request, options, signal);
    if (outcome.kind === "error" && outcome.code === "aborted") return report;
    report.last = outcome;
    const nowMs = clock.now();
    onEvent?.({ type: "response", url, attempt: report.attempts, outcome, durationMs: nowMs - sentAtMs });
    if (classifyOutcome(outcome) === "success") {
      report.result = "delivered";
      onEvent?.({ type: "delivered", url, attempt: report.attempts });
      return report;
    }
    const decision = decideRetry({ outcome, attempt: report.attempts, firstAttemptAtMs, nowMs, random: random() }, options.policy);
    if (decision.action === "done") {
      report.result = "failed";
      return report;
    }
    if (decision.action === "give-up") {
      report.result = "failed";
      report.reason = decision.reason;
      return report;
    }
    // The retry event announces the sleep that follows in the same synchronous step (engine/retry-waits relies on it).
    onEvent?.({ type: "retry", url, attempt: report.attempts, delayMs: decision.delayMs, outcome, giveUpAtMs: firstAttemptAtMs + options.policy.windowMs });
    await clock.sleep(decision.delayMs, signal);
  }
  return report;
}

/**
 * One attempt: the request and, when redirects are followed, the requests they ask for, all
 * within the one timeout (actions-core's request client times the whole fetch, redirects
 * included). Past MAX_REDIRECTS the attempt fails as node-fetch's does.
 */
function postOnce(first: RedirectableRequest, options: SenderOptions, signal: AbortSignal): Promise<AttemptOutcome> {
  // With no redirect to follow, the transport's own promise: no async step of its own per attempt.
  return options.followRedirects === true ? postFollowing(first, options, signal) : post(first, options.transport, signal, options.timeoutMs);
}

async function postFollowing(first: RedirectableRequest, options: SenderOptions, signal: AbortSignal): Promise<AttemptOutcome> {
  const { timeoutMs, clock } = options;
  const startedAtMs = clock.now();
  let last = await post(first, options.transport, signal, timeoutMs);
  let request = first;
  for (let followed = 0; ; followed += 1) {
    const next = redirectedRequest(request, last);
    if (next === undefined) return last;
    if (followed === MAX_REDIRECTS) return { kind: "error", code: "other", message: `more than ${MAX_REDIRECTS} redirects` };
    const leftMs = timeoutMs - (clock.now() - startedAtMs);
    if (leftMs <= 0) return { kind: "error", code: "timeout", message: `no response within ${timeoutMs}ms, redirects included` };
    request = next;
    last = await post(request, options.transport, signal, leftMs);
  }
}

/** Whether an object has an own enumerable key, without Object.keys' array per delivery. */
function hasKeys(object: Readonly<Record<string, string>>): boolean {
  for (const key in object) if (Object.hasOwn(object, key)) return true;
  return false;
}

function post(request: RedirectableRequest, transport: HttpTransport, signal: AbortSignal, timeoutMs: number): Promise<AttemptOutcome> {
  return transport.post(request.url, request.headers, request.body, { signal, timeoutMs, method: request.method });
}

/**
 * One line for a person: `HTTP 404: no such hook`, `HTTP 301 to https://…`, `timeout after 5s`.
 * What the receiver said is untrusted: it is neutralised and cut to one line. So is an error's
 * message, which can quote the server (a certificate's names, a malformed header).
 */
export function describeOutcome(outcome: AttemptOutcome | undefined): string {
  if (outcome === undefined) return "no answer";
  if (outcome.kind === "error") return `${untrusted(outcome.message)}`;
  const location = outcome.location === undefined ? "" : ` to ${untrusted(outcome.location)}`;
  const said = outcome.body === undefined || outcome.body.trim() === "" ? "" : `: ${excerpt(outcome.body)}`;
  return `HTTP ${outcome.status}${location}${said}`;
}

/** At most 200 characters of an answer, on one line. */
function excerpt(body: string): string {
  const line = neutralize(body.trim());
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
