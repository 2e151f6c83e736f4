import { serialize } from "node:v8";
import { describe, expect, test } from "vitest";
import { findUncloneable } from "../../src/sandbox/crossing.ts";
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

  test("reads are bounded by a budget and the value's size, not by how often a large part is shared", () => {
    let reads = 0;
    const shared = {};
    for (let key = 0; key < 1_000; key += 1) Object.defineProperty(shared, `k${key}`, { enumerable: true, get: () => (reads += 1) });
    expect(findUncloneable(Array.from({ length: 2_000 }, () => shared), "args")).toBeUndefined();
    // Walked once per reference, it would be read 2,000,000 times.
    expect(reads).toBeLessThan(200_000);
  });

  test("a sparse array is walked by the entries it holds, not by its length", () => {
    let holeReads = 0;
    const sparse: unknown[] = [];
    sparse[100_000] = 1;
    // A hole read by index falls through to the prototype, which counts it.
    Object.setPrototypeOf(sparse, new Proxy(Array.prototype, {
      get: (target, key, receiver) => {
        if (typeof key === "string" && /^\d+$/.test(key)) holeReads += 1;
        return Reflect.get(target, key, receiver) as unknown;
      },
    }));
    expect(findUncloneable(sparse, "args")).toBeUndefined();
    expect(holeReads).toBe(0);
    const huge: unknown[] = [];
    huge[1e9] = 1;
    expect(findUncloneable(huge, "args")).toBeUndefined();
    huge[1e9] = () => 1;
    expect(findUncloneable(huge, "args")).toBe("args[1000000000] is a function");
  });

  test("an array's named properties are copied, so they are checked like an object's", () => {
    const list: unknown[] & { f?: unknown } = [1];
    list.f = () => 1;
    expect(() => serialize(list)).toThrow(/could not be cloned/);
    expect(findUncloneable([list], "args")).toBe("args[0].f is a function");
    // Nested through named properties alone, past the serializer's stack: too deep, not a crash.
    let chain: unknown[] & { x?: unknown } = [];
    for (let level = 0; level < 20_000; level += 1) {
      const next: unknown[] & { x?: unknown } = [];
      next.x = chain;
      chain = next;
    }
    expect(() => serialize(chain)).toThrow(/call stack/);
    expect(findUncloneable(chain, "args")).toMatch(/nested deeper than/);
  });

  test("a getter that throws on an array's index or named property is named, not thrown", () => {
    const throwing = { enumerable: true, get: () => { throw new Error("no"); } };
    expect(findUncloneable({ a: Object.defineProperty([1, 2], 1, throwing) }, "args")).toBe("args.a[1] has a getter that throws");
    expect(findUncloneable({ a: Object.defineProperty([1], "g", throwing) }, "args")).toBe("args.a.g has a getter that throws");
  });

  test("an Error's cause is copied with it (its other properties are not): a function or too deep a chain there is named", () => {
    expect(() => serialize(new Error("x", { cause: () => 1 }))).toThrow(/could not be cloned/);
    expect(findUncloneable({ e: new Error("x", { cause: () => 1 }) }, "args")).toBe("args.e.cause is a function");
    expect(findUncloneable(new Error("x", { cause: { list: [Symbol("s")] } }), "args")).toBe("args.cause.list[0] is a symbol");
    let chain = new Error("end");
    for (let level = 0; level < 20_000; level += 1) chain = new Error(`level ${level}`, { cause: chain });
    expect(() => serialize(chain)).toThrow(/call stack/);
    expect(findUncloneable(chain, "args")).toMatch(/^args\.cause\.cause.*nested deeper than/);
    // What the serializer leaves out is not refused: other own properties, and a cause behind a getter.
    const extra = Object.assign(new Error("x", { cause: { n: 1 } }), { helper: () => 1 });
    const behindGetter = Object.defineProperty(new Error("x"), "cause", { get: () => () => 1 });
    expect(() => serialize([extra, behindGetter])).not.toThrow();
    expect(findUncloneable([extra, behindGetter], "args")).toBeUndefined();
  });
});
