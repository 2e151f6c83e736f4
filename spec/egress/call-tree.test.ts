import { describe, expect, test } from "vitest";
import { CallTreeEgress, TREE_FETCHES_IN_FLIGHT } from "../../src/egress/index.ts";

describe("a call tree's requests in flight", () => {
  test("past the limit a request waits; a slot let go passes to the longest waiting, once however often it is let go", async () => {
    const tree = new CallTreeEgress();
    const signal = new AbortController().signal;
    const held = await Promise.all(Array.from({ length: TREE_FETCHES_IN_FLIGHT }, () => tree.slot(signal)));
    const order: string[] = [];
    const first = tree.slot(signal).then((release) => (order.push("first"), release));
    const second = tree.slot(signal).then((release) => (order.push("second"), release));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(order).toEqual([]);
    held[0]!();
    held[0]!();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(order).toEqual(["first"]);
    held[1]!();
    expect(await second).toBeTypeOf("function");
    expect(order).toEqual(["first", "second"]);
    for (const release of [...held.slice(2), await first, await second]) release!();
    // All let go: a full set can be taken again at once.
    const again = await Promise.all(Array.from({ length: TREE_FETCHES_IN_FLIGHT }, () => tree.slot(signal)));
    expect(again.every((release) => typeof release === "function")).toBe(true);
  });

  test("a request whose call ends while it waits gets no slot, and takes none from those after it", async () => {
    const tree = new CallTreeEgress();
    const signal = new AbortController().signal;
    const held = await Promise.all(Array.from({ length: TREE_FETCHES_IN_FLIGHT }, () => tree.slot(signal)));
    const ending = new AbortController();
    const given = tree.slot(ending.signal);
    const later = tree.slot(signal);
    ending.abort();
    expect(await given).toBeUndefined();
    held[0]!();
    expect(await later).toBeTypeOf("function");
    const ended = new AbortController();
    ended.abort();
    expect(await tree.slot(ended.signal)).toBeUndefined();
  });
});
