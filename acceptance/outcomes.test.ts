/**
 * End to end: OpenAIProvider and the official SDK over HTTP to a local OpenAI-compatible
 * server with scripted completions; every outcome path, its history record and its log line.
 */
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterEach, describe, expect, test } from "vitest";
import { Agent, OpenAIProvider, type AgentOptions, type AgentProxy } from "../src/index.ts";
import { OpenAITestServer, type RoutedReplies } from "../test-support/openai-server.ts";
import { readLogLines, tempLogPath } from "../test-support/logs.ts";

const validateRecord = new Ajv2020({ strict: true }).compile(
  JSON.parse(readFileSync(new URL("../schema/history-record.schema.json", import.meta.url), "utf8")) as object,
);

let server: OpenAITestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function scenario(replies: RoutedReplies, role: string, options: AgentOptions = {}) {
  server = await OpenAITestServer.start(replies);
  const log = tempLogPath("improv-acceptance-");
  const provider = new OpenAIProvider({ apiKey: "test", baseURL: server.baseURL, model: "scripted-model", maxRetries: 0 });
  const agent = Agent.for(role, { provider, log, ...options });
  const lines = () => readLogLines(log);
  return { agent, lines };
}

/** The log line of each call agrees with its record, and every record is valid. */
function expectAgreement(agents: AgentProxy[], lines: Record<string, unknown>[]): void {
  const records = agents.flatMap((agent) => [...Agent.history(agent)]);
  expect(lines).toHaveLength(records.length);
  for (const record of records) {
    expect(validateRecord(record), JSON.stringify(validateRecord.errors)).toBe(true);
    const line = lines.find((candidate) => candidate.call_id === record.call_id);
    expect(line, `log line for ${record.call_id}`).toBeDefined();
    expect(line).toMatchObject({
      outcome_status: record.outcome_summary.status,
      error_type: record.outcome_summary.error_type,
      trace_id: record.trace_id,
      depth: record.depth,
      parent_call_id: record.parent_call_id ?? null,
      method: record.method_name,
    });
  }
}

describe("acceptance: outcome paths through the whole stack", () => {
  test("delegation: a tool builder asks a statistician, sharing the trace", async () => {
    const { agent, lines } = await scenario(
      {
        "toolbuilder.build": { kind: "structured", code: "const s = delegate('statistician'); const m = await s.mean(args[0]); const r = await s.range(args[0]); return { mean: m.value, range: r.value }" },
        "statistician.mean": { kind: "structured", code: "return args[0].reduce((a, b) => a + b, 0) / args[0].length" },
        "statistician.range": { kind: "content", content: "```js\nreturn Math.max(...args[0]) - Math.min(...args[0])\n```" },
      },
      "toolbuilder",
    );
    const outcome = await agent.build([2, 4, 9]);
    expect(outcome.value).toEqual({ mean: 5, range: 7 });
    const stats = agent.delegate("statistician");
    const [root] = Agent.history(agent);
    expect(Agent.history(stats).map((r) => [r.method_name, r.speaker, r.depth, r.parent_call_id, r.trace_id])).toEqual([
      ["mean", "tool", 1, root?.call_id, root?.trace_id],
      ["range", "tool", 1, root?.call_id, root?.trace_id],
    ]);
    expectAgreement([agent, stats], lines());
  });

  test("error paths: provider, invalid code, execution, timeout, budget exceeded", async () => {
    const { agent, lines } = await scenario(
      {
        "worker.unavailable": { kind: "status", status: 503 },
        "worker.garbled": [{ kind: "content", content: "" }, { kind: "structured", code: "return (((" }],
        "worker.throws": { kind: "structured", code: "throw new RangeError('out of range')" },
        "worker.spins": { kind: "structured", code: "while (true) {}" },
        "worker.digs": { kind: "structured", code: "return await delegate('worker').digs()" },
      },
      "worker",
      { executionTimeoutMs: 300, maxDelegationDepth: 0 },
    );
    const outcomes = {
      provider: await agent.unavailable(),
      invalid_code: await agent.garbled(),
      execution: await agent.throws(),
      timeout: await agent.spins(),
      budget_exceeded: await agent.digs(),
    };
    for (const [expected, outcome] of Object.entries(outcomes)) {
      expect(outcome.errorType, `${expected}: ${outcome.errorMessage}`).toBe(expected);
    }
    expect(outcomes.execution.errorMessage).toBe("RangeError: out of range");
    expect(outcomes.invalid_code.errorMessage).toMatch(/^The program does not parse \(attempt 2\)/);
    expect(Agent.history(agent).map((r) => r.outcome_summary.error_type)).toEqual(["provider", "invalid_code", "execution", "timeout", "budget_exceeded"]);
    expectAgreement([agent], lines());
    expect(lines().map((line) => line.generation_attempt)).toEqual([2, 2, 1, 1, 1]);
  });

  test("a re-asked question is answered from history, not by calling again", async () => {
    const { agent, lines } = await scenario(
      {
        "assistant.convert": { kind: "structured", code: "return args[0] * 9 / 5 + 32" },
        "assistant.again": {
          kind: "structured",
          code: "const previous = context.conversation_history.findLast((r) => r.method_name === 'convert' && r.outcome_summary.ok); return previous ? { asked: previous.args[0], when: previous.timestamp } : null",
        },
      },
      "assistant",
    );
    await agent.convert(100);
    await agent.convert(37);
    const again = await agent.again();
    expect(again.value).toEqual({ asked: 37, when: Agent.history(agent)[1]?.timestamp });
    expect(lines().at(-1)).toMatchObject({ method: "again", history_access_detected: true, history_query_patterns: ["find"], conversation_history_size: 3 });
    expectAgreement([agent], lines());
  });
});
