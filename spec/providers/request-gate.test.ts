import { describe, expect, test, vi } from "vitest";
import { gateOf, RequestGate } from "../../src/providers/request-gate.ts";
import { DEFAULT_MAX_CONCURRENT_REQUESTS, ScriptedProvider } from "../../src/index.ts";

const signal = () => new AbortController().signal;
const settledSoon = async (promise: Promise<unknown>) => Promise.race([promise.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 30))]);

describe("RequestGate", () => {
  test("at most `limit` turns at once; the next waiter gets a turn when one ends, in arrival order", async () => {
    const gate = new RequestGate(2);
    const first = await gate.acquire(signal());
    await gate.acquire(signal());
    const order: number[] = [];
    const third = gate.acquire(signal()).then((release) => (order.push(3), release));
    const fourth = gate.acquire(signal()).then((release) => (order.push(4), release));
    expect(gate).toMatchObject({ active: 2, queued: 2 });
    expect(await settledSoon(third)).toBe(false);
    first();
    first(); // ending a turn twice frees one turn only
    (await third)();
    await fourth;
    expect(order).toEqual([3, 4]);
    expect(gate).toMatchObject({ active: 2, queued: 0 });
  });

  test("a waiter whose signal aborts leaves the queue and rejects with the signal's reason", async () => {
    const gate = new RequestGate(1);
    const held = await gate.acquire(signal());
    const controller = new AbortController();
    const waiting = gate.acquire(controller.signal);
    controller.abort(new Error("gave up"));
    await expect(waiting).rejects.toThrow("gave up");
    expect(gate.queued).toBe(0);
    held();
    expect(gate.active).toBe(0);
  });

  test("after pauseFor, no turn is given until the pause is over", async () => {
    const gate = new RequestGate(5);
    gate.pauseFor(120);
    expect(gate.tryAcquire()).toBeUndefined();
    const started = performance.now();
    const release = await gate.acquire(signal());
    expect(performance.now() - started).toBeGreaterThanOrEqual(100);
    release();
  });

  test("a pause that ends between the gate's look at the clock and its timer still gives the waiter its turn", async () => {
    // The clock as the gate reads it: still paused when it checks, past the pause when it sets its timer.
    const readings = [1_000, 1_005, 1_009.9, 1_010.5];
    const now = vi.spyOn(performance, "now").mockImplementation(() => readings.shift() ?? 2_000);
    try {
      const gate = new RequestGate(5);
      gate.pauseFor(10);
      const waiting = gate.acquire(signal());
      expect(await settledSoon(waiting)).toBe(true);
      (await waiting)();
    } finally {
      now.mockRestore();
    }
  });

  test("each provider has one gate, sized by its maxConcurrentRequests", () => {
    const scripted = new ScriptedProvider({ programs: {}, maxConcurrentRequests: 4 });
    expect(gateOf(scripted)).toBe(gateOf(scripted));
    expect(gateOf(scripted).limit).toBe(4);
    expect(gateOf(new ScriptedProvider({ programs: {} })).limit).toBe(Number.POSITIVE_INFINITY);
    expect(gateOf({ generate: async () => ({ code: null, model: "x" }) }).limit).toBe(DEFAULT_MAX_CONCURRENT_REQUESTS);
  });
});
