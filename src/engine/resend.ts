import type { IncomingHttpHeaders } from "node:http";
import { forwardableHeaders } from "../adapters/listen-server.js";
import type { Destination, HttpMethod } from "../config/resolve.js";
import { describeOutcome, type DeliveryReport } from "../core/deliver.js";
import { redactUrl } from "../core/redact.js";
import { SIGNATURE_HEADER } from "../core/sign.js";
import { type SigningScheme, WEBHOOK_ID_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from "../core/standard-webhooks.js";
import { createDeliverer } from "./deliverer.js";

/** Headers the delivery engine sets itself: the original request's are not sent twice. */
const ENGINE_HEADERS = new Set(["content-type", "user-agent", "content-length"]);
/** The signature headers of both schemes: a re-signed request drops whichever it came with. */
const SIGNATURE_HEADERS = new Set([SIGNATURE_HEADER.toLowerCase(), WEBHOOK_ID_HEADER, WEBHOOK_TIMESTAMP_HEADER, WEBHOOK_SIGNATURE_HEADER]);

export interface ResendResult {
  text: string;
  outcome: "delivered" | "failed";
  report: DeliveryReport;
}

/**
 * Sends a received request again through the delivery engine, one attempt: its exact bytes with
 * its headers (X-Signature included as it came), or re-signed with `secret` by `scheme` (the old
 * signature dropped) when `resignWith` is given.
 */
export async function resendRequest(
  request: { method: string; headers: IncomingHttpHeaders; body: Buffer },
  target: { url: string; resignWith?: string | undefined; scheme?: SigningScheme | undefined },
  env: NodeJS.ProcessEnv,
): Promise<ResendResult> {
  const url = new URL(target.url);
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error(`${target.url} is not an http or https URL`);
  const headers = Object.fromEntries(
    Object.entries(forwardableHeaders(request.headers)).filter(
      ([name]) => !ENGINE_HEADERS.has(name.toLowerCase()) && !(target.resignWith !== undefined && SIGNATURE_HEADERS.has(name.toLowerCase())),
    ),
  );
  const method = (["POST", "PUT", "PATCH"].includes(request.method) ? request.method : "POST") as HttpMethod;
  const destination: Destination = {
    source: undefined,
    writeKey: undefined,
    enabled: true,
    targets: [{ url, headers }],
    sharedSecret: target.resignWith,
    secretOrigin: undefined,
    scheme: target.scheme ?? "segment",
    mode: "actions",
    method,
    batchSize: 1,
    timeoutMs: 5_000,
  };
  // No CA files, so no directory to read them from.
  const deliverer = await createDeliverer(
    { configPath: undefined, destinations: [destination], caFiles: [], cwd: "/", timeoutMs: 5_000, retryWindowMs: 60_000, maxAttempts: 1 },
    { env, keepEveryBody: true },
  );
  try {
    const report = await deliverer.deliver(request.body.toString("utf8"), destination);
    const last = report.targets[0]?.last;
    const how = target.resignWith === undefined ? "as it came" : "re-signed";
    return {
      text: `resent ${how} to ${redactUrl(url)}: ${describeOutcome(last)} (${Math.round(report.durationMs)} ms)`,
      outcome: report.outcome === "delivered" ? "delivered" : "failed",
      report,
    };
  } finally {
    await deliverer.close();
  }
}
