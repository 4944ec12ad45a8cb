import type { IncomingHttpHeaders } from "node:http";
import { refusalReason } from "./explain-signature.js";
import { isJsonObject } from "./message/parse-json.js";
import { redactHeaders, redactRequestTarget } from "./redact.js";
import { SIGNATURE_HEADER, verifyBody } from "./sign.js";
import { STANDARD_FAILURES, verifyStandard, WEBHOOK_ID_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from "./standard-webhooks.js";

/**
 * A request as `wh listen --out` captures it: one NDJSON record, enough to verify its signature
 * again and to send it again. A batch (a JSON array body) is one record per event, each with the
 * request's headers and its place in the batch, so that `wh replay` sends the events again.
 */
export interface CaptureRecord {
  receivedAt: string;
  method: string;
  /** As received, secret-looking query values masked (see core/redact). */
  path: string;
  /** As received, credentials masked (core/redact.ts isCredentialHeader: not X-Signature). */
  headers: Record<string, string>;
  /** The body's exact text (for a batch record, the event's JSON). */
  body: string;
  batch?: { index: number; count: number };
}

/** The capture lines of one request (no newlines): one record, or one per event of a batch. */
export function captureLines(request: { receivedAt: Date; method: string; path: string; headers: IncomingHttpHeaders; body: Buffer }, json: unknown): string[] {
  const base = {
    receivedAt: request.receivedAt.toISOString(),
    method: request.method,
    path: redactRequestTarget(request.path),
    headers: redactHeaders(request.headers),
  };
  if (Array.isArray(json))
    return json.map((event, index) => JSON.stringify({ ...base, body: JSON.stringify(event), batch: { index, count: json.length } } satisfies CaptureRecord));
  return [JSON.stringify({ ...base, body: request.body.toString("utf8") } satisfies CaptureRecord)];
}

/** A parsed NDJSON value that is a capture record (not a message): its fields, else undefined. */
export function asCaptureRecord(value: unknown): CaptureRecord | undefined {
  if (!isJsonObject(value)) return undefined;
  const isRecord =
    typeof value.body === "string" &&
    typeof value.method === "string" &&
    typeof value.path === "string" &&
    typeof value.receivedAt === "string" &&
    typeof value.headers === "object" &&
    value.headers !== null;
  return isRecord ? (value as unknown as CaptureRecord) : undefined;
}

export type CaptureVerdict = "valid" | "valid-batch" | "batch-event" | "invalid" | "missing";

/**
 * Whether a captured request's X-Signature (or, given `standard`, its Standard Webhooks headers)
 * holds for its exact body under `secret`; for an invalid one, what most likely went wrong. A batch's later events are not signed on their own
 * (Segment signs a batch over its first event): they are `batch-event`.
 */
export function verifyCapture(secret: string, record: CaptureRecord, standard?: { toleranceSeconds: number }): { verdict: CaptureVerdict; reason?: string } {
  if (standard !== undefined) return verifyStandardCapture(secret, record, standard.toleranceSeconds);
  const signature = headerOf(record, SIGNATURE_HEADER);
  const body = Buffer.from(record.body, "utf8");
  if (signature === undefined) return { verdict: "missing", reason: refusalReason(secret, body, signature) };
  if (record.batch !== undefined && record.batch.index > 0)
    return { verdict: "batch-event", reason: `event ${record.batch.index + 1} of ${record.batch.count} of a batch signed over its first event` };
  const verdict = verifyBody(secret, body, signature);
  // A batch's first event is recorded as that event's text, which is what the signature covers.
  if (verdict.ok) return { verdict: verdict.kind === "batch" || record.batch !== undefined ? "valid-batch" : "valid" };
  return { verdict: "invalid", reason: refusalReason(secret, body, signature) };
}

function headerOf(record: CaptureRecord, name: string): string | undefined {
  return Object.entries(record.headers).find(([each]) => each.toLowerCase() === name.toLowerCase())?.[1];
}

/**
 * A captured request's Standard Webhooks headers, its timestamp judged against when it was
 * received (a capture checked a day later still holds). Standard Webhooks signs a batch's whole
 * body, which the capture keeps as one record per event: those cannot be checked.
 */
function verifyStandardCapture(secret: string, record: CaptureRecord, toleranceSeconds: number): { verdict: CaptureVerdict; reason?: string } {
  if (record.batch !== undefined)
    return { verdict: "batch-event", reason: `event ${record.batch.index + 1} of ${record.batch.count} of a batch, whose signature covers the whole body` };
  const headers = {
    id: headerOf(record, WEBHOOK_ID_HEADER),
    timestamp: headerOf(record, WEBHOOK_TIMESTAMP_HEADER),
    signature: headerOf(record, WEBHOOK_SIGNATURE_HEADER),
  };
  const result = verifyStandard(secret, headers, record.body, { nowMs: Date.parse(record.receivedAt), toleranceSeconds });
  if (result.ok) return { verdict: "valid" };
  return { verdict: result.reason === "missing-signature" ? "missing" : "invalid", reason: STANDARD_FAILURES[result.reason] };
}
