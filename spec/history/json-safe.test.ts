import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider } from "../../src/index.ts";
import { MAX_RECORD_BYTES } from "../../src/history/record.ts";
import { asJsonSafe, isPlainJson, MAX_JSON_SAFE_CHARS, MAX_STRING_CHARS, toJsonSafe } from "../../src/shared/json-safe.ts";
import { scriptedAgent } from "../../test-support/agents.ts";
import { tempLogPath } from "../../test-support/logs.ts";

class Point {
  x = 1;
}

describe("toJsonSafe stand-ins, field by field", () => {
  const cyclic: Record<string, unknown> = { name: "loop" };
  cyclic.self = cyclic;
  const throwingGetter = {
    ok: 1,
    get broken(): never {
      throw new Error("getter failed");
    },
  };
  const cases: [string, unknown, unknown][] = [
    ["a cycle", cyclic, { name: "loop", self: "[Circular]" }],
    ["a BigInt", 12n, "[BigInt 12]"],
    ["NaN", Number.NaN, "[NaN]"],
    ["Infinity", Infinity, "[Infinity]"],
    ["-Infinity", -Infinity, "[-Infinity]"],
    ["undefined", undefined, "[undefined]"],
    ["a function", function add() {}, "[Function add]"],
    ["a symbol", Symbol("tag"), "[Symbol(tag)]"],
    ["a Date", new Date(0), "[Date 1970-01-01T00:00:00.000Z]"],
    ["an invalid Date", new Date(Number.NaN), "[Date invalid]"],
    ["a Map", new Map([[1, 2]]), "[Map(1)]"],
    ["a Set", new Set([1, 2, 3]), "[Set(3)]"],
    ["an error", new RangeError("too far"), "[RangeError: too far]"],
    ["a class instance", new Point(), "[Point]"],
    ["a throwing getter", throwingGetter, { ok: 1, broken: "[Unreadable: getter failed]" }],
    ["a throwing toJSON", { toJSON() { throw new Error("no json"); } }, "[Unreadable: no json]"],
    ["a working toJSON", { toJSON: () => ({ v: 1 }) }, { v: 1 }],
    ["nested bad values next to good ones", [1, Number.NaN, { f: () => 1, s: "fine" }], [1, "[NaN]", { f: "[Function f]", s: "fine" }]],
    ["a __proto__ key", JSON.parse('{"__proto__": {"polluted": true}, "a": 1}'), { a: 1 }],
  ];

  test.each(cases)("%s", (_name, input, expected) => {
    const output = toJsonSafe(input);
    if (typeof expected === "object" && expected !== null && !Array.isArray(expected) && Object.hasOwn(input as object, "__proto__")) {
      expect(Object.getPrototypeOf(output)).toBe(Object.prototype);
      expect((output as Record<string, unknown>).a).toBe(1);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      return;
    }
    expect(output).toEqual(expected);
    expect(JSON.parse(JSON.stringify(output))).toEqual(output);
  });

  test("a 1 MB string is cut to 10,000 characters with a marker", () => {
    const output = toJsonSafe("z".repeat(1_000_000)) as string;
    expect(output.startsWith("z".repeat(MAX_STRING_CHARS))).toBe(true);
    expect(output.endsWith(`…[truncated ${1_000_000 - MAX_STRING_CHARS} chars]`)).toBe(true);
  });

  test("huge arrays keep their first 1,000 items and say how many were left out", () => {
    const output = toJsonSafe(Array.from({ length: 1_500 }, (_, i) => i)) as unknown[];
    expect(output).toHaveLength(1_001);
    expect(output.at(-1)).toBe("[500 more items]");
  });

  test("a value whose JSON expansion is enormous is copied only up to the output limit", () => {
    let laughs: unknown = ["lol".repeat(33)];
    for (let i = 0; i < 30; i += 1) laughs = [laughs, laughs];
    const output = toJsonSafe(laughs);
    const text = JSON.stringify(output);
    expect(text.length).toBeGreaterThan(MAX_JSON_SAFE_CHARS / 2);
    expect(text.length).toBeLessThan(MAX_JSON_SAFE_CHARS * 1.1);
    expect(text).toContain("[output limit reached]");
    // Past the limit, each open container adds at most one marker (nesting is capped at 32 levels).
    expect(JSON.stringify(toJsonSafe(laughs, 200)).length).toBeLessThan(200 + 32 * 30);
  });

  test("plain JSON past the output limit is not taken as is", () => {
    let laughs: unknown = ["lol".repeat(33)];
    for (let i = 0; i < 30; i += 1) laughs = [laughs, laughs];
    expect(isPlainJson(laughs)).toBe(false);
    expect(JSON.stringify(asJsonSafe(laughs)).length).toBeLessThan(MAX_JSON_SAFE_CHARS * 1.1);
    expect(isPlainJson({ a: [1, "two", { b: null }] })).toBe(true);
  });

  test("plain JSON is taken as is only when the copy within the same bound would be the same: numbers, booleans and nulls counted as the copy counts them", () => {
    const values: unknown[] = [
      Array.from({ length: 6 }, (_, index) => -1.2345678901234567e-300 * (index + 1)),
      { a: null, b: null, c: null, d: [null, null] },
      [true, false, true, 0, -0, 12],
      { note: "n".repeat(20), n: 1e21, nested: { list: [1.5, "x", null, false] } },
    ];
    for (const value of values) {
      for (let maxChars = 1; maxChars <= 200; maxChars += 1) {
        if (isPlainJson(value, maxChars)) expect(JSON.stringify(toJsonSafe(value, maxChars)), `${JSON.stringify(value)} within ${maxChars}`).toBe(JSON.stringify(value));
      }
      expect(isPlainJson(value, 200)).toBe(true);
    }
  });

  test("deep nesting stops at a marker", () => {
    let deep: unknown = "bottom";
    for (let i = 0; i < 100; i += 1) deep = { deep };
    expect(JSON.stringify(toJsonSafe(deep))).toContain("[Nested too deep]");
  });
});

describe("history records stay valid JSON whatever the arguments", () => {
  test("a call with every awkward argument type still records, with stand-ins in place", async () => {
    const agent = Agent.for("awkward", { provider: new ScriptedProvider({ programs: { m: "return 1" } }) });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const r = await agent.m(10n, Number.NaN, new Date(0), new Map([[1, 1]]), cyclic, "q".repeat(1_000_000), () => 1);
    // The function makes the call invalid input, but the record is still written, JSON-safe.
    expect(r.errorType).toBe("invalid_input");
    const [record] = Agent.history(agent);
    expect(record?.args.slice(0, 5)).toEqual(["[BigInt 10]", "[NaN]", "[Date 1970-01-01T00:00:00.000Z]", "[Map(1)]", { self: "[Circular]" }]);
    expect(String(record?.args[5]).length).toBeLessThan(10_100);
    expect(record?.args[6]).toMatch(/^\[Function/);
    expect(() => JSON.stringify(record)).not.toThrow();
  });

  test("arguments that share one object a billion times are recorded, logged and prompted within bounds", async () => {
    let laughs: unknown = ["lol".repeat(33)];
    for (let i = 0; i < 30; i += 1) laughs = [laughs, laughs];
    const { provider, agent } = scriptedAgent("sharer", { count: "return args.length" }, { debug: true, log: tempLogPath("improv-json-safe-") });
    const r = await agent.count(laughs);
    expect(r.value).toBe(1);
    expect(provider.calls[0]?.user.length).toBeLessThan(10_000);
    const record = JSON.stringify(Agent.history(agent)[0]);
    expect(record.length).toBeLessThanOrEqual(MAX_RECORD_BYTES);
  });
});
