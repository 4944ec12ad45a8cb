import type { Dispatcher } from "undici";
import type { TransportResult } from "../core/deliver.js";
import type { InFlightRequest, InFlightRequests } from "./in-flight-requests.js";
import { describeError } from "./transport-errors.js";

/** An answer's body is kept up to this many bytes, for reports. */
const BODY_EXCERPT_BYTES = 1024;

/**
 * One request under way, as undici's dispatch handler: no body stream, one object per request.
 * It ends in one TransportResult: the answer, the error undici reports, or what the sweeper or
 * the abort listener stopped it with, whichever comes first.
 *
 * It has undici's own hooks (onConnect, onHeaders, onData, onComplete, onError: those its
 * Request calls, and its request() implements), not the controller API (onRequestStart, …):
 * undici wraps a controller handler in an UnwrapHandler and an UnwrapController per request and
 * parses every answer's raw headers into an object for it. That layer was 1.09x replay's CPU per
 * event (issue 36); here the raw headers are read only when an answer is not 2xx.
 */
export class PostHandler implements Dispatcher.DispatchHandler, InFlightRequest {
  readonly deadlineMs: number;
  inFlightSlot = -1;
  private stopped: TransportResult | undefined;
  private abort: ((error: Error) => void) | undefined;
  private status = 0;
  private retryAfter: string | undefined;
  private location: string | undefined;
  /** The start of the body, collected only when it will be reported. */
  private body: Buffer[] | undefined;
  private bodyBytes = 0;

  constructor(
    private readonly resolve: (result: TransportResult) => void,
    private readonly inFlight: InFlightRequests,
    readonly signal: AbortSignal,
    readonly timeoutMs: number,
    private readonly keepEveryBody: boolean,
  ) {
    this.deadlineMs = Date.now() + timeoutMs;
  }

  stop(result: TransportResult): void {
    if (this.stopped !== undefined) return;
    this.stopped = result;
    if (this.abort !== undefined) this.abort(new Error(result.kind === "error" ? result.message : "stopped"));
    // Not connected yet (a TCP connect or TLS handshake that hangs): undici hands over the
    // abort function only once connected, or fails at its connect timeout (10 s unless
    // connectTimeoutMs). The attempt ends now; the request is aborted if undici reaches
    // onConnect, and its end is ignored.
    else this.settle(result);
  }

  onConnect(abort: (error?: Error) => void): void {
    this.abort = abort;
    if (this.stopped !== undefined) abort(new Error("stopped"));
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    this.status = statusCode;
    const success = statusCode >= 200 && statusCode < 300;
    if (!success) {
      this.retryAfter = rawHeader(rawHeaders, "retry-after");
      if (statusCode >= 300 && statusCode < 400) this.location = rawHeader(rawHeaders, "location");
    }
    // A 2xx answer's body is read and dropped (the hot path of replay) unless --verbose shows it.
    if (!success || this.keepEveryBody) this.body = [];
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.body !== undefined && this.bodyBytes < BODY_EXCERPT_BYTES) {
      const piece = chunk.subarray(0, BODY_EXCERPT_BYTES - this.bodyBytes);
      this.body.push(Buffer.from(piece));
      this.bodyBytes += piece.length;
    }
    return true;
  }

  onComplete(): void {
    if (this.stopped !== undefined) {
      this.settle(this.stopped);
      return;
    }
    // Built without spreads: `...(absent ? {} : { … })` made two objects more per answer.
    const result: TransportResult = { kind: "response", status: this.status, retryAfter: this.retryAfter };
    if (this.location !== undefined) result.location = this.location;
    if (this.body !== undefined) result.body = Buffer.concat(this.body).toString("utf8");
    this.settle(result);
  }

  /** Called before it was connected too (a refused connection, a TLS failure). */
  onError(error: Error): void {
    this.settle(this.stopped ?? describeError(error));
  }

  /** Called once when stopped before connecting, and again when undici ends the request: the first result counts. */
  private settle(result: TransportResult): void {
    this.inFlight.remove(this);
    this.inFlight.answer(this.resolve, result);
  }
}

/**
 * The first value of a header in undici's raw list (name, value, name, value, … as Buffers), as
 * its parseHeaders reads it: the name matched lower-cased, the value as latin1.
 */
function rawHeader(rawHeaders: readonly (Buffer | string)[], name: string): string | undefined {
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    const each = rawHeaders[index] as Buffer | string;
    if (each.length === name.length && each.toString("latin1").toLowerCase() === name) return (rawHeaders[index + 1] as Buffer | string).toString("latin1");
  }
  return undefined;
}
