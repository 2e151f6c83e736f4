/**
 * The requests of the host one application call may make (delegated calls, tools, fetch,
 * content) are counted over its whole call tree: a program cannot multiply the budget by
 * delegating.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { moveVersionOn } from "../../test-support/turns.ts";
import { describe, expect, test } from "vitest";
import { Agent, SANDBOX_LIMITS, ScriptedProvider, SqliteStore, type Tool } from "../../src/index.ts";

describe("the request budget of a call tree", () => {
  test(`a program whose 50 delegated calls each call a tool 20 times gets ${SANDBOX_LIMITS.maxDelegateCalls} requests in all; the next application call has its own`, async () => {
    let executed = 0;
    const ping: Tool = { description: "Answers.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: () => ++executed };
    const provider = new ScriptedProvider({
      programs: {
        "fanout.spread": `let children = 0, refused = 0;
for (let i = 0; i < 50; i++) {
  try {
    const o = await delegate("worker").work();
    if (o.ok) children++;
    else if (o.error_type === "budget_exceeded") refused++;
  } catch (e) { if (e.name === "BudgetExceededError") refused++; else throw e; }
}
return { children, refused };`,
        "worker.work": `let pings = 0;
for (let i = 0; i < 20; i++) {
  try { await tools.ping({}); pings++; } catch (e) { if (e.name === "BudgetExceededError") break; throw e; }
}
return pings;`,
      },
    });
    const agent = Agent.for("fanout", { provider, tools: { ping } });
    const outcome = await agent.spread();
    expect(outcome.errorMessage).toBeUndefined();
    const { children, refused } = outcome.value as { children: number; refused: number };
    // Every request answered counts once: the parent's delegated calls and the children's tool calls.
    expect(executed + children).toBe(SANDBOX_LIMITS.maxDelegateCalls);
    expect(refused).toBeGreaterThan(0);
    expect(executed).toBeLessThan(SANDBOX_LIMITS.maxDelegateCalls);
    const before = executed;
    expect((await agent.spread()).ok).toBe(true);
    expect(executed - before).toBe(before);
  });
  test("a run again after another process committed first has the budget the first run had, not what it left", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "improv-budget-")), "improv.db");
    const store = new SqliteStore(path);
    let runs = 0;
    // The first run's context is overtaken: another writer moves the agent's version on under it.
    const started: Tool = {
      description: "Marks a run.",
      inputSchema: { type: "object" },
      annotations: { readOnlyHint: true },
      execute: () => {
        runs += 1;
        if (runs === 1) moveVersionOn(path, "rerun");
        return runs;
      },
    };
    const lookup: Tool = { description: "Reads.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: () => 1 };
    const many = Math.ceil(SANDBOX_LIMITS.maxDelegateCalls * 0.6);
    const provider = new ScriptedProvider({
      programs: { work: `await tools.started({}); let n = 0; for (let i = 0; i < ${many}; i++) n += await tools.lookup({}); context.n = n; return n` },
    });
    const agent = await Agent.open("worker", { store, id: "rerun", provider, log: false, tools: { started, lookup } });
    const outcome = await agent.work();
    expect(outcome.errorMessage).toBeUndefined();
    expect(outcome.value).toBe(many);
    expect(runs).toBe(2);
    await store.close();
  });
});
