import { type Counter, type Histogram, Registry } from "../../core/prometheus.js";

/** The /metrics of `wh serve`: what accepting and forwarding count; each store adds its own gauges. */
export class ServeMetrics {
  readonly registry = new Registry();
  readonly requests: Counter = this.registry.counter("wh_serve_requests_total", "Requests to the tracking API, by HTTP status answered.");
  readonly accepted: Counter = this.registry.counter("wh_serve_events_accepted_total", "Events accepted (stored, answered 200).");
  readonly rejected: Counter = this.registry.counter(
    "wh_serve_events_rejected_total",
    "Events dropped from a request that was taken (answered 200), by reason.",
  );
  readonly duplicates: Counter = this.registry.counter("wh_serve_events_duplicate_total", "Events dropped as duplicates of a recent messageId.");
  readonly ended: Counter = this.registry.counter(
    "wh_serve_events_total",
    "Events whose delivery ended, by outcome (delivered, skipped, failed, invalid); a skip by its kind (integrations, filtered, unmatched).",
  );
  readonly latency: Histogram = this.registry.histogram(
    "wh_serve_delivery_latency_seconds",
    "Time from accepting an event to its delivery.",
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600],
  );
}
