import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "vitest";
import { runInProcess } from "../../helpers/in-process.js";

// Receivers for wh check's tests, written as a developer would write them, and how a test runs wh
// check against one (test/cli/commands/check.test.ts; test-packages/frameworks/check-docs-sample.test.ts,
// whose receiver is an Express app).

export const SECRET = "s3cret-check";

export type Answer = (request: IncomingMessage, body: Buffer, response: ServerResponse) => void;

export interface Receiver {
  url: string;
  /** How many requests arrived. */
  count(): number;
  close(): Promise<void>;
}

const receivers: Receiver[] = [];

/** Closes every receiver started so far: call it from afterEach. */
export async function closeReceivers(): Promise<void> {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
}

export async function startReceiver(answer: Answer): Promise<Receiver> {
  let count = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      count += 1;
      answer(request, Buffer.concat(chunks), response);
    });
  });
  return listening(server, () => count);
}

export async function listening(server: Server, count: () => number): Promise<Receiver> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const receiver = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    count,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  receivers.push(receiver);
  return receiver;
}

export function hmac(bytes: Buffer | string): Buffer {
  return createHmac("sha1", SECRET).update(bytes).digest();
}

export function signatureMatches(request: IncomingMessage, signed: Buffer | string): boolean {
  const given = Buffer.from(String(request.headers["x-signature"] ?? ""), "hex");
  const expected = hmac(signed);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** What a correct receiver signs: the raw bytes, or a batch's first event as Segment serialises it. */
export function correctlySigned(body: Buffer): Buffer | string {
  return body[0] === 0x5b ? JSON.stringify((JSON.parse(body.toString("utf8")) as unknown[])[0]) : body;
}

export function answer(response: ServerResponse, status: number, text = ""): void {
  response.writeHead(status, { "content-type": "text/plain" });
  response.end(text);
}

/** Verifies with `signed`, then lets `then` answer (default 200). */
export function verifying(
  signed: (body: Buffer) => Buffer | string,
  then: Answer = (_request, _body, response) => answer(response, 200, "ok"),
  refusal = 401,
): Answer {
  return (request, body, response) => (signatureMatches(request, signed(body)) ? then(request, body, response) : answer(response, refusal, "bad signature"));
}

export async function check(receiver: Receiver, args: readonly string[] = [], options: Parameters<typeof runInProcess>[1] = {}) {
  return runInProcess(["check", receiver.url, "--secret", SECRET, ...args], options);
}

/** The cases of --json output by outcome. */
export function outcomes(stdout: string): Record<string, string[]> {
  const records = stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { case?: string; outcome?: string });
  const by: Record<string, string[]> = {};
  for (const record of records) {
    if (record.case === undefined) continue;
    const outcome = record.outcome as string;
    by[outcome] = [...(by[outcome] ?? []), record.case];
  }
  return by;
}

/** wh check's advisory for a receiver that verifies JSON.stringify of the parsed body, as its --json record says it. */
export function expectReserialisationAdvisory(stdout: string): void {
  const record = JSON.parse(stdout.split("\n").find((line) => line.includes('"unicode-escaped"')) as string);
  expect(record.reason).toMatch(/^refused the exact bytes \(HTTP 40[01]: bad signature\) but accepted the same event as JSON\.stringify writes it/);
  expect(record.reason).toContain("your receiver verifies JSON.stringify(req.body), not the raw bytes it received");
  expect(record.reason).toContain(
    "That holds with Segment, whose bodies are JSON.stringify's own bytes; the risk: a body written or re-encoded by anything else",
  );
}
