import { describe, expect, test } from "vitest";
import { SerialQueue } from "../../src/state/agent-state.ts";

describe("an agent's queue", () => {
  test("a task queued while none waits starts at once; one queued behind others starts only after they ended, in order", async () => {
    const queue = new SerialQueue();
    const events: string[] = [];
    let finishFirst!: () => void;
    const first = queue.run(async () => {
      events.push("first started");
      await new Promise<void>((resolve) => (finishFirst = resolve));
      events.push("first ended");
      return 1;
    });
    expect(events).toEqual(["first started"]);
    const second = queue.run(async () => {
      events.push("second started");
      return 2;
    });
    const third = queue.run(() => {
      events.push("third started");
      throw new Error("third failed");
    });
    const fourth = queue.run(async () => {
      events.push("fourth started");
      return 4;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(events).toEqual(["first started"]);
    finishFirst();
    expect(await first).toBe(1);
    expect(await second).toBe(2);
    await expect(third).rejects.toThrow("third failed");
    expect(await fourth).toBe(4);
    expect(events).toEqual(["first started", "first ended", "second started", "third started", "fourth started"]);
  });

  test("a task queued from inside the first steps of a task that started at once waits for that task's end", async () => {
    const queue = new SerialQueue();
    const events: string[] = [];
    let inner: Promise<void> | undefined;
    const outer = queue.run(async () => {
      events.push("outer started");
      inner = queue.run(async () => {
        events.push("inner started");
      });
      await new Promise((resolve) => setTimeout(resolve, 10));
      events.push("outer ended");
    });
    await outer;
    await inner;
    expect(events).toEqual(["outer started", "outer ended", "inner started"]);
  });

  test("a task that throws before its first await, queued while none waits, rejects its own promise and the queue goes on", async () => {
    const queue = new SerialQueue();
    const failing = queue.run((() => {
      throw new Error("at once");
    }) as () => Promise<never>);
    await expect(failing).rejects.toThrow("at once");
    expect(await queue.run(async () => "next")).toBe("next");
  });
});
