/**
 * The sandbox processes keep agents' isolates between calls within a memory budget
 * (`configureSandbox({ isolateCacheMb })`), least recently used out first, never one whose
 * program is running; an agent whose isolate was dropped gets a new one and goes on.
 */
import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider, configureSandbox, type AgentProxy } from "../../../src/index.ts";
import { sandboxPool } from "../../../src/sandbox/host/pool.ts";
import { pauseTool, restoreSandboxAfterAll } from "../../../test-support/sandbox.ts";

restoreSandboxAfterAll();

const programs = {
  count: "context.n = (context.n ?? 0) + 1; return [context.n, context.conversation_history.length]",
  // Keeps a value across its await: lost if its isolate were disposed while it waits.
  wait: "const before = args[0]; await tools.pause({ ms: 300 }); return before",
};

const pause = pauseTool;

function agents(count: number, prefix: string): AgentProxy[] {
  const provider = new ScriptedProvider({ programs });
  return Array.from({ length: count }, (_, index) => Agent.for(`${prefix}-${index}`, { provider, tools: { pause } }));
}

async function totals(): Promise<{ isolates: number; idleMb: number }> {
  const stats = await sandboxPool().stats();
  return { isolates: stats.reduce((sum, entry) => sum + entry.isolates, 0), idleMb: stats.reduce((sum, entry) => sum + entry.idleIsolatesMb, 0) };
}

describe("the isolate cache", () => {
  test("a small budget keeps few idle isolates; agents whose isolate was dropped go on with their memory and history", async () => {
    sandboxPool().shutdown();
    configureSandbox({ processes: 1, isolateCacheMb: 8 });
    const many = agents(30, "small-budget");
    for (let round = 1; round <= 2; round += 1) {
      for (const agent of many) expect((await agent.count()).value).toEqual([round, round - 1]);
    }
    // Checked as isolates are made, every 16 calls, and once the processes are idle.
    await expect.poll(async () => (await totals()).idleMb, { timeout: 5_000 }).toBeLessThanOrEqual(8);
    expect((await totals()).isolates).toBeLessThan(10);
  });

  test("a larger budget keeps every agent's isolate: no agent of 150 needs a new one for its next call", async () => {
    sandboxPool().shutdown();
    configureSandbox({ processes: 2, isolateCacheMb: 2_048 });
    const many = agents(150, "large-budget");
    await Promise.all(many.map((agent) => agent.count()));
    const { isolates, idleMb } = await totals();
    expect(isolates).toBe(150);
    expect(idleMb).toBeLessThanOrEqual(2_048);
    // Lowering the budget drops isolates at once.
    configureSandbox({ isolateCacheMb: 16 });
    await expect.poll(async () => (await totals()).idleMb, { timeout: 5_000 }).toBeLessThanOrEqual(16);
    for (const agent of many.slice(0, 20)) expect((await agent.count()).value).toEqual([2, 1]);
  });

  test("an isolate whose program is running is never dropped, however many agents come meanwhile", async () => {
    sandboxPool().shutdown();
    configureSandbox({ processes: 1, isolateCacheMb: 4 });
    const [waiting] = agents(1, "running");
    const running = waiting!.wait("kept across the wait");
    await new Promise((resolve) => setTimeout(resolve, 50));
    const others = agents(40, "pressing");
    const outcomes = await Promise.all(others.map((agent) => agent.count()));
    expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
    const outcome = await running;
    expect(outcome.errorMessage).toBeUndefined();
    expect(outcome.value).toBe("kept across the wait");
  });
});
