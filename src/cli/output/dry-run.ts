import type { Destination } from "../../config/resolve.js";
import type { SubscriptionRequest } from "../../core/destination/route.js";
import { requestDestination } from "../../engine/request-destination.js";
import { describeOutcome, type DeliveryEvent, type WebhookTarget } from "../../core/deliver.js";
import { attemptSigner, buildRequestHeaders, segmentSecret, withTargetHeaders } from "../../core/request-headers.js";
import { formatDurationMs } from "../../core/duration.js";
import { redactHeaderValue, redactUrl } from "../../core/redact.js";
import { SIGNATURE_HEADER } from "../../core/sign.js";
import { WEBHOOK_SIGNATURE_HEADER } from "../../core/standard-webhooks.js";
import { destinationUserAgent } from "../../version.js";
import type { Output } from "./render.js";

/**
 * Prints what would be sent, without sending: for each URL the headers (credential-like static
 * header values masked, never the secret) and the exact body bytes with the signature over them.
 */
export function printDryRun(output: Output, request: DryRunRequest, given: Destination, context: Record<string, unknown> = {}): void {
  const { body } = request;
  const routed = request.request;
  // A subscription's request goes to its own mapped URL, method and headers.
  const destination = routed === undefined ? given : requestDestination(given, routed);
  if (routed !== undefined) context = { ...context, subscription: routed.subscription, events: routed.events.length };
  const headers = signedHeaders(body, request.signedText, destination, routed?.json ?? true);
  const dropped = request.dropped ?? [];
  for (const target of destination.targets) {
    const shown = headersShown(headers, target);
    const url = redactUrl(target.url);
    output.record({
      ...context,
      dryRun: true,
      method: destination.method,
      url,
      headers: shown,
      signature: headers[destination.scheme === "standard" ? WEBHOOK_SIGNATURE_HEADER : SIGNATURE_HEADER] ?? null,
      body,
      ...(dropped.length === 0 ? {} : { notCarried: dropped }),
    });
    if (output.json) continue;
    const lines = [`${destination.method} ${url}`, ...Object.entries(shown).map(([name, value]) => `${name}: ${value}`), "", body];
    if (routed !== undefined) lines.unshift(`# subscription ${JSON.stringify(routed.subscription)} (${describeCarried(context.line, routed.events.length)})`);
    if (destination.scheme !== "standard" && request.signedText !== undefined && request.signedText !== body)
      lines.push("(X-Signature covers the first event only, as Segment signs batches)");
    // Nothing is dropped without a word: what the classic shape does not carry is named.
    if (dropped.length > 0) lines.push(`(not carried by the classic shape: ${dropped.join(", ")}; --mode actions sends the whole event)`);
    output.result(`${lines.join("\n")}\n`);
  }
}

/**
 * The headers of a request for `body`, signed by the destination's scheme: Standard Webhooks'
 * as an attempt now would carry them (each attempt is signed at its own time).
 */
function signedHeaders(body: string, signedText: string | undefined, destination: Destination, json = true): Record<string, string> {
  const { scheme, sharedSecret } = destination;
  const headers = buildRequestHeaders(signedText ?? body, destinationUserAgent(destination.mode), segmentSecret(scheme, sharedSecret), json);
  return { ...headers, ...attemptSigner(scheme, sharedSecret, body)?.(Date.now()) };
}

/** Which events a subscription's request carries: `line 3`, or `line 3 and 4 more in a batch`. */
function describeCarried(line: unknown, events: number): string {
  const first = typeof line === "number" ? `line ${line}` : "the event";
  return events === 1 ? first : `${first} and ${events - 1} more, in a batch`;
}

/** What a dry run shows of one request. */
export interface DryRunRequest {
  body: string;
  /** What X-Signature covers when not the body (an Actions batch's first event). */
  signedText?: string | undefined;
  /** The input's fields the body does not carry. */
  dropped?: readonly string[] | undefined;
  /** A subscription's request: its URL, method and headers are the mapping's. */
  request?: SubscriptionRequest | undefined;
}

/** The headers of a request to `target`, as output shows them: credential-like values masked. */
function headersShown(headers: Readonly<Record<string, string>>, target: WebhookTarget): Record<string, string> {
  const shown = withTargetHeaders(headers, target.headers);
  for (const [name, value] of Object.entries(target.headers)) shown[name] = redactHeaderValue(name, value);
  return shown;
}

/**
 * --verbose: every attempt with its request headers (masked), and every answer with its status,
 * time and the start of its body (neutralised: it is the receiver's text).
 */
export function renderVerboseEvent(output: Output, label: string, body: string, destination: Destination, event: DeliveryEvent): void {
  const c = output.err;
  if (event.type === "attempt") {
    const target = destination.targets.find((each) => redactUrl(each.url) === event.url);
    const headers = target === undefined ? {} : headersShown(signedHeaders(body, undefined, destination), target);
    output.log(
      `${c.dim(label)} POST ${event.url} attempt ${event.attempt} ${c.dim(
        Object.entries(headers)
          .map(([name, value]) => `${name}: ${value}`)
          .join("; "),
      )}`,
    );
  } else if (event.type === "response") {
    output.log(`${c.dim(label)} ${event.url} attempt ${event.attempt}: ${describeOutcome(event.outcome)} ${c.dim(`(${formatDurationMs(event.durationMs)})`)}`);
  }
}
