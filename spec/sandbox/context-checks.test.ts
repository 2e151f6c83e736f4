/**
 * A program's context changes are checked when it ends: a context the next run or the store
 * could not take (nested too deep, too large) is refused then, as that program's failure, and
 * the agent stays as it was, so the next call works. Values the application stores are held to
 * the same rule at once.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { Agent, kw, SANDBOX_LIMITS, ScriptedProvider, SqliteStore } from "../../src/index.ts";

const PROGRAMS = {
  nest: "let o = { end: true }; for (let i = 0; i < args[0]; i++) o = { o }; context.nested = o; context.calls = (context.calls ?? 0) + 1; return 'left'",
  nestList: "let o = []; for (let i = 0; i < args[0]; i++) o = [o]; context.list = new Map([['k', o]]); return 'left'",
  huge: "context.big = 'x'.repeat(args[0]); return 'left'",
  read: "return { calls: context.calls ?? 0, keys: Object.keys(context).sort() }",
};

function agentFor(role: string, options: Parameters<typeof Agent.for>[1] = {}) {
  return Agent.for<{ kept: string; nested: unknown; shared: unknown }>(role, { provider: new ScriptedProvider({ programs: PROGRAMS }), ...options });
}

describe("a context the agent could not keep", () => {
  test.each([20_000, 100_000])("nested %i deep: the program fails, the agent keeps its context and the next call works", async (depth) => {
    const agent = agentFor(`deep-${depth}`);
    agent.kept = "intact";
    const outcome = await agent.nest(depth);
    expect(outcome.ok).toBe(false);
    expect(outcome.errorType).toBe("execution");
    expect(outcome.errorMessage).toContain(`nested deeper than ${SANDBOX_LIMITS.maxValueDepth} levels`);
    expect(outcome.errorMessage).toContain("context.nested");
    const next = await agent.read();
    expect(next.errorMessage).toBeUndefined();
    expect(next.value).toEqual({ calls: 0, keys: ["kept"] });
    expect(Agent.history(agent).map((record) => record.outcome_summary.status)).toEqual(["error", "ok"]);
  });

  test("nested too deep inside a Map of arrays: refused the same way", async () => {
    const agent = agentFor("deep-map");
    const outcome = await agent.nestList(5_000);
    expect(outcome.errorType).toBe("execution");
    expect(outcome.errorMessage).toContain(`nested deeper than ${SANDBOX_LIMITS.maxValueDepth} levels`);
    expect((await agent.read()).ok).toBe(true);
  });

  test("nesting within the limit is kept, and read by the next call", async () => {
    const agent = agentFor("deep-enough");
    expect((await agent.nest(SANDBOX_LIMITS.maxValueDepth - 10)).ok).toBe(true);
    expect((await agent.read()).value).toEqual({ calls: 1, keys: ["calls", "nested"] });
  });

  test("a durable agent: nothing of the refused context reaches the store, and the next call (and a reopen) works", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "improv-context-")), "improv.db");
    const store = new SqliteStore(path);
    const agent = agentFor("deep-durable", { store, id: "deep-1" });
    expect((await agent.nest(3)).ok).toBe(true);
    const refused = await agent.nest(20_000);
    expect(refused.errorType).toBe("execution");
    expect(refused.retriable).toBe(false);
    expect((await agent.read()).value).toEqual({ calls: 1, keys: ["calls", "nested"] });
    await store.close();
    const again = new SqliteStore(path);
    const reopened = await Agent.open("deep-durable", { provider: new ScriptedProvider({ programs: PROGRAMS }), store: again, id: "deep-1" });
    expect(Agent.history(reopened).map((record) => record.outcome_summary.status)).toEqual(["ok", "error", "ok"]);
    expect((await reopened.read()).value).toEqual({ calls: 1, keys: ["calls", "nested"] });
    await again.close();
  });

  test("100 MB of context: refused at the limit, the agent goes on", async () => {
    const agent = agentFor("huge-context", { memoryLimitMb: 512 });
    const outcome = await agent.huge(100 * 2 ** 20);
    expect(outcome.ok).toBe(false);
    expect(["execution", "memory_limit"]).toContain(outcome.errorType);
    const next = await agent.read();
    expect(next.value).toEqual({ calls: 0, keys: [] });
  });
});

describe("values the application gives", () => {
  test("a value nested too deep, or a SharedArrayBuffer, is refused when stored, naming it; nothing is stored", async () => {
    const agent = agentFor("app-values");
    let deep: object = {};
    for (let level = 0; level < 20_000; level += 1) deep = { deep };
    expect(() => (agent.nested = deep)).toThrow(/"nested".*nested deeper than 500 levels/);
    expect(() => (agent.shared = new SharedArrayBuffer(8))).toThrow(/SharedArrayBuffer/);
    expect(Object.keys(agent.runtimeContext).sort()).toEqual([]);
    expect((await agent.read()).ok).toBe(true);
  });

  test("arguments nested too deep, or a SharedArrayBuffer argument, end that call invalid_input naming the argument; the next call works", async () => {
    const agent = agentFor("app-arguments");
    let deep: unknown[] = [];
    for (let level = 0; level < 20_000; level += 1) deep = [deep];
    const outcome = await agent.read(1, deep);
    expect(outcome.errorType).toBe("invalid_input");
    expect(outcome.errorMessage).toMatch(/args\[1\].*nested deeper than 500 levels/);
    const shared = await agent.read(new SharedArrayBuffer(4));
    expect(shared.errorType).toBe("invalid_input");
    expect(shared.errorMessage).toContain("args[0] is a SharedArrayBuffer");
    expect((await agent.read()).ok).toBe(true);
  });

  test("an array's named properties and an Error's cause are checked as structured clone copies them: the call ends invalid_input naming the part", async () => {
    const agent = agentFor("app-hidden-parts");
    const named = await agent.read(Object.assign([1], { f: () => 1 }));
    expect(named.errorType).toBe("invalid_input");
    expect(named.errorMessage).toContain("args[0].f is a function");
    const caused = await agent.read(kw({ error: new Error("x", { cause: () => 1 }) }));
    expect(caused.errorType).toBe("invalid_input");
    expect(caused.errorMessage).toContain("kwargs.error.cause is a function");
    let chain: unknown[] = [];
    for (let level = 0; level < 20_000; level += 1) chain = Object.assign([], { x: chain });
    const deep = await agent.read(chain);
    expect(deep.errorType).toBe("invalid_input");
    expect(deep.errorMessage).toMatch(/args\[0\]\.x\.x.*nested deeper than 500 levels/);
    expect((await agent.read()).ok).toBe(true);
  });
});
