import { describe, expect, test } from "vitest";
import { createEncoder } from "../../src/sandbox/prelude/encode.ts";
import { decodeValue, MalformedValueError } from "../../src/sandbox/value-codec.ts";
import { ValueTooLargeError } from "../../src/sandbox/value-size.ts";

// The encoder is plain JavaScript, so it can be exercised here as well as inside the isolate.
const encode = createEncoder();
const roundTrip = (value: unknown) => decodeValue(encode(value, 1_000_000), 1_000_000);

describe("value codec", () => {
  test("round-trips JSON values and the special numbers", () => {
    expect(roundTrip({ a: [1, "two", true, null] })).toEqual({ a: [1, "two", true, null] });
    expect(roundTrip(undefined)).toBeUndefined();
    expect(roundTrip(Number.NaN)).toBeNaN();
    expect(roundTrip(-Infinity)).toBe(-Infinity);
    expect(Object.is(roundTrip(-0), -0)).toBe(true);
  });

  test("round-trips Date, Map, Set, BigInt, RegExp, errors and bytes", () => {
    const value = roundTrip({
      d: new Date("2024-01-02T03:04:05.678Z"),
      m: new Map<unknown, unknown>([[{ k: 1 }, "v"]]),
      s: new Set([1, "a"]),
      b: 2n ** 70n,
      r: /a+b/gi,
      e: new TypeError("bad"),
      u: new Uint16Array([1, 65535]),
      ab: new Uint8Array([9, 8]).buffer,
    }) as Record<string, unknown>;
    expect(value.d).toEqual(new Date("2024-01-02T03:04:05.678Z"));
    expect(value.m).toEqual(new Map([[{ k: 1 }, "v"]]));
    expect(value.s).toEqual(new Set([1, "a"]));
    expect(value.b).toBe(2n ** 70n);
    expect(value.r).toEqual(/a+b/gi);
    expect(value.e).toMatchObject({ name: "TypeError", message: "bad" });
    expect(value.u).toEqual(new Uint16Array([1, 65535]));
    expect(new Uint8Array(value.ab as ArrayBuffer)).toEqual(new Uint8Array([9, 8]));
  });

  test("keeps cycles, shared references and array holes", () => {
    const shared = { n: 1 };
    const cyclic: Record<string, unknown> = { shared, again: shared };
    cyclic.self = cyclic;
    const out = roundTrip(cyclic) as Record<string, unknown>;
    expect(out.self).toBe(out);
    expect(out.shared).toBe(out.again);
    // eslint-disable-next-line no-sparse-arrays
    const holes = roundTrip([1, , 3]) as unknown[];
    expect(1 in holes).toBe(false);
    expect(holes.length).toBe(3);
  });

  test("flat objects of primitives decode like any other value, shared strings counted each time they appear", () => {
    const flat = { n: 1, s: "text", t: true, z: null, u: undefined, nan: Number.NaN, neg: -0, ["__proto__"]: 5 };
    const decoded = roundTrip(flat) as Record<string, unknown>;
    expect(decoded).toEqual({ n: 1, s: "text", t: true, z: null, u: undefined, nan: Number.NaN, neg: -0 });
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
    expect(decodeValue('{"root":0,"nodes":[{"a":1,"b":1},"x"]}', 1_000)).toEqual({ a: "x", b: "x" });
    const shared = `{"root":0,"nodes":[{${Array.from({ length: 40 }, (_, i) => `"k${i}":1`).join(",")}},"${"y".repeat(200)}"]}`;
    expect(shared.length).toBeLessThan(1_000);
    expect(() => decodeValue(shared, 1_000)).toThrow(ValueTooLargeError);
    expect(() => decodeValue('{"root":0,"nodes":[{"a":7}]}', 1_000)).toThrow(MalformedValueError);
  });

  test("a flat object of NaN and infinities whose JSON is over the limit is refused, though its encoding is within it", () => {
    const value: Record<string, number> = {};
    for (let i = 0; i < 105; i += 1) value[`k${i.toString(36).padStart(2, "0")}`] = i % 2 ? Number.NaN : Number.POSITIVE_INFINITY;
    const text = encode(value, 6_000);
    expect(text.length).toBeLessThanOrEqual(1_000);
    expect(JSON.stringify(value).length).toBeGreaterThan(1_000);
    expect(() => decodeValue(text, 1_000)).toThrow(ValueTooLargeError);
  });

  test("deep nesting encodes and decodes without overflowing the stack", () => {
    let deep: unknown = "bottom";
    for (let i = 0; i < 100_000; i += 1) deep = [deep];
    let out = roundTrip(deep);
    for (let i = 0; i < 100_000; i += 1) out = (out as unknown[])[0];
    expect(out).toBe("bottom");
  });

  test("drops __proto__ keys instead of changing prototypes", () => {
    const text = JSON.stringify({ root: 0, nodes: [{ __proto__: 1, safe: 2 }, { polluted: 3 }, "ok", true] });
    const out = decodeValue(text, 1_000_000) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(out.safe).toBe("ok");
    expect(Object.keys(out)).toEqual(["safe"]);
  });

  test("an object of the runtime's own making (the context snapshot) is written as the graph walk writes it, and refused at the same size", () => {
    const own = (entries: [string, unknown][]) => Object.assign(Object.create(null) as Record<string, unknown>, Object.fromEntries(entries));
    const flat = own([["n", 1], ["s", 'quote " and \\ and \u0001 and \ud800'], ["t", true], ["z", null], ["k", ""], ["é", -0.5], ["__proto__", 1]]);
    Object.defineProperty(flat, "__proto__", { value: "dropped", enumerable: true });
    const samples = [
      own([]),
      flat,
      own(Array.from({ length: 30 }, (_, index) => [`key${index}`, index * 1.5] as [string, unknown])),
      own([["nested", { a: 1 }], ["n", 2]]),
      own([["nan", Number.NaN], ["n", 2]]),
      own([["undef", undefined]]),
      own([["big", 10n]]),
    ];
    for (const sample of samples) {
      const written = encode(sample, 1_000_000, true);
      // Through the graph walk: the same object, but not marked as the runtime's own.
      expect(written).toBe(encode(sample, 1_000_000));
      expect(decodeValue(written, 1_000_000)).toEqual(decodeValue(encode(sample, 1_000_000), 1_000_000));
      for (let limit = 0; limit <= written.length + 2; limit += 1) {
        const walk = () => encode(sample, limit);
        const fast = () => encode(sample, limit, true);
        let walked: string | Error;
        try {
          walked = walk();
        } catch (error) {
          walked = error as Error;
        }
        if (typeof walked === "string") expect(fast()).toBe(walked);
        else expect(fast).toThrow(expect.objectContaining({ name: "ResultTooLarge" }));
      }
    }
  });

  test("over the size limit, encoding throws ResultTooLarge", () => {
    expect(() => encode("x".repeat(100), 50)).toThrow(expect.objectContaining({ name: "ResultTooLarge" }));
    expect(() => encode(new Array(1e6), 1000)).toThrow(expect.objectContaining({ name: "ResultTooLarge" }));
  });

  test("rejects malformed input with MalformedValueError", () => {
    for (const bad of ["nope", "{}", '{"root":5,"nodes":[]}', '{"root":0,"nodes":[["Nope"]]}', '{"root":-9,"nodes":[]}', '{"root":0,"nodes":[["Bytes","Uint8Array","zz"]]}']) {
      expect(() => decodeValue(bad, 1_000_000)).toThrow(MalformedValueError);
    }
  });
});
