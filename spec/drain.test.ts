import { describe, expect, test } from "vitest";
import { closeTimeout, DEFAULT_CLOSE_TIMEOUT_MS, Drain } from "../src/shared/drain.ts";

describe("Drain", () => {
  test("closing with nothing in flight ends at once and refuses new calls", async () => {
    const drain = new Drain();
    expect(await drain.close(10_000)).toBe(true);
    expect(drain.closing).toBe(true);
    expect(drain.enter()).toBe(false);
  });

  test("closing waits for the calls in flight; every closer learns they ended", async () => {
    const drain = new Drain();
    expect(drain.enter()).toBe(true);
    expect(drain.enter()).toBe(true);
    const first = drain.close(10_000);
    const second = drain.close(10_000);
    expect(drain.enter()).toBe(false);
    drain.leave();
    let settled = false;
    void first.then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(settled).toBe(false);
    drain.leave();
    expect(await Promise.all([first, second])).toEqual([true, true]);
  });

  test("closing gives up on calls still in flight after its time limit", async () => {
    const drain = new Drain();
    drain.enter();
    expect(await drain.close(30)).toBe(false);
    drain.leave();
  });

  test("closeTimeout reads a whole number of milliseconds or gives the default", () => {
    expect(closeTimeout(undefined, "SqliteStore")).toBe(DEFAULT_CLOSE_TIMEOUT_MS);
    expect(closeTimeout(0, "SqliteStore")).toBe(0);
    expect(() => closeTimeout(1.5, "SqliteStore")).toThrow('SqliteStore option "closeTimeoutMs" must be a whole number of milliseconds');
    expect(() => closeTimeout("10", "Agent.close()", "timeoutMs")).toThrow('Agent.close() option "timeoutMs"');
  });
});
