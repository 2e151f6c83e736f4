/**
 * The acceptance scenarios against a live model, once per provider whose key is set:
 * OPENAI_API_KEY (with OPENAI_BASE_URL / IMPROV_MODEL as needed), ANTHROPIC_API_KEY (with
 * ANTHROPIC_BASE_URL). They assert only what a live model can be held to: typed outcomes, one
 * record per call, valid records and log lines.
 */
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, test } from "vitest";
import { Agent, AnthropicProvider, ERROR_TYPES, OpenAIProvider, kw, type Provider } from "../src/index.ts";
import { readLogLines, tempLogPath } from "../test-support/logs.ts";

const keySet = (name: string) => (process.env[name] ?? "").trim() !== "";
const providers: { name: string; key: string; live: boolean; make: () => Provider }[] = [
  { name: "OpenAIProvider", key: "OPENAI_API_KEY", live: keySet("OPENAI_API_KEY"), make: () => new OpenAIProvider() },
  { name: "AnthropicProvider", key: "ANTHROPIC_API_KEY", live: keySet("ANTHROPIC_API_KEY"), make: () => new AnthropicProvider() },
];
const validateRecord = new Ajv2020({ strict: true }).compile(
  JSON.parse(readFileSync(new URL("../schema/history-record.schema.json", import.meta.url), "utf8")) as object,
);

describe.each(providers)("acceptance against a live model through $name", ({ key, live, make }) => {
  test("calls, a follow-up from history, and a delegation give typed outcomes, one record each, and valid logs", async (ctx) => {
    if (!live) ctx.skip(`needs a live model: set ${key} to run it`);
    const log = tempLogPath("improv-live-");
    const calc = Agent.for<{ value: number }>("calculator", { provider: make(), log, providerTimeoutMs: 60_000, maxGenerationAttempts: 3 });
    calc.value = 5;
    const outcomes = [
      await calc.add(3),
      await calc.convert(100, kw({ from: "celsius", to: "fahrenheit" })),
      await calc.divide(0),
      await calc.listPreviousMethodNames(),
      await calc.askStatisticianForMean([2, 4, 9]),
    ];
    for (const outcome of outcomes) {
      expect(["ok", "error"]).toContain(outcome.status);
      if (!outcome.ok) expect(ERROR_TYPES).toContain(outcome.errorType);
    }
    const records = Agent.history(calc);
    expect(records.map((r) => r.call_id)).toEqual(outcomes.map((o) => o.callId));
    for (const record of records) expect(validateRecord(record), JSON.stringify(validateRecord.errors)).toBe(true);
    const lines = readLogLines(log);
    const own = lines.filter((line) => line.role === "calculator");
    expect(own.map((line) => line.call_id)).toEqual(outcomes.map((o) => o.callId));
    for (const line of lines) {
      expect(typeof line.history_access_detected).toBe("boolean");
      expect(Array.isArray(line.history_query_patterns)).toBe(true);
    }
  }, 300_000);
});
