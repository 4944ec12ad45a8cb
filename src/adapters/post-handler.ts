import type { IncomingHttpHeaders } from "node:http";
import type { Dispatcher } from "undici";
import type { TransportResult } from "../core/deliver.js";
import type { InFlightRequest, InFlightRequests } from "./in-flight-requests.js";
import { describeError } from "./transport-errors.js";

/** An answer's body is kept up to this many bytes, for reports. */
const BODY_EXCERPT_BYTES = 1024;

/**
 * One request under way, as undici's dispatch handler (its controller API): no body stream, one
 * object per request. It ends in one TransportResult: the answer, the error undici reports, or
 * what the sweeper or the abort listener stopped it with, whichever comes first.
 */
export class PostHandler implements Dispatcher.DispatchHandler, InFlightRequest {
  readonly deadlineMs: number;
  private stopped: TransportResult | undefined;
  private controller: Dispatcher.DispatchController | undefined;
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
    if (this.controller !== undefined) this.controller.abort(new Error(result.kind === "error" ? result.message : "stopped"));
    // Not connected yet (a TCP connect or TLS handshake that hangs): undici hands over the
    // controller only once connected, or fails at its connect timeout (10 s unless
    // connectTimeoutMs). The attempt ends now; the request is aborted if undici reaches
    // onRequestStart, and its end is ignored.
    else this.settle(result);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.stopped !== undefined) controller.abort(new Error("stopped"));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.status = statusCode;
    const success = statusCode >= 200 && statusCode < 300;
    if (!success) {
      this.retryAfter = firstValue(headers["retry-after"]);
      if (statusCode >= 300 && statusCode < 400) this.location = firstValue(headers.location);
    }
    // A 2xx answer's body is read and dropped (the hot path of replay) unless --verbose shows it.
    if (!success || this.keepEveryBody) this.body = [];
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.body !== undefined && this.bodyBytes < BODY_EXCERPT_BYTES) {
      const piece = chunk.subarray(0, BODY_EXCERPT_BYTES - this.bodyBytes);
      this.body.push(Buffer.from(piece));
      this.bodyBytes += piece.length;
    }
  }

  onResponseEnd(): void {
    const body = this.body === undefined ? undefined : Buffer.concat(this.body).toString("utf8");
    this.settle(
      this.stopped ?? {
        kind: "response",
        status: this.status,
        retryAfter: this.retryAfter,
        ...(this.location === undefined ? {} : { location: this.location }),
        ...(body === undefined ? {} : { body }),
      },
    );
  }

  /** (Its controller is missing when the request failed before it was connected.) */
  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    this.settle(this.stopped ?? describeError(error));
  }

  /** Called once when stopped before connecting, and again when undici ends the request: the first result counts. */
  private settle(result: TransportResult): void {
    this.inFlight.remove(this);
    this.inFlight.answer(this.resolve, result);
  }
}

/** A header undici received more than once comes as a list: the first counts, as it did in the raw list. */
function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
