/**
 * An agent that is gone leaves its isolate to a new agent (`configureSandbox({ reuseIsolates })`,
 * on by default), reset first: the new agent must find nothing of the old one, an isolate a
 * program changed in a way the reset cannot undo is never passed on, and neither is one whose
 * program was stopped.
 */
import ivm from "isolated-vm";
import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider, configureSandbox, type AgentProxy } from "../../../src/index.ts";
import { ISOLATE_PIECES } from "../../../src/sandbox/child/agent-isolate.ts";
import { sandboxPool } from "../../../src/sandbox/host/pool.ts";
import { pauseTool, restoreSandboxAfterAll } from "../../../test-support/sandbox.ts";

restoreSandboxAfterAll();

const programs = {
  // Leaves what it can in the realm: a global (also from a continuation), the last match, a
  // draw of Math.random, a promise that never settles, and its memory.
  leave: [
    'globalThis.leftBehind = "secret-A";',
    '/secret-(\\w+)/.exec("the token secret-A123 is here");',
    "(async () => { await null; globalThis.late = 'secret-A'; })();",
    "new Promise(() => {}).then(() => { globalThis.never = 'secret-A'; });",
    'context.secret = "secret-A";',
    "return Math.random();",
  ].join("\n"),
  // Not strict, and matches nothing before it reads: the realm's last match is what it finds.
  look: [
    "return {",
    "  globals: [typeof leftBehind, typeof late, typeof never],",
    "  lastMatch: [RegExp.input, RegExp.lastMatch, RegExp.$1, RegExp.leftContext, RegExp.rightContext],",
    "  context: Object.keys(context),",
    "  history: context.conversation_history.length,",
    "};",
  ].join("\n"),
  detachGlobal: "Object.preventExtensions(globalThis); return 1",
  swapPrototype: "Object.setPrototypeOf(globalThis, { inherited: 'secret-A' }); return typeof inherited",
  spin: "for (;;) {}",
  // Writes on everything shared it can reach that no global names, each where the realm keeps
  // it; the writes that stuck are the answer.
  plant: [
    "const targets = {",
    "  globalPrototype: Object.getPrototypeOf(globalThis),",
    "  iteratorWrapper: Object.getPrototypeOf(Iterator.from({ next() { return { done: true }; } })),",
    "  segments: Object.getPrototypeOf(new Intl.Segmenter('en').segment('x')),",
    "  segmentIterator: Object.getPrototypeOf(new Intl.Segmenter('en').segment('x')[Symbol.iterator]()),",
    "  errorStack: Object.getOwnPropertyDescriptor(new Error('x'), 'stack').get,",
    "  kwPrototype: kw.prototype,",
    "};",
    "const stuck = [];",
    "for (const [name, target] of Object.entries(targets)) {",
    "  try { target.leftByA = 'secret-A'; } catch {}",
    "  try { Object.defineProperty(target, 'trap', { get() { return 'secret-A'; }, configurable: true }); } catch {}",
    "  if (Object.hasOwn(target, 'leftByA') || Object.hasOwn(target, 'trap')) stuck.push(name);",
    "}",
    "return stuck;",
  ].join("\n"),
  probe: [
    "const reached = [Object.getPrototypeOf(globalThis), Object.getPrototypeOf(Iterator.from({ next() { return { done: true }; } })), Object.getPrototypeOf(new Intl.Segmenter('en').segment('x')), Object.getOwnPropertyDescriptor(new Error('x'), 'stack').get, kw.prototype];",
    "return [typeof leftByA, typeof trap, reached.filter((target) => 'leftByA' in target || 'trap' in target).length];",
  ].join("\n"),
  slow: "const answer = await tools.pause({ ms: 400 }); globalThis.afterClose = 'secret-A'; return answer",
  count: "context.n = (context.n ?? 0) + 1; return [context.n, context.conversation_history.length]",
  // Strings kept by the realm's symbol registry, which no reset can empty: `args[0]` MiB of them.
  pin: "let n = 0; for (; n < args[0]; n += 1) Symbol.for(String(n).padEnd(2 ** 20, 'z') + Math.random()); return n",
  // Sets the realm's last match (its input settable directly too), for the agent's next call to find.
  keepMatch: 'RegExp.input = "kept:" + args[0]; /(x)(y)/.exec("axyz"); RegExp.input = "kept:" + args[0]; return 1',
  lastMatch: "return [RegExp.input, RegExp.lastMatch, RegExp.$1]",
};

const pause = pauseTool;

function agent(role: string, options: { executionTimeoutMs?: number } = {}): AgentProxy {
  return Agent.for(role, { provider: new ScriptedProvider({ programs }), log: false, tools: { pause }, ...options });
}

async function totals(): Promise<{ spares: number; reused: number }> {
  const stats = await sandboxPool().stats();
  return { spares: stats.reduce((sum, entry) => sum + entry.spareIsolates, 0), reused: stats.reduce((sum, entry) => sum + entry.reusedIsolates, 0) };
}

const NOTHING_LEFT = { globals: ["undefined", "undefined", "undefined"], lastMatch: ["", "", "", "", ""], context: [], history: 0 };

describe("isolates passed on to new agents", () => {
  test("a closed agent's isolate serves the next new agent, which finds nothing of the first", async () => {
    sandboxPool().shutdown();
    configureSandbox({ processes: 1, reuseIsolates: true });
    const first = agent("reuse-first");
    expect((await first.leave()).ok).toBe(true);
    await Agent.close(first);
    await expect.poll(async () => (await totals()).spares, { timeout: 5_000 }).toBe(1);
    const before = await totals();
    const next = agent("reuse-next");
    const seen = await next.look();
    expect(seen.ok).toBe(true);
    expect(seen.value).toEqual(NOTHING_LEFT);
    // It ran in the first agent's isolate, or this test would prove nothing.
    expect((await totals()).reused).toBe(before.reused + 1);
  });

  test("what the realm shares that no global names (the global object's prototype, engine prototypes reached through instances, the error stack accessor, kw's prototype) takes nothing from one agent to the next", async () => {
    sandboxPool().shutdown();
    configureSandbox({ processes: 1, reuseIsolates: true });
    const first = agent("reuse-plant");
    expect((await first.plant()).value).toEqual([]);
    await Agent.close(first);
    await expect.poll(async () => (await totals()).spares, { timeout: 5_000 }).toBe(1);
    const next = agent("reuse-probe");
    expect((await next.probe()).value).toEqual(["undefined", "undefined", 0]);
    expect((await totals()).reused).toBe(1);
  });

  test("an agent closed while its program awaits a tool: once the program is over, its isolate, reset, serves the next new agent", async () => {
    sandboxPool().shutdown();
    configureSandbox({ processes: 1, reuseIsolates: true });
    const first = agent("reuse-closed-while-running");
    const running = first.slow();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await Agent.close(first, { timeoutMs: 20 })).toBe(false);
    expect((await running).value).toBe("paused");
    await expect.poll(async () => (await totals()).spares, { timeout: 5_000 }).toBe(1);
    const next = agent("reuse-after-closed-while-running");
    expect((await next.look()).value).toEqual(NOTHING_LEFT);
    expect((await totals()).reused).toBe(1);
    expect((await sandboxPool().stats()).reduce((sum, entry) => sum + entry.isolates, 0)).toBe(1);
  });

  test.each([
    ["leaves the global object unable to take new properties", "detachGlobal"],
    ["gives the global object another prototype", "swapPrototype"],
  ] as const)("a program that %s: its isolate is never passed on", async (_, method) => {
    sandboxPool().shutdown();
    configureSandbox({ processes: 1, reuseIsolates: true });
    const first = agent(`reuse-${method}`);
    expect(await first[method]()).toMatchObject({ ok: true });
    await Agent.close(first);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await totals()).toEqual({ spares: 0, reused: 0 });
    const next = agent(`reuse-after-${method}`);
    expect((await next.leave()).ok).toBe(true);
    expect((await totals()).reused).toBe(0);
  });

  test("an isolate whose program was stopped at its time limit is never passed on", async () => {
    sandboxPool().shutdown();
    configureSandbox({ processes: 1, reuseIsolates: true });
    const spinning = agent("reuse-spin", { executionTimeoutMs: 200 });
    const outcome = await spinning.spin();
    expect(outcome.ok).toBe(false);
    await Agent.close(spinning);
    const next = agent("reuse-after-spin");
    expect((await next.look()).value).toEqual(NOTHING_LEFT);
    expect((await totals()).reused).toBe(0);
  });

  test("an isolate holding memory its reset cannot free (strings in the symbol registry) is never passed on: the next agent gets all of its memoryLimitMb", async () => {
    sandboxPool().shutdown();
    configureSandbox({ processes: 1, reuseIsolates: true });
    const pinning = agent("reuse-pin");
    expect((await pinning.pin(40)).value).toBe(40);
    await Agent.close(pinning);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await totals()).toEqual({ spares: 0, reused: 0 });
    // A program that only left garbage still passes its isolate on.
    const plain = agent("reuse-after-pin");
    expect((await plain.leave()).ok).toBe(true);
    await Agent.close(plain);
    await expect.poll(async () => (await totals()).spares, { timeout: 5_000 }).toBe(1);
  });

  test("the realm's last match is cleared between calls of one agent, as between agents", async () => {
    sandboxPool().shutdown();
    configureSandbox({ processes: 1, reuseIsolates: true });
    const keeper = agent("keep-match");
    expect((await keeper.keepMatch("secret-1")).ok).toBe(true);
    expect((await keeper.lastMatch()).value).toEqual(["", "", ""]);
    await Agent.close(keeper);
  });

  test("an idle isolate counts what it holds as of its latest call (what a program kept included) against the budget and the memory ceiling", async () => {
    sandboxPool().shutdown();
    configureSandbox({ processes: 1, reuseIsolates: true });
    const pinning = agent("idle-pin");
    expect((await pinning.count()).ok).toBe(true);
    // Idle for a second, its isolate is compacted and measured (once: see AgentIsolate.compact).
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await pinning.pin(30)).value).toBe(30);
    await expect.poll(async () => (await sandboxPool().stats())[0]?.idleIsolatesMb ?? 0, { timeout: 5_000 }).toBeGreaterThanOrEqual(30);
    await Agent.close(pinning);
  });

  test("with reuseIsolates: false, no isolate is ever passed on", async () => {
    sandboxPool().shutdown();
    configureSandbox({ processes: 1, reuseIsolates: false });
    for (let index = 0; index < 3; index += 1) {
      const once = agent(`no-reuse-${index}`);
      expect((await once.leave()).ok).toBe(true);
      await Agent.close(once);
    }
    expect(await totals()).toEqual({ spares: 0, reused: 0 });
    configureSandbox({ reuseIsolates: true });
  });

  test("with the budget full, the least recently used idle isolate serves a new agent; every agent keeps its own memory and history", async () => {
    sandboxPool().shutdown();
    configureSandbox({ processes: 1, isolateCacheMb: 8, reuseIsolates: true });
    const provider = new ScriptedProvider({ programs });
    const many = Array.from({ length: 30 }, (_, index) => Agent.for(`reuse-budget-${index}`, { provider, log: false }));
    for (let round = 1; round <= 3; round += 1) {
      for (const each of many) expect((await each.count()).value).toEqual([round, round - 1]);
    }
    expect((await totals()).reused).toBeGreaterThan(30);
  });
});

describe("ten thousand agents", () => {
  test("in one process, a call each in batches of 50: none fails, each agent's memory is its own, and the sandbox keeps within its budget", { timeout: 120_000 }, async () => {
    sandboxPool().shutdown();
    configureSandbox({ processes: 2, isolateCacheMb: 64, reuseIsolates: true });
    const provider = new ScriptedProvider({ programs });
    const many = Array.from({ length: 10_000 }, (_, index) => Agent.for(`tenant-${index % 10}`, { provider, log: false }));
    for (let round = 1; round <= 2; round += 1) {
      // The second round calls every 100th agent again: its context and history are its own.
      const called = round === 1 ? many : many.filter((_, index) => index % 100 === 0);
      for (let start = 0; start < called.length; start += 50) {
        const outcomes = await Promise.all(called.slice(start, start + 50).map((each) => each.count()));
        for (const outcome of outcomes) expect(outcome.value).toEqual([round, round - 1]);
      }
    }
    // Checked as isolates are made, every 16 calls, and once the processes are idle.
    await expect.poll(async () => (await sandboxPool().stats()).reduce((sum, entry) => sum + entry.idleIsolatesMb, 0), { timeout: 5_000 }).toBeLessThanOrEqual(64);
    expect((await totals()).reused).toBeGreaterThan(9_000);
  });
});

describe("Math.random in a hardened realm", () => {
  test("comes from a generator the runtime seeds: the same seed gives the same draws, whatever was drawn before", async () => {
    const isolate = new ivm.Isolate({ memoryLimit: 32 });
    try {
      const context = await isolate.createContext();
      const draws = (await context.evalClosure(
        `const reseed = (${ISOLATE_PIECES.hardenRealm})();
        const draw = (count) => Array.from({ length: count }, () => Math.random());
        draw(1000);
        reseed([1, 2, 3, 4]);
        const first = draw(3);
        draw(57);
        reseed([1, 2, 3, 4]);
        const again = draw(3);
        reseed([5, 6, 7, 8]);
        const other = draw(3);
        const many = draw(10000);
        return { first, again, other, inRange: many.every((value) => value >= 0 && value < 1), mean: many.reduce((sum, value) => sum + value, 0) / many.length, frozen: Object.isFrozen(Math) && Object.isFrozen(Math.random), constructs: (() => { try { new Math.random(); return true; } catch { return false; } })() };`,
        [],
        { result: { copy: true }, timeout: 5_000 },
      )) as { first: number[]; again: number[]; other: number[]; inRange: boolean; mean: number; frozen: boolean; constructs: boolean };
      expect(draws.again).toEqual(draws.first);
      expect(draws.other).not.toEqual(draws.first);
      expect(new Set(draws.first).size).toBe(3);
      expect(draws.inRange).toBe(true);
      expect(draws.mean).toBeGreaterThan(0.45);
      expect(draws.mean).toBeLessThan(0.55);
      expect(draws.frozen).toBe(true);
      expect(draws.constructs).toBe(false);
    } finally {
      isolate.dispose();
    }
  });
});
