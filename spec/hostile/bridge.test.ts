import { describe, expect, test } from "vitest";
import { runHostile, watchHost, type HostileCase } from "./harness.ts";

watchHost();

const NO_HOST_PATHS = /\/work\/|\/home\/|\/root\/|node_modules|\.ts:\d|\.js:\d/;

/** Family 4: abusing the bridge between program and host. */
const BRIDGE: HostileCase[] = [
  { name: "delegate() with no role", program: "delegate()", expect: ["execution"], check: (r) => expect(r.errorMessage).toBe("TypeError: delegate(role, options?) needs a role: a non-empty string of at most 200 characters.") },
  { name: "delegate with a non-string role", program: "delegate({ toString() { return 'echo' } })", expect: ["execution"] },
  { name: "delegate with a 10,000-character role", program: "delegate('r'.repeat(10000))", expect: ["execution"] },
  {
    name: "delegate options that are not allowed",
    program: "const r = await delegate('echo', { provider: 'mine', executionTimeoutMs: 10 ** 9 }).ping(); return r",
    expect: ["ok"],
    check: (r) => expect(r.value).toMatchObject({ ok: false, error_type: "invalid_input" }),
  },
  {
    name: "delegate options that try to raise limits are lowered",
    program: "const r = await delegate('echo', { executionTimeoutMs: 10 ** 9, memoryLimitMb: 4096 }).ping(); return r.value",
    expect: ["ok"],
    check: (r) => expect(r.value).toBe("pong"),
  },
  {
    name: "functions, symbols and getters as delegate arguments",
    program: "const r = await delegate('echo').back(() => 1, Symbol('s'), { get g() { return 2 } }); return r.value",
    expect: ["ok"],
    check: (r) => expect(r.value).toEqual(["[Function]", "[Symbol(s)]", { g: 2 }]),
  },
  { name: "thousands of concurrent delegate calls", program: "await Promise.all(Array.from({ length: 3000 }, () => delegate('echo').ping())); return 'all done'", expect: ["budget_exceeded"] },
  { name: "thousands of sequential delegate calls", program: "for (let i = 0; i < 3000; i++) await delegate('echo').ping(); return 'all done'", expect: ["budget_exceeded"] },
  {
    name: "re-entrant delegate calls from argument getters",
    program: "const arg = { get nested() { delegate('echo').ping(); return 'read' } }; const r = await delegate('echo').back(arg); return r.value",
    expect: ["ok"],
    check: (r) => expect(r.value).toEqual([{ nested: "read" }]),
  },
  {
    name: "huge delegate arguments",
    program: "const r = await delegate('echo').back('x'.repeat(5_000_000)); return [r.error_type, r.error_message]",
    expect: ["ok"],
    check: (r) => expect(r.value).toEqual(["invalid_input", "The arguments to echo.back() are larger than the 1000000-character limit for delegate arguments (shared parts count each time they appear). Pass less data."]),
  },
  // As with deep results, the limit reached first depends on the machine's speed.
  { name: "deeply nested delegate arguments", program: "let v = 0; for (let i = 0; i < 100000; i++) v = [v]; const r = await delegate('echo').back(v); return r.ok", expect: ["ok", "timeout", "memory_limit"] },
  {
    name: "monkey-patched built-ins before a bridge call",
    program: "try { JSON.stringify = () => '{}'; Array.prototype.push = null; Object.freeze = () => {} } catch {} const r = await delegate('echo').back([1]); return r.value",
    expect: ["ok"],
    check: (r) => expect(r.value).toEqual([[1]]),
  },
  {
    name: "a child's failure does not leak host paths",
    program: "const a = await delegate('echo').fail(); const b = await delegate('echo').remember(); const c = await delegate('nobody').missing(); return [a.error_message, b.error_message, c.error_message]",
    expect: ["ok"],
    check: (r) => {
      for (const message of r.value as string[]) expect(message).not.toMatch(NO_HOST_PATHS);
    },
  },
  {
    name: "stray rejections do not surface in a later call",
    program: "for (let i = 0; i < 50; i++) Promise.reject(new Error('stray ' + i)); delegate('echo').fail().then(() => { throw new Error('late stray') }); return 'done'",
    expect: ["ok", "execution"],
  },
  {
    name: "calling the child agent object in odd ways",
    program: "const c = delegate('echo'); return [typeof c.then, String(c), JSON.stringify(c), typeof c[Symbol.iterator], (await c['back'].call(null, 1)).value]",
    expect: ["ok"],
    check: (r) => expect(r.value).toEqual(["undefined", "[Agent echo]", '{"role":"echo"}', "undefined", [1]]),
  },
];

describe("hostile: bridge abuse", () => {
  test.each(BRIDGE)("$name", (testCase) => runHostile(testCase));
});

export const BRIDGE_COUNT = BRIDGE.length;
