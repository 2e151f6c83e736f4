import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { Agent, SANDBOX_LIMITS, ScriptedProvider } from "../../src/index.ts";
import { tempLogPath } from "../../test-support/logs.ts";

const TIMEOUT_MS = 400;

/** Programs that must be stopped, with the outcome type each must end in (and, for one that must reach another limit first, its time limit). */
const hostile: [string, string, string, number?][] = [
  ["a synchronous endless loop", "while (true) {}", "timeout"],
  ["an endless loop after an await", "await null; while (true) {}", "timeout"],
  ["a promise that never settles", "await new Promise(() => {})", "timeout"],
  ["a microtask flood", "for (;;) await null", "timeout"],
  // Allocates while it spins, so whichever limit it reaches first ends it.
  ["an ever-growing promise chain", "const spin = () => Promise.resolve().then(spin); await spin()", "timeout|memory_limit"],
  ["a loop that catches its own termination", "while (true) { try { while (true) {} } catch {} }", "timeout"],
  ["an uninterruptible built-in", "new Array(1e9).fill(0); return 1", "timeout"],
  // Time enough to reach the memory limit however slow the machine: the outcome must be that limit's.
  ["a memory bomb", "const hog = []; while (true) hog.push(new Array(1e6).fill(1))", "memory_limit", 10_000],
  ["a string bomb", "let s = 'x'; while (true) s += s; return s.length", "execution"],
  ["deep recursion", "const f = () => f(); f()", "execution"],
  ["a catastrophic regular expression", "return /^(a+)+$/.test('a'.repeat(40) + 'b')", "timeout"],
  ["a thrown Proxy whose traps spin", "throw new Proxy({}, { get() { while (true) {} } })", "timeout"],
];

describe("every hostile program ends in a typed outcome within the limits", () => {
  test.each(hostile)("%s", async (_name, program, expected, timeoutMs = TIMEOUT_MS) => {
    const agent = Agent.for<{ kept: string }>("hostile", {
      provider: new ScriptedProvider({ programs: { attack: `context.dirty = true;\n${program}`, ping: "return context.kept" } }),
      executionTimeoutMs: timeoutMs,
      memoryLimitMb: 32,
    });
    agent.kept = "intact";
    const started = performance.now();
    const r = await agent.attack();
    const elapsed = performance.now() - started;
    expect(expected.split("|")).toContain(r.errorType);
    // Generous bound: the point is that it ends, not how fast on a shared machine.
    expect(elapsed).toBeLessThan(timeoutMs * 10);
    expect(agent.runtimeContext).toEqual({ kept: "intact" });
    expect((await agent.ping()).value).toBe("intact");
    expect(Agent.history(agent)).toHaveLength(2);
  });
});

describe("size caps", () => {
  test("a result over the size limit is an execution outcome that says so", async () => {
    const agent = Agent.for("big", {
      provider: new ScriptedProvider({ programs: { big: "return 'x'.repeat(9_000_000)" } }),
    });
    const r = await agent.big();
    expect(r.errorType).toBe("execution");
    expect(r.errorMessage).toBe(
      `The program's return value is larger than the ${SANDBOX_LIMITS.maxResultChars}-character result limit as JSON (shared parts count each time they appear). Return a smaller value.`,
    );
  });

  test("a result within the limit as JSON comes back, though its encoding is longer than its JSON", async () => {
    // 1.5 million one-digit numbers: 3 million characters as JSON, far more as the encoder's node list.
    // What is checked is the size; the time limit leaves room for a slow machine's encoding.
    const agent = Agent.for("digits", { provider: new ScriptedProvider({ programs: { digits: "return new Array(1_500_000).fill(7)" } }), executionTimeoutMs: 60_000 });
    const r = await agent.digits();
    expect(r.errorMessage).toBeUndefined();
    expect((r.value as number[]).length).toBe(1_500_000);
  });

  test("shared references within the limit arrive shared", async () => {
    const agent = Agent.for("amplify", {
      provider: new ScriptedProvider({ programs: { laughs: "let v = ['lol']; for (let i = 0; i < 16; i++) v = [v, v]; return v" } }),
    });
    const r = await agent.laughs();
    expect(r.ok).toBe(true);
    let node = r.value as unknown[];
    for (let i = 0; i < 16; i += 1) {
      expect(node[0]).toBe(node[1]);
      node = node[0] as unknown[];
    }
    expect(node).toEqual(["lol"]);
  });

  test("console output is captured and bounded", async () => {
    const log = tempLogPath("improv-console-");
    const agent = Agent.for("chatty", {
      provider: new ScriptedProvider({ programs: { chat: "for (let i = 0; i < 100000; i++) console.log('line', i, { i }); return 'done'" } }),
      log,
      debug: true,
    });
    expect((await agent.chat()).value).toBe("done");
    const line = JSON.parse(readFileSync(log, "utf8").trim()) as { console: string[] };
    expect(line.console[0]).toBe('line 0 {"i":0}');
    expect(line.console.length).toBeLessThanOrEqual(SANDBOX_LIMITS.maxConsoleLines + 1);
    expect(line.console.at(-1)).toBe("… console output truncated");
  });

  test("values a program cannot hand back intact become descriptive stand-ins", async () => {
    const agent = Agent.for("odd", {
      provider: new ScriptedProvider({
        programs: {
          odd: "const o = { fn() {}, sym: Symbol('s'), big: 12n, nan: NaN, neg: -0, und: undefined, get bad() { throw new Error('no') } }; o['__proto__'] = { polluted: true }; Object.defineProperty(o, '__proto__', { value: 1, enumerable: true }); return o",
        },
      }),
    });
    const r = await agent.odd();
    expect(r.ok).toBe(true);
    const value = r.value as Record<string, unknown>;
    expect(value).toMatchObject({ fn: "[Function: fn]", sym: "[Symbol(s)]", big: 12n, bad: "[getter threw]" });
    expect(value.nan).toBeNaN();
    expect(Object.is(value.neg, -0)).toBe(true);
    expect("und" in value && value.und === undefined).toBe(true);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
