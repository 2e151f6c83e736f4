import { describe, expect, test } from "vitest";
import { runHostile, watchHost, type HostileCase } from "./harness.ts";

watchHost();

/** Family 3: damaging history, context or results. */
const INTEGRITY: HostileCase[] = [
  {
    name: "a global that cannot be removed",
    program: "Object.defineProperty(globalThis, 'stuck', { value: 1, configurable: false }); return 'defined'",
    expect: ["ok"],
    check: (r) => expect(r.value).toBe("defined"),
  },
  { name: "replacing the history", program: "context.conversation_history = [{ call_id: 'forged' }]; return context.conversation_history.length", expect: ["ok"], check: (r) => expect(r.value).toBe(2) },
  { name: "replacing the history in strict mode", program: "'use strict'; context.conversation_history = []", expect: ["execution"] },
  { name: "truncating the history", program: "context.conversation_history.length = 0; return context.conversation_history.length", expect: ["ok"], check: (r) => expect(r.value).toBe(2) },
  { name: "forging a record", program: "context.conversation_history.push({ call_id: 'forged', method_name: 'seed' })", expect: ["execution"] },
  { name: "editing a record", program: "const r = context.conversation_history[0]; r.method_name = 'forged'; r.outcome_summary.ok = false; delete r.call_id; return r.method_name", expect: ["ok"], check: (r) => expect(r.value).toBe("seed") },
  {
    name: "proxying the history",
    program: "Object.defineProperty(context, 'conversation_history', { get: () => new Proxy([], { get: () => { throw new Error('trap') } }) }); return 1",
    expect: ["execution"],
  },
  { name: "cycles, BigInt, symbols and functions in the result", program: "const o = { n: 10n, s: Symbol('s'), f() {} }; o.self = o; return o", expect: ["ok"], check: (r) => expect((r.value as { self: unknown }).self).toBe(r.value) },
  { name: "throwing getters and toJSON in the result", program: "return { get bad() { throw new Error('g') }, toJSON() { throw new Error('j') }, ok: 1 }", expect: ["ok"], check: (r) => expect(r.value).toMatchObject({ bad: "[getter threw]", ok: 1 }) },
  {
    name: "__proto__ keys in the result",
    program: "const o = JSON.parse('{\"__proto__\": {\"polluted\": true}, \"a\": 1}'); return o",
    expect: ["ok"],
    check: (r) => {
      expect(Object.getPrototypeOf(r.value)).toBe(Object.prototype);
      expect((r.value as Record<string, unknown>).polluted).toBeUndefined();
    },
  },
  {
    name: "__proto__, getters and cycles left in context",
    program: "Object.defineProperty(context, '__proto__', { value: { polluted: true }, enumerable: true }); context.loop = {}; context.loop.self = context.loop; context.lazy = { get v() { throw new Error('x') } }; return 1",
    expect: ["ok"],
  },
  { name: "a failing program that rewrote context", program: "context.kept = 'overwritten'; context.counter = -1; context.extra = 1; throw new Error('abort')", expect: ["execution"] },
  {
    name: "writes to context after the call ended",
    program: "(async () => { await delegate('echo').ping(); await delegate('echo').ping(); context.late = 'written late' })(); return 'early'",
    expect: ["ok"],
  },
  {
    name: "a SharedArrayBuffer changed after return",
    program: "if (typeof SharedArrayBuffer === 'undefined') return 'no SharedArrayBuffer'; const b = new SharedArrayBuffer(8); return b",
    expect: ["ok"],
    check: (r) => expect(r.value).toBe("no SharedArrayBuffer"),
  },
  { name: "a stray rejection", program: "Promise.reject(new Error('stray')); return 'fine'", expect: ["ok", "execution"] },
];

describe("hostile: data integrity", () => {
  test.each(INTEGRITY)("$name", (testCase) => runHostile(testCase));
});

export const INTEGRITY_COUNT = INTEGRITY.length;
