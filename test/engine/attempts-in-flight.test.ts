import { describe, expect, it } from "vitest";
import type { TransportResult } from "../../src/core/deliver.js";
import { AttemptsInFlight } from "../../src/engine/attempts-in-flight.js";

/** A transport whose answers the test gives, one per request in order. */
function heldTransport(): { post: () => Promise<TransportResult>; answer(result?: TransportResult): void } {
  const pending: ((result: TransportResult) => void)[] = [];
  return {
    post: () => new Promise<TransportResult>((resolve) => pending.push(resolve)),
    answer: (result: TransportResult = { kind: "response", status: 200 }) => pending.shift()?.(result),
  };
}

const URL_ = new URL("http://127.0.0.1:9/hook");
const OPTIONS = { signal: new AbortController().signal, timeoutMs: 5_000 };

describe("AttemptsInFlight", () => {
  it("counts the requests on the wire, oldest first, and says when none is left, an aborted one included", async () => {
    const held = heldTransport();
    const inFlight = new AttemptsInFlight();
    const transport = inFlight.watch(held);
    let none = 0;
    inFlight.whenNone(() => {
      none += 1;
    });

    const first = transport.post(URL_, {}, "a", OPTIONS);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const second = transport.post(URL_, {}, "b", OPTIONS);
    expect(inFlight.count).toBe(2);
    // The first has been on the wire 20 ms at least; the second has just started.
    expect(inFlight.olderThan(10)).toBe(1);
    expect(inFlight.olderThan(3_600_000)).toBe(0);

    held.answer();
    await first;
    expect(inFlight.count).toBe(1);
    expect(none).toBe(0);
    held.answer({ kind: "error", code: "aborted", message: "cancelled" });
    await second;
    expect(inFlight.count).toBe(0);
    // Told a turn later, once whoever awaited the answer has taken it.
    expect(none).toBe(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(none).toBe(1);
  });

  it("does not say none is left when another request has started in the same turn", async () => {
    const held = heldTransport();
    const inFlight = new AttemptsInFlight();
    const transport = inFlight.watch(held);
    let none = 0;
    inFlight.whenNone(() => {
      none += 1;
    });
    const first = transport.post(URL_, {}, "a", OPTIONS);
    held.answer();
    await first;
    // A retry's next attempt, or the next event, goes on the wire before the turn ends.
    const next = transport.post(URL_, {}, "b", OPTIONS);
    await new Promise((resolve) => setImmediate(resolve));
    expect(none).toBe(0);
    held.answer();
    await next;
    await new Promise((resolve) => setImmediate(resolve));
    expect(none).toBe(1);
  });

  it("stops telling a listener once it has stopped listening", async () => {
    const held = heldTransport();
    const inFlight = new AttemptsInFlight();
    let none = 0;
    const stop = inFlight.whenNone(() => {
      none += 1;
    });
    stop();
    const request = inFlight.watch(held).post(URL_, {}, "a", OPTIONS);
    held.answer();
    await request;
    expect(none).toBe(0);
  });
});
