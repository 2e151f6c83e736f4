import { describe, expect, test } from "vitest";
import { tempLogPath } from "../../test-support/logs.ts";
import { runHostile, watchHost, type HostileCase } from "./harness.ts";

watchHost();

/** A "billion laughs" graph: `levels + 1` arrays whose JSON expansion holds 2^levels copies of a 99-character string. */
const laughs = (levels: number) => `let v = ["lol".repeat(33)]; for (let i = 0; i < ${levels}; i++) v = [v, v];`;

/** What a program's delegate call came back with, in fields a test can compare. */
const READ_OUTCOME = "return { ok: r.ok, error_type: r.error_type, error_message: r.error_message }";

const refusedArguments = (levels: number): HostileCase => ({
  name: `an amplified value (${levels} levels) as delegate arguments`,
  program: `${laughs(levels)} const r = await delegate("echo").back(v); ${READ_OUTCOME}`,
  expect: ["ok"],
  check: (r) =>
    expect(r.value).toEqual({
      ok: false,
      error_type: "invalid_input",
      error_message: "The arguments to echo.back() are larger than the 1000000-character limit for delegate arguments (shared parts count each time they appear). Pass less data.",
    }),
});

const debugLog = tempLogPath("improv-amplification-");

/**
 * Family 5: values whose JSON expansion is enormous although the program built them cheaply
 * (shared references, cycles), and stray rejections. None of them may reach the host unmeasured.
 */
const AMPLIFICATION: HostileCase[] = [
  refusedArguments(20),
  refusedArguments(22),
  refusedArguments(23),
  refusedArguments(30),
  {
    name: "an amplified value returned",
    program: `${laughs(30)} return v`,
    expect: ["execution"],
    check: (r) => expect(r.errorMessage).toBe("The program's return value is larger than the 8000000-character result limit as JSON (shared parts count each time they appear). Return a smaller value."),
  },
  {
    name: "an amplified value kept in context, with debug logging on",
    program: `${laughs(30)} context.big = v; return "stored"`,
    options: { debug: true, log: debugLog },
    expect: ["execution"],
    check: (r) => expect(r.errorMessage).toBe("The program left context larger than the 8000000-character limit as JSON (shared parts count each time they appear). Keep less in context."),
  },
  {
    name: "an amplified value written to the console",
    program: `${laughs(30)} console.log("value:", v); console.log(v, v); return "logged"`,
    options: { debug: true, log: debugLog },
    expect: ["ok"],
    check: (r) => expect(r.value).toBe("logged"),
  },
  {
    name: "an amplified value as delegate options",
    program: `${laughs(30)} const r = await delegate("echo", { model: v }).ping(); ${READ_OUTCOME}`,
    expect: ["ok"],
    check: (r) => expect(r.value).toMatchObject({ ok: false, error_type: "invalid_input" }),
  },
  {
    name: "an amplified value as a thrown error's message",
    program: `${laughs(30)} throw { name: "Laughs", message: v }`,
    expect: ["execution"],
    check: (r) => expect((r.errorMessage ?? "").length).toBeLessThan(12_000),
  },
  {
    name: "an amplified Map returned",
    program: `let v = [new Map([["k", "x".repeat(100)]])]; for (let i = 0; i < 30; i++) v = [v, v]; return v`,
    expect: ["execution"],
    check: (r) => expect(r.errorMessage).toMatch(/result limit/),
  },
  {
    name: "an amplified value that also holds a cycle",
    program: `const a = { name: "a" }; let v = [a]; for (let i = 0; i < 30; i++) v = [v, v]; a.self = v; return v`,
    expect: ["execution"],
    check: (r) => expect(r.errorMessage).toMatch(/result limit/),
  },
  {
    name: "one object shared a hundred thousand times",
    program: `const s = { text: "x".repeat(1000) }; return new Array(100000).fill(s)`,
    expect: ["execution"],
    check: (r) => expect(r.errorMessage).toMatch(/result limit/),
  },
  {
    name: "a deep chain of shared pairs",
    program: `let v = 1; for (let i = 0; i < 5000; i++) v = { a: v, b: v }; return v`,
    expect: ["execution"],
    check: (r) => expect(r.errorMessage).toMatch(/result limit/),
  },
  {
    name: "shared references within the limit come back whole",
    program: `let v = ["lol"]; for (let i = 0; i < 10; i++) v = [v, v]; return v`,
    expect: ["ok"],
    check: (r) => expect(JSON.stringify(r.value)).toBe(expandedLaughs(10)),
  },
  {
    name: "a stray rejection after an await on the bridge",
    program: `await delegate("echo").ping(); Promise.reject(new Error("x")); return "fine"`,
    expect: ["ok"],
    check: (r) => expect(r.value).toBe("fine"),
  },
  {
    name: "a stray rejection before an await on the bridge",
    program: `Promise.reject(new Error("x")); const r = await delegate("echo").ping(); return r.value`,
    expect: ["ok"],
    check: (r) => expect(r.value).toBe("pong"),
  },
  {
    name: "a stray rejection that reads like a time-out",
    program: `Promise.reject(new Error("Script execution timed out.")); return "fine"`,
    expect: ["ok"],
    check: (r) => expect(r.value).toBe("fine"),
  },
  {
    name: "a stray rejection after the bridge that reads like the memory limit",
    program: `await delegate("echo").ping(); Promise.reject(new Error("Isolate was disposed during execution due to memory limit")); return "fine"`,
    expect: ["ok"],
    check: (r) => expect(r.value).toBe("fine"),
  },
  {
    name: "stray rejections from work left running after the bridge",
    program: `(async () => { await delegate("echo").ping(); for (let i = 0; i < 3; i++) { await null; Promise.reject(new Error("late " + i)) } })(); await delegate("echo").ping(); return "fine"`,
    expect: ["ok"],
    check: (r) => expect(r.value).toBe("fine"),
  },
  {
    name: "delegate arguments within the limit whose encoding is long",
    program: `const r = await delegate("echo").back(new Array(200000).fill(0)); return r.ok ? r.value[0].length : r.error_message`,
    // The array crosses the process boundary four times (there and back, twice), each encoded,
    // size-checked and decoded: about 1.5 s of work on a slow machine, which is not what this case tests.
    timeoutMs: 5_000,
    expect: ["ok"],
    check: (r) => expect(r.value).toBe(200_000),
  },
  {
    name: "delegate options too large to encode",
    program: `const r = await delegate("echo", { model: "m".repeat(1_000_000) }).ping(); ${READ_OUTCOME}`,
    expect: ["ok"],
    check: (r) =>
      expect(r.value).toEqual({
        ok: false,
        error_type: "invalid_input",
        error_message: "delegate options are larger than the 100000-character limit as JSON (shared parts count each time they appear). Pass a small plain object.",
      }),
  },
  {
    name: "delegate arguments that cannot be read",
    program: `const buffer = new ArrayBuffer(8); buffer.transfer(); return await delegate("echo").back(buffer)`,
    expect: ["execution"],
    check: (r) => expect(r.errorMessage).toMatch(/^TypeError: The arguments to echo\.back\(\) could not be read: /),
  },
  {
    name: "an array-like whose string conversion would expand without bound, thrown as a message",
    program: `${laughs(30)} const like = Object.setPrototypeOf({ length: 2, 0: v, 1: v }, Array.prototype); throw { name: "E", message: like }`,
    expect: ["execution"],
    check: (r) => expect((r.errorMessage ?? "").length).toBeLessThan(12_000),
  },
  { name: "typed arrays until allocation fails", program: "const hog = []; for (;;) hog.push(new Float64Array(1e6))", expect: ["memory_limit"] },
  { name: "array buffers until allocation fails", program: "const hog = []; for (;;) hog.push(new ArrayBuffer(8e6))", expect: ["memory_limit"] },
];

/** The JSON of `laughs(levels)` built with "lol", written out in full. */
function expandedLaughs(levels: number): string {
  let text = '["lol"]';
  for (let level = 0; level < levels; level += 1) text = `[${text},${text}]`;
  return text;
}

describe("hostile: amplified values and stray rejections", () => {
  test.each(AMPLIFICATION)("$name", (testCase) => runHostile(testCase));
});

export const AMPLIFICATION_COUNT = AMPLIFICATION.length;
