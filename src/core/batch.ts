/** The largest batch request body, in bytes (the seed's 500 KB). */
export const MAX_BATCH_BYTES = 500_000;

/** The most messages in one batch (Segment's HTTP API limit): the client never sends more, and `wh serve` rejects those past it. */
export const MAX_BATCH_MESSAGES = 2_500;

/**
 * The most events in one request of Segment's Actions destination (a JSON array). Here, apart from
 * the config schema, so that the flag tables, which every start of wh loads, do not load zod.
 */
export const MAX_ACTIONS_BATCH_SIZE = 4_000;

/** The body of one batch request, built from messages serialised once. */
export function batchBody(messages: readonly string[], sentAt: string): string {
  return `{"batch":[${messages.join(",")}],"sentAt":${JSON.stringify(sentAt)}}`;
}

/** The bytes of a batch body around its messages (the sentAt time is always 24 characters). */
const BATCH_OVERHEAD_BYTES = batchBody([], new Date(0).toISOString()).length;

/**
 * Whether one more message of `messageBytes` fits in a batch that holds `count` messages of
 * `bytes` in all, without the body passing MAX_BATCH_BYTES (commas counted) or the batch
 * passing MAX_BATCH_MESSAGES.
 */
export function fitsInBatch(count: number, bytes: number, messageBytes: number): boolean {
  return count < MAX_BATCH_MESSAGES && BATCH_OVERHEAD_BYTES + bytes + messageBytes + count <= MAX_BATCH_BYTES;
}

/**
 * One request of Segment's Actions destination for several events: their JSON array, and what
 * its X-Signature covers, the first event's own bytes (later events are not covered).
 */
export function actionsBatch(bodies: readonly string[]): { body: string; signedText: string | undefined } {
  return { body: `[${bodies.join(",")}]`, signedText: bodies[0] };
}
