import type { IncomingMessage } from "node:http";
import { createGunzip, createInflate } from "node:zlib";
import type { TrackingErrorCode } from "../core/message/tracking.js";
import { decodeUtf8, NOT_UTF8 } from "./utf8.js";

// A tracking call's body as wh serve's HTTP side reads it (adapters/tracking-server.ts).

/** A body refused before it is parsed: the status and stable code of its error answer. */
export class BodyError extends Error {
  constructor(
    readonly status: number,
    readonly code: TrackingErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export /** The body as text, gunzipped or inflated when so encoded, refused past `max` bytes either way, or when not UTF-8. */
async function readBody(request: IncomingMessage, max: number): Promise<{ text: string; bytes: number }> {
  const encoding = (request.headers["content-encoding"] ?? "identity").toLowerCase();
  const declared = Number(request.headers["content-length"] ?? Number.NaN);
  const tooLarge = (): BodyError => new BodyError(400, "body_too_large", `the body is larger than ${max} bytes (the limit is --max-body)`);
  if (encoding === "identity" && declared > max) {
    request.resume();
    throw tooLarge();
  }
  let stream: NodeJS.ReadableStream = request;
  if (encoding === "gzip" || encoding === "x-gzip") stream = request.pipe(createGunzip());
  else if (encoding === "deflate") stream = request.pipe(createInflate());
  else if (encoding !== "identity") {
    request.resume();
    throw new BodyError(415, "unsupported_encoding", `Content-Encoding ${encoding} is not supported (gzip, deflate or none)`);
  }
  const chunks: Buffer[] = [];
  let length = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      length += chunk.length;
      if (length > max) {
        request.resume();
        throw tooLarge();
      }
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof BodyError) throw error;
    throw new BodyError(400, "invalid_request", `the body could not be read: ${(error as Error).message}`);
  }
  const body = Buffer.concat(chunks);
  const text = decodeUtf8(body);
  if (text === undefined) throw new BodyError(400, "invalid_request", `the body is ${NOT_UTF8}`);
  return { text, bytes: body.length };
}
