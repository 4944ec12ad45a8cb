import type { InspectorEntry } from "../../adapters/inspector/server.js";
import { readLastLines } from "../../adapters/tail-lines.js";
import { asCaptureRecord, type CaptureRecord, verifyCapture } from "../../core/capture.js";
import type { EventMatch } from "../../core/listen-routes.js";
import { parseJson } from "../../core/message/parse-json.js";
import { userOf } from "../../core/shard.js";

/** As many earlier captures as the page keeps entries. */
const EARLIER = 1_000;

/** The columns the page shows of a body's event (a batch: its first, typed as the batch). */
export function eventColumns(json: unknown): { type: string; event: string; user: string } {
  const first = Array.isArray(json) ? (json[0] as unknown) : json;
  const fields = typeof first === "object" && first !== null ? (first as Record<string, unknown>) : {};
  const type = Array.isArray(json) ? `batch of ${json.length}` : typeof fields.type === "string" ? fields.type : "";
  return { type, event: typeof fields.event === "string" ? fields.event : "", user: userOf(fields) ?? "" };
}

/**
 * The requests a `--out` capture already holds (its last 1,000 records), as the page shows them
 * when `wh listen --ui --out FILE` starts: marked earlier, numbered 1… before this run's, their
 * verdicts checked again with this run's secret, those --filter leaves out left out. What they
 * were answered is not recorded; they cannot be resent from the page (wh replay FILE
 * --message-id can).
 */
export async function earlierEntries(path: string, secret: string | undefined, filter: EventMatch | undefined): Promise<InspectorEntry[]> {
  const entries: InspectorEntry[] = [];
  for (const line of await readLastLines(path, EARLIER)) {
    const parsed = parseJson(line);
    const record = parsed.ok ? asCaptureRecord(parsed.value) : undefined;
    if (record === undefined) continue;
    const body = parseJson(record.body);
    if (filter !== undefined && body.ok && !filter(body.value)) continue;
    entries.push(earlierEntry(entries.length + 1, record, body.ok ? body.value : undefined, secret));
  }
  return entries;
}

function earlierEntry(id: number, record: CaptureRecord, json: unknown, secret: string | undefined): InspectorEntry {
  const checked = secret === undefined ? undefined : verifyCapture(secret, record);
  // A batch's later event is not signed on its own: not a verdict of its own either.
  const verdict = checked === undefined || checked.verdict === "batch-event" ? "unchecked" : checked.verdict;
  return {
    id,
    kind: "request",
    earlier: true,
    receivedAt: record.receivedAt,
    method: record.method,
    path: record.path,
    ...eventColumns(json),
    size: Buffer.byteLength(record.body),
    verdict,
    reason: checked?.reason,
    headers: record.headers,
    body: record.body,
    status: 0,
    answer: "",
    resends: [],
  };
}
