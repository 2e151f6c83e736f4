/**
 * Cost in money: `pricing` turns the tokens providers report into `cost_usd` on records, log lines
 * and the telemetry report; `maxCostUsd` (or a shared CostBudget) stops provider requests once the
 * money is spent. A model without a price makes the cost unknown, never a guess.
 */
import { describe, expect, test } from "vitest";
import { Writable } from "node:stream";
import { runTelemetry } from "../../src/cli/telemetry-command.ts";
import { Agent, CostBudget, ScriptedProvider, TokenBudget, type HistoryRecord, type Provider } from "../../src/index.ts";
import { readLogLines, tempLogPath } from "../../test-support/logs.ts";

const pricing = { scripted: { input: 2, cachedInput: 0.5, output: 8 } };
const usage = { promptTokens: 1_000, completionTokens: 200, cachedTokens: 400 };
// 600 plain input at $2, 400 cached at $0.5 and 200 output at $8, per million tokens.
const ONE_REQUEST = (600 * 2 + 400 * 0.5 + 200 * 8) / 1e6;

function sink(): Writable & { text: string } {
  const stream = new Writable({ write: (chunk, _encoding, done) => ((stream.text += String(chunk)), done()) }) as Writable & { text: string };
  stream.text = "";
  return stream;
}

describe("pricing", () => {
  test("a call's cost is on its record and log line: a repair's two requests summed, a kept program's run costs 0; the report sums it", async () => {
    const log = tempLogPath("improv-cost-");
    const provider = new ScriptedProvider({ programs: { solve: [{ code: "return nope", usage }, { code: "return 2", usage }], again: { code: "return args[0]", usage } } });
    const agent = Agent.for("solver", { provider, pricing, log });
    expect((await agent.solve()).value).toBe(2);
    await agent.again(1);
    await agent.again(2);
    const records = Agent.history(agent) as readonly HistoryRecord[];
    expect(records.map((record) => record.cost_usd)).toEqual([2 * ONE_REQUEST, ONE_REQUEST, 0]);
    expect(readLogLines(log).map((line) => line.cost_usd)).toEqual([2 * ONE_REQUEST, ONE_REQUEST, 0]);
    const stdout = sink();
    const report = await runTelemetry({ inputs: [log], json: false, stdout, stderr: sink() });
    expect(report.overall.costUsd).toBeCloseTo(3 * ONE_REQUEST, 10);
    expect(report.overall.callsWithCost).toBe(3);
    expect(stdout.text).toContain(`  cost                  $${(3 * ONE_REQUEST).toFixed(4)}  (3 calls with a price;`);
  });

  test("without pricing, or for a model it has no price for, the cost is not known: absent from the record, null on the line", async () => {
    const log = tempLogPath("improv-cost-");
    const provider = new ScriptedProvider({ programs: { go: { code: "return 1", usage } }, model: "unlisted" });
    const priced = Agent.for("a", { provider, pricing, log });
    await priced.go();
    const plain = Agent.for("b", { provider: new ScriptedProvider({ programs: { go: { code: "return 1", usage } } }), log });
    await plain.go();
    expect([Agent.history(priced)[0]?.cost_usd, Agent.history(plain)[0]?.cost_usd]).toEqual([undefined, undefined]);
    expect(readLogLines(log).map((line) => line.cost_usd)).toEqual([null, null]);
  });

  test("maxCostUsd stops provider requests once spent (budget_exceeded); a CostBudget is shared; kept programs still run", async () => {
    const budget = new CostBudget(ONE_REQUEST * 1.5);
    const provider = new ScriptedProvider({ programs: { first: { code: "return 1", usage }, second: { code: "return 2", usage }, third: { code: "return 3", usage } } });
    const a = Agent.for("a", { provider, pricing, maxCostUsd: budget });
    const b = Agent.for("b", { provider, pricing, maxCostUsd: budget });
    expect((await a.first()).value).toBe(1);
    expect((await b.second()).value).toBe(2);
    expect(budget.spent).toBe(true);
    expect(budget.usedUsd).toBeCloseTo(2 * ONE_REQUEST, 12);
    const refused = await a.third();
    expect(refused).toMatchObject({ ok: false, errorType: "budget_exceeded", retriable: false });
    expect(refused.errorMessage).toMatch(/^The cost budget is spent: \$0\.\d{4} of \$0\.\d+ used \(maxCostUsd\), so the provider was not asked\./);
    expect((await a.first()).value).toBe(1);
    budget.reset();
    expect((await a.third()).value).toBe(3);
  });

  test("a model the server names otherwise (a dated snapshot, a stray space, another name) is priced as the one asked for, so maxCostUsd holds", async () => {
    const prices = { "gpt-4.1-mini": { input: 2, cachedInput: 0.5, output: 8 } };
    for (const reported of ["gpt-4.1-mini-2025-04-14", "gpt-4.1-mini ", "free-model"]) {
      const provider: Provider = { name: "renamer", model: "gpt-4.1-mini", generate: async () => ({ code: "return 1", model: reported, usage }) };
      const agent = Agent.for("solver", { provider, pricing: prices, maxCostUsd: ONE_REQUEST / 2, reuse: false });
      expect((await agent.solve()).ok, reported).toBe(true);
      expect((Agent.history(agent) as readonly HistoryRecord[]).at(-1)?.cost_usd, reported).toBe(ONE_REQUEST);
      expect((await agent.solve()).errorType, reported).toBe("budget_exceeded");
    }
  });

  test("a request whose tokens were not reported, or not as whole numbers, makes the cost unknown, not free", async () => {
    for (const given of [undefined, { promptTokens: "1000", completionTokens: "200" }]) {
      const provider: Provider = { name: "quiet", model: "gpt-4.1-mini", generate: async () => ({ code: "return 1", model: "gpt-4.1-mini", ...(given === undefined ? {} : { usage: given as never }) }) };
      const log = tempLogPath("improv-cost-");
      const agent = Agent.for("solver", { provider, pricing: { "gpt-4.1-mini": { input: 2, output: 8 } }, log });
      await agent.solve();
      expect((Agent.history(agent) as readonly HistoryRecord[]).at(-1)?.cost_usd).toBeUndefined();
      expect(readLogLines(log).at(-1)?.cost_usd).toBeNull();
    }
  });

  test("a request refused with the server's error costs nothing; one that ended without its usage read (timed out, an unreadable reply) makes the cost unknown", async () => {
    const costOf = async (entry: unknown, options: Record<string, unknown> = {}) => {
      const log = tempLogPath("improv-cost-");
      const provider = new ScriptedProvider({ programs: { solve: entry as never } });
      const agent = Agent.for("solver", { provider, pricing, log, maxGenerationAttempts: 1, ...options });
      const outcome = await agent.solve();
      expect(outcome.ok).toBe(false);
      const record = (Agent.history(agent) as readonly HistoryRecord[]).at(-1);
      expect(readLogLines(log).at(-1)?.cost_usd).toBe(record?.cost_usd ?? null);
      return record?.cost_usd;
    };
    expect(await costOf({ error: "refused", kind: "auth" })).toBe(0);
    expect(await costOf({ error: "overloaded", kind: "server" })).toBe(0);
    expect(await costOf({ error: "slow down", kind: "rate_limit" })).toBe(0);
    expect(await costOf({ error: "bad request", kind: "request" })).toBe(0);
    expect(await costOf({ code: "return 1", delayMs: 5_000, usage }, { providerTimeoutMs: 100 })).toBeUndefined();
    expect(await costOf({ error: "a body that is not JSON", kind: "reply" })).toBeUndefined();
    expect(await costOf({ error: "something of its own" })).toBeUndefined();
  });

  test("made-up token counts are checked once, for the record, the log line and the budget alike: cache counts within the prompt, none past a billion", async () => {
    const reports = [
      { promptTokens: 10, completionTokens: 5, cachedTokens: 1_000_000 },
      { promptTokens: 5e15, completionTokens: 5e15 },
      { promptTokens: -1_000_000, completionTokens: 7 },
    ];
    let next = 0;
    const provider: Provider = { name: "liar", model: "m", generate: async () => ({ code: "return 1", model: "m", usage: reports[next++] as never }) };
    const log = tempLogPath("improv-usage-");
    const budget = new TokenBudget(1_000_000);
    const agent = Agent.for("solver", { provider, log, reuse: false, maxTokens: budget });
    for (const _ of reports) await agent.solve();
    expect(readLogLines(log).map((line) => [line.prompt_tokens, line.completion_tokens, line.cached_tokens])).toEqual([
      [10, 5, 10],
      [null, null, null],
      [0, 7, null],
    ]);
    expect(budget.used).toBe(10 + 5 + 7);
  });

  test("bad pricing and budgets are a TypeError or RangeError naming what is wrong", () => {
    const provider = new ScriptedProvider({ programs: {} });
    expect(() => Agent.for("x", { provider, pricing: { m: { input: -1, output: 1 } } })).toThrow(new TypeError('Option "pricing.m.input" must be a number of US dollars per million tokens, 0 or more.'));
    expect(() => Agent.for("x", { provider, pricing: { m: { input: 1 } as never } })).toThrow('Option "pricing.m.output" must be a number');
    expect(() => Agent.for("x", { provider, pricing: { m: { input: 1, output: 1, cached: 1 } as never } })).toThrow('Option "pricing.m" has "cached", which is not input, output, cachedInput or cacheWrite.');
    expect(() => Agent.for("x", { provider, maxCostUsd: 0 })).toThrow(new RangeError('Option "maxCostUsd" must be a number of US dollars above 0, or a CostBudget, got the number 0.'));
    expect(() => new CostBudget(Number.NaN)).toThrow(RangeError);
    expect(() => new CostBudget("5" as never)).toThrow(new RangeError('A cost budget must be a number of US dollars above 0; got the string "5".'));
  });
});
