import type { Destination } from "../../config/resolve.js";
import type { DeliveryReport } from "../../core/deliver.js";
import { deliveryRecord, describeTargets } from "../../core/delivery-record.js";
import { describeUnmapped, planRequests, routeMessage, type SubscriptionRequest } from "../../core/destination/route.js";
import type { SubscriptionSet } from "../../core/destination/subscriptions.js";
import type { PrepareResult } from "../../core/message/prepare.js";
import type { Deliverer } from "../../engine/deliverer.js";
import { requestDestination } from "../../engine/request-destination.js";
import { printDryRun, renderVerboseEvent } from "../output/dry-run.js";
import { type Output, renderDeliveryEvent } from "../output/render.js";

/** What `wh send` needs to send one message to a destination's subscriptions. */
export interface SubscriptionSend {
  output: Output;
  destination: Destination;
  subscriptions: SubscriptionSet;
  /** Absent in a dry run. */
  deliverer: Deliverer | undefined;
  signal: AbortSignal;
  verbose: boolean;
}

/**
 * `wh send` with subscriptions: the message goes to every enabled subscription whose trigger
 * matches, each its own request (a batching subscription's is an array of one, as performBatch
 * sends it). 0 when every one was delivered (or none matched), 1 when a mapping failed or a
 * delivery did, 130 when interrupted.
 */
export async function sendToSubscriptions(prepared: PrepareResult, send: SubscriptionSend): Promise<number> {
  const { output, destination } = send;
  const routed = await routeMessage(prepared, send.subscriptions);
  if (!routed.ok) {
    const type = prepared.ok ? prepared.message.type : "message";
    output.record({ type, messageId: prepared.ok ? (prepared.message.messageId ?? null) : null, outcome: "invalid", reason: routed.error });
    output.result(`${output.out.red("✖ invalid")} ${type}: ${routed.error}; nothing was sent`);
    return 1;
  }
  const { message } = routed;
  const base = { type: message.type, messageId: message.messageId ?? null };
  if (!message.enabled) {
    output.record({ ...base, outcome: "skipped", reason: message.skipReason ?? null });
    output.result(`${output.out.yellow("skipped")} ${message.type}: ${message.skipReason}; nothing was sent`);
    return 0;
  }
  const routes = message.routes ?? [];
  const unmapped = routes.filter((route) => !route.ok);
  if (unmapped.length > 0) {
    output.record({ ...base, outcome: "invalid", subscriptions: unmapped.map((route) => route.subscription), reason: describeUnmapped(unmapped) });
    output.result(`${output.out.red("✖ invalid")} ${message.type}: ${describeUnmapped(unmapped)}; not sent there`);
  }
  const requests = planRequests([routes]);
  if (send.deliverer === undefined) {
    for (const request of requests) printDryRun(output, { body: request.body, signedText: request.signedText, request }, destination, base);
    return unmapped.length > 0 ? 1 : 0;
  }
  const deliverer = send.deliverer;
  const reports = await Promise.all(requests.map((request) => deliverOne(deliverer, request, send, base)));
  if (reports.some((report) => report.outcome === "aborted")) return 130;
  return unmapped.length === 0 && reports.every((report) => report.outcome === "delivered") ? 0 : 1;
}

async function deliverOne(deliverer: Deliverer, request: SubscriptionRequest, send: SubscriptionSend, base: Record<string, unknown>): Promise<DeliveryReport> {
  const { output } = send;
  const target = requestDestination(send.destination, request);
  const label = `${base.type} → ${JSON.stringify(request.subscription)}`;
  const report = await deliverer.deliverRequest(request, send.destination, {
    signal: send.signal,
    onEvent: (event) => {
      if (send.verbose) renderVerboseEvent(output, label, request.signedText ?? request.body, target, event);
      renderDeliveryEvent(output, event, label, send.verbose);
    },
  });
  output.record({ ...base, subscription: request.subscription, ...deliveryRecord(report) });
  const c = output.out;
  const what = `${base.type}${base.messageId === null ? "" : ` ${base.messageId}`} (subscription ${JSON.stringify(request.subscription)})`;
  const tries = `${report.attempts} attempt${report.attempts === 1 ? "" : "s"}`;
  if (report.outcome === "delivered") output.result(`${c.green("✔ delivered")} ${what} to ${report.deliveredTo} (${tries})`);
  else if (report.outcome === "aborted") output.result(`${c.yellow("✖ interrupted")} ${what} before it was delivered (${tries})`);
  else output.result(`${c.red("✖ failed")} ${what}: ${describeTargets(report)}`);
  return report;
}
