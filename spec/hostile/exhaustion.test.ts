import { describe, expect, test } from "vitest";
import { runHostile, watchHost, type HostileCase } from "./harness.ts";

watchHost();

/** Family 2: exhausting time, memory and output. */
const EXHAUSTION: HostileCase[] = [
  { name: "a synchronous endless loop", program: "while (true) {}", expect: ["timeout"] },
  { name: "an endless loop in a finally", program: "try { return 1 } finally { for (;;) {} }", expect: ["timeout"] },
  { name: "a loop that catches its own termination", program: "for (;;) { try { for (;;) {} } catch {} }", expect: ["timeout"] },
  { name: "a loop after an await on the bridge", program: "await delegate('echo').ping(); for (;;) {}", expect: ["timeout"] },
  { name: "a microtask flood", program: "for (;;) await null", expect: ["timeout"] },
  { name: "a promise that never settles", program: "await new Promise(() => {})", expect: ["timeout"] },
  // The wait is not the program's own time: the delegated call ends at its own limit, and the program goes on.
  {
    name: "waiting on a delegate that never settles",
    program: "const r = await delegate('echo').slow(); return r.error_type",
    expect: ["ok"],
    check: (r) => expect(r.value).toBe("timeout"),
  },
  // Near its heap limit V8 collects garbage again and again, and a collection cannot be interrupted:
  // on a loaded machine reaching the limit took over a second, so these two get room to reach it.
  { name: "a memory bomb", program: "const hog = []; for (;;) hog.push(new Array(1e6).fill(7))", timeoutMs: 5_000, expect: ["memory_limit"] },
  { name: "a string bomb", program: "let s = 'ab'; for (;;) s += s; return s.length", expect: ["execution", "memory_limit"] },
  { name: "a typed-array bomb", program: "const hog = []; for (;;) hog.push(new Float64Array(1e7))", timeoutMs: 5_000, expect: ["memory_limit"] },
  { name: "deep recursion", program: "const f = (n) => f(n + 1) + 1; return f(0)", expect: ["execution"], check: (r) => expect(r.errorMessage).toBe("RangeError: Maximum call stack size exceeded") },
  { name: "a catastrophic regular expression", program: "return /^(a+)+$/.test('a'.repeat(40) + 'b')", expect: ["timeout"] },
  { name: "a huge result", program: "return 'x'.repeat(50_000_000)", timeoutMs: 5_000, expect: ["execution", "memory_limit"] },
  { name: "an amplified result (billion laughs)", program: "let v = ['lol']; for (let i = 0; i < 60; i++) v = [v, v, v]; return v", expect: ["execution"], check: (r) => expect(r.errorMessage).toMatch(/result limit/) },
  { name: "a sparse array result", program: "const a = []; a[2 ** 31] = 1; a.length = 2 ** 32 - 1; return a", expect: ["execution"], check: (r) => expect(r.errorMessage).toMatch(/result limit/) },
  // Encoding half a million levels may itself reach the memory or time limit, depending on the
  // machine's speed; each of these ends is handled.
  { name: "a deeply nested result", program: "let v = 0; for (let i = 0; i < 500000; i++) v = [v]; return v", expect: ["ok", "memory_limit", "timeout"] },
  { name: "an uninterruptible built-in", program: "new Array(1e9).fill(0); return 1", expect: ["timeout", "memory_limit"] },
  // Given time, it grows the sandbox process past its memory ceiling (1 GiB here) in a few seconds.
  {
    name: "an uninterruptible built-in with time to pass the process memory ceiling",
    program: "new Array(1e8).fill(0); return 1",
    timeoutMs: 20_000,
    expect: ["memory_limit"],
    check: (r) => expect(r.errorMessage).toMatch(/past its \d+ MiB memory ceiling/),
  },
  { name: "a thrown Proxy whose traps spin", program: "throw new Proxy({}, { get() { for (;;) {} } })", expect: ["timeout"] },
  { name: "a result whose getters spin", program: "return { get x() { for (;;) {} } }", expect: ["timeout"] },
  {
    name: "a console flood",
    program: "for (let i = 0; i < 1e6; i++) console.log('flood', i, { i }); return 'done'",
    expect: ["ok", "timeout"],
  },
  { name: "FinalizationRegistry callbacks", program: "const r = new FinalizationRegistry(() => { for (;;) {} }); r.register({}, 1); return 1", expect: ["execution"] },
  {
    name: "work left running after the call returns",
    program: "(async () => { await delegate('echo').ping(); for (;;) {} })(); return 'returned'",
    expect: ["ok", "timeout"],
  },
  { name: "a thenable result that never resolves", program: "return { then() {} }", expect: ["timeout"] },
];

describe("hostile: resource exhaustion", () => {
  test.each(EXHAUSTION)("$name", (testCase) => runHostile(testCase));
});

export const EXHAUSTION_COUNT = EXHAUSTION.length;
