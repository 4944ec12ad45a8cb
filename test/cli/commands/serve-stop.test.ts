import { once } from "node:events";
import { Agent, request } from "node:http";
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { makeTempDir } from "../../helpers/run-wh.js";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { basic, eventually, startServe } from "./serve-helpers.js";

const receiver = closedAfterEach();
const GRACE_MS = 400;

/** A bound on what must end, so that a hang fails with its reason rather than at the test's timeout. */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe("wh serve stopping while clients are connected", () => {
  it("ends once the grace has passed though a client stalled mid-request (its events unacknowledged), and ends a kept-alive connection at once", async () => {
    const hook = await receiver();
    const wh = await startServe(["--url", hook.url], { cwd: await makeTempDir(), timings: { graceMs: GRACE_MS } });
    const { port } = new URL(wh.url);
    const body = JSON.stringify({ batch: [{ type: "track", event: "Kept Alive", userId: "u1", messageId: "m-kept" }] });
    // A client that keeps its connection after its answer (as SDKs' agents do).
    const agent = new Agent({ keepAlive: true });
    const kept = await new Promise<{ status: number | undefined; socketClosed: Promise<unknown> }>((resolve, reject) => {
      const call = request(
        `${wh.url}/v1/batch`,
        { method: "POST", agent, headers: { authorization: basic("wk"), "content-type": "application/json" } },
        (response) => {
          response.resume();
          response.on("end", () => resolve({ status: response.statusCode, socketClosed: once(call.socket as NonNullable<typeof call.socket>, "close") }));
        },
      );
      call.on("error", reject);
      call.end(body);
    });
    expect(kept.status).toBe(200);
    // A client that sends the start of a request and no more.
    const stalled = connect(Number(port), "127.0.0.1");
    await once(stalled, "connect");
    const stalledClosed = once(stalled, "close");
    stalled.resume();
    stalled.write(
      `POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: ${basic("stalled")}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"batch":[{"type":"track","event":"Stalled"`,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    wh.child.kill("SIGTERM");
    const result = await within(30_000, "wh serve ending after SIGTERM with a client stalled mid-request", wh.exited);
    expect(result.code).toBe(0);
    await within(1_000, "the stalled client's connection closed by wh serve", stalledClosed);
    await within(1_000, "the kept-alive connection closed by wh serve", kept.socketClosed);
    agent.destroy();
    await eventually(() => hook.requests.length > 0, "the kept-alive client's event delivered");
    expect(hook.requests.map((each) => (JSON.parse(each.body.toString()) as { event: string }).event)).toEqual(["Kept Alive"]);
  });
});
