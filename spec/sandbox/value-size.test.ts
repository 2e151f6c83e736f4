import { describe, expect, test } from "vitest";
import { createEncoder } from "../../src/sandbox/prelude/encode.ts";
import { measureExpandedChars, ValueTooLargeError } from "../../src/sandbox/value-size.ts";

const encode = createEncoder();

/** Measures a value as the host would: encoded as the isolate encodes it, then measured on its nodes. */
function measure(value: unknown, limit = 10_000_000): number {
  const { root, nodes } = JSON.parse(encode(value, 10_000_000)) as { root: unknown; nodes: unknown[] };
  return measureExpandedChars(nodes, root, limit);
}

function laughs(levels: number, leaf: unknown = "lol"): unknown {
  let value: unknown = [leaf];
  for (let level = 0; level < levels; level += 1) value = [value, value];
  return value;
}

/** The measure by brute force: expand everything, a reference back to an enclosing node counting as the stand-in. */
function expanded(nodes: readonly unknown[], ref: number, ancestors: number[] = []): number {
  if (ancestors.includes(ref)) return 12;
  const node = nodes[ref];
  if (!Array.isArray(node)) throw new Error("test graphs hold arrays only");
  let chars = 2 + Math.max(0, node.length - 1);
  for (const child of node) chars += typeof child === "number" && child >= 0 ? expanded(nodes, child, [...ancestors, ref]) : 4;
  return chars;
}

describe("measuring a value's expanded JSON size on its node graph", () => {
  test.each([
    ["a string", "hello"],
    ["a number", 12.5],
    ["nested objects and arrays", { a: [1, "two", true, null, { b: false }], c: {}, d: [], "long key": "x".repeat(500) }],
    ["shared references within a tree", (() => { const shared = { n: 1 }; return { one: shared, two: [shared, shared] }; })()],
    ["a small billion-laughs value", laughs(10)],
  ])("plain JSON: %s measures as long as JSON.stringify writes it", (_name, value) => {
    expect(measure(value)).toBe(JSON.stringify(value).length);
  });

  test("a value with 2^1000 leaves is refused without being expanded", () => {
    expect(() => measure(laughs(1_000), 8_000_000)).toThrow(ValueTooLargeError);
  });

  test("a value with more nodes than the limit has characters is refused before it is walked", () => {
    const nodes = [Array.from({ length: 2_000 }, (_, index) => index + 1), ...Array.from({ length: 2_000 }, () => 0)];
    expect(() => measureExpandedChars(nodes, 0, 1_000)).toThrow(ValueTooLargeError);
  });

  test("a cycle counts as its stand-in", () => {
    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    expect(measure(cyclic)).toBe('{"name":"loop","self":"[Circular]"}'.length);
  });

  test("a node reached again below a different ancestor is measured again, not from the first measure", () => {
    // 3 refers back to 1: below 1 that is a cycle; below 2 it expands 1 once more, whose 3 is then the cycle.
    // [[[ "[Circular]" ]],[[[ "[Circular]" ]]]] — 3 + (2 + 2 + 12) + (2 + 2 + 2 + 12)
    const nodes = [[1, 2], [3], [3], [1]];
    expect(expanded(nodes, 0)).toBe(37);
    expect(measureExpandedChars(nodes, 0, 1_000)).toBe(37);
  });

  test("on random graphs with sharing and cycles, it agrees with expanding everything", () => {
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return Math.floor(seed / 2 ** 16) % n; // the high bits: an LCG's low bits repeat quickly
    };
    for (let round = 0; round < 300; round += 1) {
      const count = 1 + random(7);
      const nodes = Array.from({ length: count }, () => Array.from({ length: random(4) }, () => (random(5) === 0 ? -1 : random(count))));
      expect(measureExpandedChars(nodes, 0, Number.MAX_SAFE_INTEGER), JSON.stringify(nodes)).toBe(expanded(nodes, 0));
    }
  });

  test("stops at the limit with the limit it was given", () => {
    const error = (() => {
      try {
        measure("x".repeat(1_000), 100);
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ValueTooLargeError);
    expect((error as ValueTooLargeError).limit).toBe(100);
  });

  test("malformed references are measured as small, not thrown on (the decoder rejects them)", () => {
    // An array of four references (2 brackets + 3 commas), each invalid one counted as `null`.
    expect(measureExpandedChars([[1.5, "x", 99, -7]], 0, 1_000)).toBe(5 + 4 * 4);
    expect(measureExpandedChars([], "nothing", 1_000)).toBe(4);
  });
});
