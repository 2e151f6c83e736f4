import { afterEach, describe, expect, test } from "vitest";
import { Agent, OpenAIProvider, ScriptedProvider, TokenBudget } from "../src/index.ts";
import { OpenAITestServer } from "../test-support/openai-server.ts";
import { readLogLines, tempLogPath } from "../test-support/logs.ts";

let server: OpenAITestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A provider whose every answer reports 10 prompt and 5 completion tokens (the test server's default). */
async function provider(): Promise<OpenAIProvider> {
  server = await OpenAITestServer.start([{ kind: "structured", code: "return args[0] + args[1]" }]);
  return new OpenAIProvider({ apiKey: "k", baseURL: server.baseURL, model: "m" });
}

describe("maxTokens", () => {
  test("once the agent has spent its tokens, calls that would ask the provider end budget_exceeded without asking", async () => {
    const calc = Agent.for("calculator", { provider: await provider(), maxTokens: 30, reuse: false });
    expect((await calc.add(1, 2)).value).toBe(3);
    expect((await calc.add(2, 3)).value).toBe(5);
    const refused = await calc.add(3, 4);
    expect(refused).toMatchObject({ ok: false, errorType: "budget_exceeded", retriable: false });
    expect(refused.errorMessage).toBe("The token budget is spent: 30 of 30 tokens used (maxTokens), so the provider was not asked. Raise maxTokens, or call reset() on the TokenBudget; calls that a kept program answers still run.");
    expect(server!.requests).toHaveLength(2);
    expect(Agent.history(calc).at(-1)?.outcome_summary).toMatchObject({ error_type: "budget_exceeded", retriable: false });
  });

  test("a call refused for a spent budget made no attempt: its log line says 0 attempts and 0 tokens", async () => {
    const log = tempLogPath("improv-budget-");
    const calc = Agent.for("calculator", { provider: await provider(), maxTokens: 15, reuse: false, log });
    await calc.add(1, 2);
    expect((await calc.add(2, 3)).errorType).toBe("budget_exceeded");
    expect(readLogLines(log).at(-1)).toMatchObject({ outcome_status: "error", generation_attempt: 0, prompt_tokens: 0, completion_tokens: 0, attempt_errors: [] });
    expect(Agent.history(calc).at(-1)?.attempts ?? []).toEqual([]);
  });

  test("calls a kept program answers still run once the budget is spent", async () => {
    const calc = Agent.for("calculator", { provider: await provider(), maxTokens: 15 });
    expect((await calc.add(1, 2)).value).toBe(3);
    const again = await calc.add(5, 6);
    expect(again.value).toBe(11);
    expect(Agent.history(calc).at(-1)).toMatchObject({ program_source: "reused", artifact_hit: true });
    expect((await calc.multiply(2, 3)).errorType).toBe("budget_exceeded");
    expect(server!.requests).toHaveLength(1);
  });

  test("a TokenBudget is shared by the agents given it, and by the helpers they delegate to; reset() starts again", async () => {
    const budget = new TokenBudget(40);
    const scripted = new ScriptedProvider({
      programs: {
        "planner.plan": { code: "return (await delegate('helper').work()).value", usage: { promptTokens: 10, completionTokens: 5 } },
        "helper.work": { code: "return 'done'", usage: { promptTokens: 10, completionTokens: 5 } },
        "writer.write": { code: "return 'written'", usage: { promptTokens: 10, completionTokens: 5 } },
      },
    });
    const planner = Agent.for("planner", { provider: scripted, maxTokens: budget, reuse: false });
    const writer = Agent.for("writer", { provider: scripted, maxTokens: budget, reuse: false });
    expect((await planner.plan()).value).toBe("done");
    expect(budget.used).toBe(30);
    expect((await writer.write()).value).toBe("written");
    expect(budget).toMatchObject({ used: 45, remaining: 0, spent: true });
    expect((await writer.write()).errorType).toBe("budget_exceeded");
    budget.reset();
    expect((await writer.write()).value).toBe("written");
    expect(budget.used).toBe(15);
  });

  test("maxTokens takes a whole number of at least 1 or a TokenBudget", () => {
    expect(() => Agent.for("calculator", { maxTokens: 0 })).toThrow('Option "maxTokens" must be a whole number of tokens (at least 1) or a TokenBudget, got the number 0.');
    expect(() => Agent.for("calculator", { maxTokens: "1000" as never })).toThrow('Option "maxTokens" must be a whole number of tokens');
    expect(() => new TokenBudget(1.5)).toThrow("A token budget must be a whole number of tokens, at least 1; got the number 1.5.");
    expect(() => new TokenBudget("100" as never)).toThrow('A token budget must be a whole number of tokens, at least 1; got the string "100".');
  });
});
