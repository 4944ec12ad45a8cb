import type { IncomingHttpHeaders } from "node:http";
import { explainMismatch } from "./explain-signature.js";
import { SIGNATURE_HEADER, verifyBody } from "./sign.js";

/**
 * A request as `wh listen --out` captures it: one NDJSON record, enough to verify its signature
 * again and to send it again. A batch (a JSON array body) is one record per event, each with the
 * request's headers and its place in the batch, so that `wh replay` sends the events again.
 */
export interface CaptureRecord {
  receivedAt: string;
  method: string;
  path: string;
  /** As received, with credentials masked (Authorization, Cookie and the like). */
  headers: Record<string, string>;
  /** The body's exact text (for a batch record, the event's JSON). */
  body: string;
  batch?: { index: number; count: number };
}

/** Headers whose values are credentials: never written to a capture file or shown on the page. */
const CREDENTIAL_HEADERS = new Set(["authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key"]);

/** The headers with credentials masked: the scheme of an Authorization stays (`Bearer ****`). */
export function maskHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const masked: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const text = Array.isArray(value) ? value.join(", ") : value;
    if (!CREDENTIAL_HEADERS.has(name.toLowerCase())) masked[name] = text;
    else masked[name] = /^(\w+) /.test(text) ? `${(/^(\w+) /.exec(text) as RegExpExecArray)[1]} ****` : "****";
  }
  return masked;
}

/** The capture lines of one request (no newlines): one record, or one per event of a batch. */
export function captureLines(request: { receivedAt: Date; method: string; path: string; headers: IncomingHttpHeaders; body: Buffer }, json: unknown): string[] {
  const base = { receivedAt: request.receivedAt.toISOString(), method: request.method, path: request.path, headers: maskHeaders(request.headers) };
  if (Array.isArray(json)) return json.map((event, index) => JSON.stringify({ ...base, body: JSON.stringify(event), batch: { index, count: json.length } } satisfies CaptureRecord));
  return [JSON.stringify({ ...base, body: request.body.toString("utf8") } satisfies CaptureRecord)];
}

/** A parsed NDJSON value that is a capture record (not a message): its fields, else undefined. */
export function asCaptureRecord(value: unknown): CaptureRecord | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  const isRecord =
    typeof record.body === "string" && typeof record.method === "string" && typeof record.path === "string" && typeof record.receivedAt === "string" && typeof record.headers === "object" && record.headers !== null;
  return isRecord ? (record as unknown as CaptureRecord) : undefined;
}

export type CaptureVerdict = "valid" | "valid-batch" | "batch-event" | "invalid" | "missing";

/**
 * Whether a captured request's X-Signature holds for its exact body under `secret`; for an
 * invalid one, what most likely went wrong. A batch's later events are not signed on their own
 * (Segment signs a batch over its first event): they are `batch-event`.
 */
export function verifyCapture(secret: string, record: CaptureRecord): { verdict: CaptureVerdict; reason?: string } {
  const signature = Object.entries(record.headers).find(([name]) => name.toLowerCase() === SIGNATURE_HEADER.toLowerCase())?.[1];
  if (signature === undefined) return { verdict: "missing", reason: `no ${SIGNATURE_HEADER} header` };
  if (record.batch !== undefined && record.batch.index > 0) return { verdict: "batch-event", reason: `event ${record.batch.index + 1} of ${record.batch.count} of a batch signed over its first event` };
  const body = Buffer.from(record.body, "utf8");
  const verdict = verifyBody(secret, body, signature);
  // A batch's first event is recorded as that event's text, which is what the signature covers.
  if (verdict.ok) return { verdict: verdict.kind === "batch" || record.batch !== undefined ? "valid-batch" : "valid" };
  return { verdict: "invalid", reason: explainMismatch(secret, body, signature) };
}
