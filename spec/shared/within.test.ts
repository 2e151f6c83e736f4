import { describe, expect, it } from "vitest";
import { within } from "../../src/shared/index.ts";

const late = () => new Error("too late");

describe("within", () => {
  it("answers a value returned at once without a race", async () => {
    expect(await within(10, undefined, late, () => 42)).toEqual({ ok: true, value: 42 });
  });

  it("answers a promise's value, and a throw as threw", async () => {
    expect(await within(1_000, undefined, late, async () => "done")).toEqual({ ok: true, value: "done" });
    const failed = await within(1_000, undefined, late, async () => {
      throw new Error("broken");
    });
    expect(failed).toMatchObject({ ok: false, why: "threw", error: new Error("broken") });
  });

  it("ends work that never answers at its limit, aborting its signal with the time-out reason", async () => {
    let given: AbortSignal | undefined;
    const answer = await within(20, undefined, late, (signal) => {
      given = signal;
      return new Promise(() => undefined);
    });
    expect(answer).toMatchObject({ ok: false, why: "timeout", error: new Error("too late") });
    expect(given?.aborted).toBe(true);
    expect(given?.reason).toEqual(new Error("too late"));
  });

  it("ends the wait when the caller's signal aborts, with its reason, and stops listening to it", async () => {
    const caller = new AbortController();
    let given: AbortSignal | undefined;
    const waiting = within(60_000, caller.signal, late, (signal) => {
      given = signal;
      return new Promise(() => undefined);
    });
    caller.abort(new Error("cancelled"));
    expect(await waiting).toMatchObject({ ok: false, why: "aborted", error: new Error("cancelled") });
    expect(given?.reason).toEqual(new Error("cancelled"));
    const after = within(60_000, caller.signal, late, () => new Promise(() => undefined));
    expect(await after).toMatchObject({ ok: false, why: "aborted" });
  });

  it("starts work on an aborted signal with its own signal aborted, and a value answered at once still counts as aborted", async () => {
    const caller = new AbortController();
    caller.abort(new Error("gone"));
    let sawAborted = false;
    const answer = await within(1_000, caller.signal, late, (signal) => {
      sawAborted = signal.aborted;
      return 1;
    });
    expect(sawAborted).toBe(true);
    expect(answer).toMatchObject({ ok: false, why: "aborted", error: new Error("gone") });
  });

  it("removes its listener from the caller's signal once answered, however the wait ended", async () => {
    const caller = new AbortController();
    const added: unknown[] = [];
    const removed: unknown[] = [];
    const signal = caller.signal;
    type Listener = Parameters<AbortSignal["addEventListener"]>[1];
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = ((type: "abort", listener: Listener, options?: boolean | { once?: boolean }) => (added.push(listener), add(type, listener, options))) as typeof signal.addEventListener;
    signal.removeEventListener = ((type: "abort", listener: Listener) => (removed.push(listener), remove(type, listener))) as typeof signal.removeEventListener;
    await within(1_000, signal, late, async () => 1);
    await within(10, signal, late, () => new Promise(() => undefined));
    await within(1_000, signal, late, async () => Promise.reject(new Error("no")));
    expect(added).toHaveLength(3);
    expect(removed).toEqual(added);
  });

  it("leaves no unhandled rejection when work rejects after losing the race", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const answer = await within(10, undefined, late, () => new Promise((_, reject) => setTimeout(() => reject(new Error("later")), 30)));
      expect(answer).toMatchObject({ ok: false, why: "timeout" });
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("answers aborted for work on an aborted signal that hands back a promise already resolved, as for a value", async () => {
    const caller = new AbortController();
    caller.abort(new Error("gone"));
    expect(await within(1_000, caller.signal, late, async () => 1)).toMatchObject({ ok: false, why: "aborted", error: new Error("gone") });
    expect(await within(1_000, caller.signal, late, () => Promise.resolve(1))).toMatchObject({ ok: false, why: "aborted" });
  });

  it("answers a promise whose constructor getter throws as threw, leaving no unhandled rejection, even when the caller aborted meanwhile", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const caller = new AbortController();
      const answer = await within(1_000, caller.signal, late, () => {
        caller.abort(new Error("cancelled"));
        const odd = new Promise(() => undefined);
        Object.defineProperty(odd, "constructor", {
          get() {
            throw new Error("no constructor");
          },
        });
        return odd;
      });
      expect(answer).toMatchObject({ ok: false, error: new Error("no constructor") });
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("makes the time-out reason only when the time is up", async () => {
    let made = 0;
    await within(1_000, undefined, () => (made += 1, new Error("late")), async () => "quick");
    expect(made).toBe(0);
  });
});
