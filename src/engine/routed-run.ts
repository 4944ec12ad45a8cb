import { describeTargets } from "../core/delivery-record.js";
import type { DeliveryReport } from "../core/deliver.js";
import { describeUnmapped, planRequests, type Route, routeMessage, type SubscriptionRequest } from "../core/destination/route.js";
import type { SubscriptionSet } from "../core/destination/subscriptions.js";
import type { OrderedPool } from "../core/ordered-pool.js";
import type { DeliveryJob } from "./delivery-job.js";
import type { RunOptions } from "./run-deliveries.js";
import type { RunRecorder } from "./run-recorder.js";
import { sendUntilCut } from "./run-stop.js";

/** What the routed part of a run uses of the run: its pool, recorder, stop signal and rate. */
export interface RoutedRunContext {
  options: Pick<RunOptions, "sender" | "ordered" | "onDryRun" | "onDeliveryEvent">;
  pool: OrderedPool;
  recorder: RunRecorder;
  cut: AbortSignal;
  /** Waits for the next request's turn under --rate; false when the run stopped meanwhile. */
  waitForRate(): Promise<boolean>;
}

/** How one event's requests (one per subscription, or its place in a batch) ended so far. */
interface Tally {
  pending: number;
  failed: { subscription: string; report: DeliveryReport; batch: number }[];
  last: DeliveryReport | undefined;
  interrupted: boolean;
  unmapped: Route[];
}

/**
 * Sends events read together to their subscriptions: every request planRequests makes of them
 * (batches within these events), each its own delivery with its own retries. A user's requests to
 * one subscription go in order; an event ends when all of its requests have: delivered when all
 * were, failed naming the subscriptions that failed (its dead letter lists those not delivered,
 * so re-driving it sends only there). False when the run stopped meanwhile.
 */
export async function sendRouted(jobs: readonly DeliveryJob[], context: RoutedRunContext): Promise<boolean> {
  const { options, recorder } = context;
  const routes = jobs.map((job) => (job.prepared.ok ? (job.prepared.message.routes ?? []) : []));
  const requests = planRequests(routes);
  const tallies = routes.map((each): Tally => ({ pending: 0, failed: [], last: undefined, interrupted: false, unmapped: each.filter((route) => !route.ok) }));
  for (const request of requests) for (const index of request.events) (tallies[index] as Tally).pending += 1;
  const sender = options.sender;
  if (sender === undefined) {
    for (const request of requests)
      options.onDryRun?.(jobs[request.events[0] as number] as DeliveryJob, { body: request.body, signedText: request.signedText, request });
    for (const job of jobs) recorder.finish(job, "dry-run");
    return true;
  }
  for (const request of requests) {
    if (!(await context.waitForRate())) return false;
    const carried = request.events.map((index) => jobs[index] as DeliveryJob);
    const submitted = context.pool.submit(orderKeys(request, carried, options.ordered), async () => {
      const onEvent = options.onDeliveryEvent;
      const first = carried[0] as DeliveryJob;
      const report = await sendUntilCut(context.cut, carried, (signal) =>
        (sender.sendRequest as NonNullable<typeof sender.sendRequest>)(
          request,
          signal,
          onEvent === undefined ? undefined : (event) => onEvent(first, event, request),
        ),
      );
      for (const index of request.events) settle(jobs[index] as DeliveryJob, tallies[index] as Tally, request, report, recorder);
    });
    if (typeof submitted !== "boolean") await submitted;
  }
  return true;
}

/** A user's requests to one subscription keep their order; other subscriptions do not wait for them. */
function orderKeys(request: SubscriptionRequest, carried: readonly DeliveryJob[], ordered: boolean): string[] | undefined {
  if (!ordered) return undefined;
  const keys = new Set<string>();
  for (const job of carried) {
    const key = job.prepared.ok ? job.prepared.message.userKey : undefined;
    if (key !== undefined) keys.add(`${request.subscription}\u0000${key}`);
  }
  return [...keys];
}

function settle(job: DeliveryJob, tally: Tally, request: SubscriptionRequest, report: DeliveryReport, recorder: RunRecorder): void {
  tally.pending -= 1;
  tally.last = report;
  if (report.outcome === "failed") tally.failed.push({ subscription: request.subscription, report, batch: request.events.length });
  else if (report.outcome === "aborted") tally.interrupted = true;
  if (tally.pending > 0) return;
  const missed = [...tally.failed.map((failure) => failure.subscription), ...tally.unmapped.map((route) => route.subscription)];
  if (tally.interrupted) recorder.finish(job, "interrupted", report);
  else if (tally.failed.length > 0) {
    const failures = tally.failed.map(
      ({ subscription, report: failed, batch }) =>
        `subscription ${JSON.stringify(subscription)}${batch > 1 ? ` (in a batch of ${batch})` : ""}: ${describeTargets(failed)}`,
    );
    const unmapped = tally.unmapped.length === 0 ? [] : [describeUnmapped(tally.unmapped)];
    recorder.finish(job, "failed", tally.failed[0]?.report, [...failures, ...unmapped].join("; "), missed);
  } else if (tally.unmapped.length > 0) recorder.finish(job, "invalid", undefined, describeUnmapped(tally.unmapped), missed);
  else recorder.finish(job, "delivered", report);
}

/**
 * A forwarder's jobs routed to its destination's subscriptions as they are read (wh serve): the
 * store keeps each event as it was accepted, and which subscriptions get it, mapped how, is
 * decided when it is delivered, as Segment's pipeline does behind its tracking API.
 */
export async function* routeJobs(batches: AsyncIterable<readonly DeliveryJob[]>, set: SubscriptionSet): AsyncIterable<readonly DeliveryJob[]> {
  for await (const jobs of batches) {
    for (const job of jobs) job.prepared = await routeMessage(job.prepared, set);
    yield jobs;
  }
}
