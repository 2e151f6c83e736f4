import { serialize } from "node:v8";
import { describe, expect, test } from "vitest";
import { findUncloneable } from "../../src/call/arguments.ts";
import { SANDBOX_LIMITS } from "../../src/sandbox/limits.ts";

/** A list of `length` nodes, each linked to the next, all also held by one array: shallow to look at, deep to serialize. */
function linkedNodes(length: number): { nodes: object[] } {
  const nodes: { next?: object }[] = Array.from({ length }, () => ({}));
  nodes.forEach((node, index) => {
    if (index + 1 < length) node.next = nodes[index + 1];
  });
  return { nodes };
}

describe("findUncloneable: what can cross into the sandbox", () => {
  test("plain data, cycles and shared parts pass", () => {
    const shared = { n: 1 };
    const cyclic: { self?: unknown; list: unknown[] } = { list: [shared, shared, new Date(0), new Map([["k", shared]]), new Set([1]), new Uint8Array(2)] };
    cyclic.self = cyclic;
    expect(findUncloneable(cyclic, "args")).toBeUndefined();
  });

  test("a function, a symbol, a throwing getter or a SharedArrayBuffer is named by its path, however deep in a tree", () => {
    expect(findUncloneable({ a: [{ b: () => 1 }] }, "args")).toBe("args.a[0].b is a function");
    expect(findUncloneable({ a: Symbol("s") }, "kwargs")).toBe("kwargs.a is a symbol");
    const getter = Object.defineProperty({}, "secret", { enumerable: true, get: () => { throw new Error("no"); } });
    expect(findUncloneable({ x: getter }, "context")).toBe("context.x.secret has a getter that throws");
    expect(findUncloneable(new Map([["k", { s: new SharedArrayBuffer(1) }]]), "args")).toMatch(/^args\.get\("k"\)\.s is a SharedArrayBuffer/);
  });

  test("an inherited enumerable function is not copied by structured clone, and not refused", () => {
    const parent = { helper: () => 1 };
    const child = Object.create(parent) as object;
    Object.assign(child, { own: 1 });
    expect(findUncloneable({ child }, "args")).toBeUndefined();
  });

  test("depth counts as the serializer recurses: nodes linked one to the next are as deep as the list is long", () => {
    const limit = SANDBOX_LIMITS.maxValueDepth;
    expect(findUncloneable(linkedNodes(limit - 5), "args")).toBeUndefined();
    expect(findUncloneable(linkedNodes(limit + 5), "args")).toMatch(new RegExp(`nested deeper than ${limit} levels$`));
    // And past the stack the serializer has, which is what the limit guards.
    expect(() => serialize(linkedNodes(20_000))).toThrow(/call stack/);
  });

  test("a part reached first near the top is not counted again where it is reached deeper", () => {
    let shared: object = { leaf: true };
    for (let level = 0; level < 20; level += 1) shared = { shared };
    let chain: object = {};
    for (let level = 0; level < SANDBOX_LIMITS.maxValueDepth - 10; level += 1) chain = { chain, shared };
    // `shared` (20 deep) is met at depth 1 first; under the chain it is a back-reference the serializer does not enter.
    expect(findUncloneable({ shared, chain }, "args")).toBeUndefined();
    expect(() => serialize({ shared, chain })).not.toThrow();
    // Met first at the bottom of the chain, it is as deep as that.
    expect(findUncloneable({ chain, shared }, "args")).toMatch(/nested deeper than/);
  });
});
