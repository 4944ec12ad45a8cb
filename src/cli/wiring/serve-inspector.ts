import type { InspectorDelivery } from "../../adapters/inspector/protocol.js";
import { startInspector, type Inspector, type InspectorEntry, type ResendRequest } from "../../adapters/inspector/server.js";
import type { Destination } from "../../config/resolve.js";
import { BoundedMap } from "../../core/bounded-map.js";
import { type DeliveryEvent, type DeliveryReport, describeOutcome } from "../../core/deliver.js";
import type { Route, SubscriptionRequest } from "../../core/destination/route.js";
import { isJsonObject } from "../../core/message/parse-json.js";
import { redactUrl } from "../../core/redact.js";
import { userOf } from "../../core/shard.js";
import { requestDestination } from "../../engine/request-destination.js";
import { resendRequest } from "../../engine/resend.js";
import type { DeliveryJob, JobOutcome } from "../../engine/delivery-job.js";
import type { AcceptedRequest } from "../../engine/serve/start-serve.js";
import type { Output } from "../output/render.js";

export interface ServeInspectorOptions {
  /** Retries the deliveries waiting to, now (the page's "retry now" button); answers how many. Absent: no button. */
  retryNow?: (() => number) | undefined;
}

/**
 * The inspector page of `wh serve --ui`: one entry per accepted event, with each delivery attempt
 * to each endpoint (status or error, the start of the answer, timing), where its delivery stands
 * (the delivery column) and its outcome. Resending delivers the event's body (or an edited one)
 * again, signed with its source's secret, to its first URL or another.
 */
export async function startServeInspector(host: string, env: NodeJS.ProcessEnv, output: Output, options: ServeInspectorOptions = {}): Promise<ServeInspector> {
  const page = new ServeInspector(env, output);
  page.inspector = await startInspector({
    host,
    get origin() {
      return page.origin;
    },
    retryNow: options.retryNow,
    resend: (id, request) => page.resend(id, request),
  });
  return page;
}

class ServeInspector {
  /** Where the tracking API listens, once it does. */
  origin = "";
  inspector = undefined as unknown as Inspector;
  // Entries are known by their event's messageId: with Redis an event has no local number until a
  // forwarder reads it (perhaps in another process: each page shows what its process accepted).
  private readonly ids = new BoundedMap<string, number>(10_000);
  private last = 0;
  private readonly sent = new BoundedMap<number, { body: string; destination: Destination }>(1_000);

  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly output: Output,
  ) {}

  accepted(request: AcceptedRequest): void {
    for (const event of request.events?.() ?? []) {
      this.last += 1;
      this.ids.set(String(event.messageId), this.last);
      const reason = request.source === undefined ? undefined : `source ${request.source}`;
      this.inspector.add(eventEntry(this.last, request, event, { verdict: "accepted", reason, answer: '{"success":true}' }));
    }
    // A rejected event is shown beside the accepted ones: the SDK was told 200, so here is where it shows.
    for (const rejection of request.rejected) {
      this.last += 1;
      const reason = `${rejection.where}: ${rejection.error.unsafeRaw()}`;
      this.inspector.add(eventEntry(this.last, request, rejection.sent, { verdict: "rejected", reason, answer: `rejected (${rejection.reason})` }));
    }
  }

  /** `request`: with subscriptions, the subscription request the attempt is of (its line names the subscription). */
  attempt(job: DeliveryJob, event: DeliveryEvent, destination: Destination, request?: SubscriptionRequest): void {
    const id = this.entryOf(job);
    if (id === undefined) return;
    if (job.prepared.ok && !this.sent.has(id))
      this.remember(id, request?.body ?? job.prepared.message.body, request === undefined ? destination : requestDestination(destination, request));
    if (event.type === "retry") {
      const retrying: InspectorDelivery = {
        state: "retrying",
        attempts: event.attempt,
        nextAttemptAt: new Date(Date.now() + event.delayMs).toISOString(),
        lastAnswer: describeOutcome(event.outcome),
      };
      this.inspector.update(id, (entry) => {
        entry.delivery = retrying;
      });
    }
    if (event.type !== "response") return;
    const text = `attempt ${event.attempt} to ${redactUrl(new URL(event.url))}: ${describeOutcome(event.outcome)} (${Math.round(event.durationMs)} ms)`;
    const ok = event.outcome.kind === "response" && event.outcome.status >= 200 && event.outcome.status < 300;
    // With subscriptions one answer is one subscription's: the event is delivered when it ends so (ended).
    const delivered =
      ok && request === undefined ? { state: "delivered" as const, status: (event.outcome as { status: number }).status, attempts: event.attempt } : undefined;
    this.inspector.update(id, (entry) => {
      entry.deliveries?.push({ text, outcome: ok ? "delivered" : "failed", subscription: request?.subscription });
      entry.durationMs = Math.round(event.durationMs);
      if (delivered !== undefined) entry.delivery = delivered;
    });
  }

  ended(job: DeliveryJob, outcome: JobOutcome, reason: string | undefined, report: DeliveryReport | undefined): void {
    const id = this.entryOf(job);
    const routes = job.prepared.ok ? job.prepared.message.routes : undefined;
    if (id === undefined || (outcome === "delivered" && routes === undefined)) return;
    this.inspector.update(id, (entry) => {
      if (outcome === "delivered") {
        deliveredToSubscriptions(entry, routes ?? [], report);
        return;
      }
      // Interrupted: back in the spool or the queue, to be delivered after the next start.
      if (outcome === "interrupted") {
        entry.delivery = { state: "pending" };
        return;
      }
      const text = `${outcome}${reason === undefined ? "" : `: ${reason}`}`;
      // Each attempt's line is there already: they are the attempts made.
      entry.delivery = { state: "failed", attempts: entry.deliveries?.length ?? 0, reason: outcome === "failed" ? (reason ?? outcome) : text };
      entry.deliveries?.push({ text, outcome: outcome === "skipped" ? "unchecked" : "failed" });
    });
  }

  async resend(id: number, request: ResendRequest): Promise<{ text: string; outcome: string } | { error: string }> {
    const delivered = this.sent.get(id);
    if (delivered === undefined) return { error: "this event has not been sent yet (or was skipped)" };
    const { destination, body } = delivered;
    const url = request.url ?? destination.targets[0]?.url.href ?? "";
    const result = await resendRequest(
      { method: destination.method, headers: {}, body: Buffer.from(request.body ?? body) },
      { url, resignWith: destination.sharedSecret, scheme: destination.scheme },
      this.env,
    ).catch((error: Error) => ({ text: `resend failed: ${error.message}`, outcome: "failed" as const }));
    this.inspector.update(id, (entry) => entry.resends.push({ text: result.text, outcome: result.outcome }));
    const c = this.output.err;
    this.output.log(`${result.outcome === "delivered" ? c.green("↻") : c.red("↻")} event ${id}: ${result.text}`);
    return { text: result.text, outcome: result.outcome };
  }

  /** What a resend sends, and where by default: the webhook, not the tracking API the event came to. */
  private remember(id: number, body: string, destination: Destination): void {
    this.sent.set(id, { body, destination });
    const first = destination.targets[0]?.url;
    if (first !== undefined)
      this.inspector.update(id, (entry) => {
        entry.resendTo = redactUrl(first);
      });
  }

  private entryOf(job: DeliveryJob): number | undefined {
    return this.ids.get(String((job.origin as { messageId?: unknown } | undefined)?.messageId));
  }
}

/**
 * An event delivered to each of its subscriptions: its attempts' lines are there, but for a
 * subscription that sent it in a batch after another event (a batch's attempts show on its first).
 */
function deliveredToSubscriptions(entry: InspectorEntry, routes: readonly Route[], report: DeliveryReport | undefined): void {
  const lines = entry.deliveries ?? [];
  const attempts = lines.length;
  for (const route of routes) {
    if (route.ok && !lines.some((line) => line.subscription === route.subscription && line.outcome === "delivered"))
      lines.push({ text: "delivered in a batch", outcome: "delivered", subscription: route.subscription });
  }
  const last = report?.targets.find((target) => target.result === "delivered")?.last;
  entry.delivery = { state: "delivered", status: last?.kind === "response" ? last.status : 200, attempts: Math.max(attempts, 1) };
}

/** An inspector entry for one event of a request: its body, type and user as the client sent them (shown as text, never markup). */
function eventEntry(
  id: number,
  request: AcceptedRequest,
  sent: unknown,
  { verdict, reason, answer }: { verdict: InspectorEntry["verdict"]; reason: string | undefined; answer: string },
): InspectorEntry {
  const accepted = verdict === "accepted";
  const event = isJsonObject(sent) ? sent : {};
  const body = JSON.stringify(sent) ?? "";
  return {
    id,
    kind: "event",
    receivedAt: typeof event.receivedAt === "string" ? event.receivedAt : new Date().toISOString(),
    method: "POST",
    path: request.path.unsafeRaw(),
    type: String(event.type ?? ""),
    event: typeof event.event === "string" ? event.event : "",
    user: userOf(event) ?? "",
    size: Buffer.byteLength(body),
    verdict,
    reason,
    headers: request.headers ?? {},
    body,
    status: 200,
    answer,
    resends: [],
    deliveries: [],
    delivery: accepted ? { state: "pending" } : undefined,
  };
}
