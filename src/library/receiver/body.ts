import { ABORTED, type Rejected, TOO_LARGE } from "./verify-request.js";

export type BodyRead = { ok: true; bytes: Buffer } | Rejected;

/**
 * The bytes of a body (node:http's request, a fetch body, Fastify's payload), up to `maxBytes`.
 * Past it, reading stops: leaving the loop ends the stream, so the rest of a chunked body is
 * never taken in (the adapters answer 413 and close the connection). A body whose stream fails
 * (the client hung up mid-body) is `aborted`: the client's doing, not the app's failure.
 */
export async function readBody(body: AsyncIterable<Uint8Array | string>, maxBytes: number): Promise<BodyRead> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      size += bytes.byteLength;
      if (size > maxBytes) return TOO_LARGE;
      chunks.push(bytes);
    }
  } catch {
    return ABORTED;
  }
  return { ok: true, bytes: Buffer.concat(chunks, size) };
}

/** A declared Content-Length over the limit: refused before a byte is read. */
export function declaredTooLarge(contentLength: unknown, maxBytes: number): boolean {
  return typeof contentLength === "string" && Number(contentLength) > maxBytes;
}
