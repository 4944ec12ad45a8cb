import { describe, expect, it } from "vitest";
import type { TransportResult } from "../../src/core/deliver.js";
import { type InFlightRequest, InFlightRequests } from "../../src/adapters/in-flight-requests.js";

/** A request under way that leaves the set the moment it is stopped, as PostHandler does before it is connected. */
function request(inFlight: InFlightRequests, signal: AbortSignal, timeoutMs: number, stopped: Map<string, TransportResult>, name: string): InFlightRequest {
  const each: InFlightRequest = {
    deadlineMs: Date.now() + timeoutMs,
    timeoutMs,
    signal,
    inFlightSlot: -1,
    stop(result) {
      stopped.set(name, result);
      inFlight.remove(each);
    },
  };
  inFlight.add(each);
  return each;
}

describe("InFlightRequests", () => {
  it("an aborted signal stops each of its requests once, and none of another signal's, however they were added and removed", () => {
    const inFlight = new InFlightRequests();
    const stopped = new Map<string, TransportResult>();
    const first = new AbortController();
    const second = new AbortController();
    const requests = Array.from({ length: 50 }, (_, index) => request(inFlight, index % 2 === 0 ? first.signal : second.signal, 60_000, stopped, `r${index}`));
    // Some end on their own first, from the middle, the start and the end; a second removal does nothing.
    for (const index of [10, 0, 49, 11, 10]) inFlight.remove(requests[index] as InFlightRequest);
    first.abort();
    const expected = [...Array(50).keys()].filter((index) => index % 2 === 0 && index !== 10 && index !== 0).map((index) => `r${index}`);
    expect([...stopped.keys()].sort()).toEqual(expected.sort());
    expect(new Set(stopped.values())).toEqual(new Set([{ kind: "error", code: "aborted", message: expect.any(String) }]));
    stopped.clear();
    second.abort();
    expect(stopped.size).toBe(25 - 2);
  });

  it("the sweep times out only the requests past their deadline, and the others stay until theirs", async () => {
    const inFlight = new InFlightRequests();
    const stopped = new Map<string, TransportResult>();
    const signal = new AbortController().signal;
    for (let index = 0; index < 20; index += 1) request(inFlight, signal, index % 4 === 0 ? 10 : 60_000, stopped, `r${index}`);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect([...stopped.keys()].sort()).toEqual(["r0", "r12", "r16", "r4", "r8"]);
    expect(stopped.get("r4")).toEqual({ kind: "error", code: "timeout", message: "no response within 10ms" });
  });
});
