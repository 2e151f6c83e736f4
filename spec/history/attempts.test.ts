/**
 * A call's attempts in its record and log line (DESIGN 20): a kept program's run (n 0), each
 * provider attempt with who wrote its program, its tokens and how it failed, the last 5 kept; and
 * why a failed call was not repaired (repair_skipped).
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { Agent, type AttemptRecord, type HistoryRecord, ScriptedProvider, type Tool } from "../../src/index.ts";
import { agentWith } from "../../test-support/agents.ts";
import { tempLogPath } from "../../test-support/logs.ts";

const schema = JSON.parse(readFileSync(new URL("../../schema/history-record.schema.json", import.meta.url), "utf8")) as object;
const validateRecord = new Ajv2020({ allErrors: true, strict: true }).compile(schema);

const hash = (code: string) => createHash("sha256").update(code).digest("hex").slice(0, 16);

function lastRecord(agent: unknown): HistoryRecord {
  const record = (Agent.history(agent) as readonly HistoryRecord[]).at(-1)!;
  expect(validateRecord(record), JSON.stringify(validateRecord.errors)).toBe(true);
  return record;
}

describe("attempts in the record and the log line", () => {
  test("a repaired call: the failed attempt's program, error and tokens, then the repair's; the log line carries each program's text", async () => {
    const first = "return missing.value";
    const second = "return 7";
    const provider = new ScriptedProvider({ programs: { answer: [first, second] } });
    const { agent, logLines } = agentWith({}, { role: "solver", provider, log: tempLogPath("improv-attempts-"), maxGenerationAttempts: 3 });
    const outcome = await agent.answer();
    expect(outcome.value).toBe(7);
    const record = lastRecord(agent);
    const attempts = record.attempts as AttemptRecord[];
    expect(attempts.map((attempt) => [attempt.n, attempt.program_source, attempt.provider, attempt.error_type, attempt.program_hash, attempt.tool_call_count])).toEqual([
      [1, "generated", "improv.scripted", "execution", hash(first), 0],
      [2, "repaired", "improv.scripted", undefined, hash(second), 0],
    ]);
    expect(attempts[0]!.error_message).toContain("missing is not defined");
    expect(Date.parse(attempts[0]!.started_at)).toBeLessThanOrEqual(Date.parse(attempts[0]!.completed_at));
    expect(Date.parse(attempts[0]!.completed_at)).toBeLessThanOrEqual(Date.parse(attempts[1]!.started_at));
    expect(record.repair_skipped).toBeUndefined();
    const line = logLines().at(-1)!;
    // The last attempt's program is the line's code: not written twice.
    expect((line.attempts as { program?: string; n: number }[]).map((attempt) => [attempt.n, attempt.program])).toEqual([
      [1, first],
      [2, undefined],
    ]);
    expect(line.code).toBe(second);
    expect(line.repair_skipped).toBeNull();
  });

  test("tokens per attempt, as the provider reported them", async () => {
    let n = 0;
    const provider = {
      name: "counting",
      generate: async () => ({ code: n++ === 0 ? "return nope" : "return 1", model: "m-1", usage: { promptTokens: 10 * n, completionTokens: n, cachedTokens: 4 } }),
    };
    const agent = Agent.for("solver", { provider });
    await agent.answer();
    const attempts = lastRecord(agent).attempts!;
    expect(attempts.map((attempt) => [attempt.model, attempt.tokens])).toEqual([
      ["m-1", { prompt: 10, completion: 1, cached: 4 }],
      ["m-1", { prompt: 20, completion: 2, cached: 4 }],
    ]);
  });

  test("a kept program's run is attempt 0; a provider that failed leaves an attempt with no program", async () => {
    const provider = new ScriptedProvider({ programs: { double: "return args[0] * 2" } });
    const agent = Agent.for("calc", { provider });
    await agent.double(2);
    await agent.double(3);
    const kept = lastRecord(agent).attempts!;
    expect(kept.map((attempt) => [attempt.n, attempt.program_source, attempt.provider])).toEqual([[0, "reused", undefined]]);
    const failing = Agent.for("calc", { provider: { name: "down", generate: async () => { throw new Error("503 from upstream"); } }, maxGenerationAttempts: 2 });
    const outcome = await failing.double(2);
    expect(outcome.ok).toBe(false);
    const record = lastRecord(failing);
    expect(record.attempts!.map((attempt) => [attempt.n, attempt.program_source, attempt.program_hash, attempt.error_type])).toEqual([
      [1, undefined, undefined, "provider"],
      [2, undefined, undefined, "provider"],
    ]);
    expect(record.repair_skipped).toBeUndefined();
  });

  test("an attempt keeps its own failure when the call's time runs out after it: the record and the log line agree", async () => {
    // The provider answers with a failure just after the call's time ran out (it holds the thread, so no timer ends it first).
    const overloaded = () => {
      const until = Date.now() + 300;
      while (Date.now() < until);
      return { error: "the provider is overloaded (HTTP 529)" };
    };
    const { agent, logLines } = agentWith({ go: overloaded } as never, { callTimeoutMs: 250, reuse: false, log: tempLogPath("improv-attempts-") });
    expect((await agent.go()).errorType).toBe("timeout");
    const attempts = lastRecord(agent).attempts as AttemptRecord[];
    expect(attempts.map((attempt) => [attempt.n, attempt.error_type])).toEqual([[1, "provider"]]);
    expect(attempts[0]?.error_message).toContain("overloaded");
    expect(logLines().at(-1)?.attempt_errors).toEqual([{ attempt: 1, error_type: "provider", error_message: expect.stringContaining("overloaded") }]);
  });

  test("repair_skipped says why a failed program was not repaired: attempts used up, effects, not a mistake", async () => {
    const order: Tool = { description: "Orders.", inputSchema: { type: "object" }, execute: () => "ok" };
    const provider = new ScriptedProvider({
      programs: {
        "a.wrong": ["return nope1", "return nope2"],
        "a.wrote": "await tools.order({}); return nope",
        "a.slow": "while (true) {}",
      },
    });
    const agent = Agent.for("a", { provider, tools: { order }, maxGenerationAttempts: 2, executionTimeoutMs: 200 });
    expect((await agent.wrong()).ok).toBe(false);
    expect(lastRecord(agent)).toMatchObject({ repair_skipped: "attempts_used" });
    expect(lastRecord(agent).attempts).toHaveLength(2);
    expect((await agent.wrote()).ok).toBe(false);
    expect(lastRecord(agent)).toMatchObject({ repair_skipped: "effects" });
    expect(lastRecord(agent).attempts!.map((attempt) => attempt.tool_call_count)).toEqual([1]);
    expect((await agent.slow()).ok).toBe(false);
    expect(lastRecord(agent)).toMatchObject({ repair_skipped: "not_a_mistake", error_type: "timeout" });
  });

  test("only the last 5 attempts are kept; a 64 KiB program is cut in the log line, whole in its hash; HTML in programs and errors is data", async () => {
    const big = `return "${"x".repeat(64 * 1024)}" + nope`;
    // An engine error whose message quotes the program's own markup: a mistake, repaired, kept as text.
    const hostile = "return null['<script>alert(1)</script>']";
    const programs = [hostile, big, "return nope", "return nope", "return nope", "return nope", "return 1"];
    const provider = new ScriptedProvider({ programs: { go: programs } });
    const { agent, logLines, log } = agentWith({}, { role: "many", provider, log: tempLogPath("improv-attempts-"), maxGenerationAttempts: 7 });
    expect((await agent.go()).value).toBe(1);
    const record = lastRecord(agent);
    expect(record.attempts!.map((attempt) => attempt.n)).toEqual([3, 4, 5, 6, 7]);
    const line = logLines().at(-1)!;
    const logged = line.attempts as { n: number; program: string; program_hash: string; error_message?: string }[];
    expect(logged.map((attempt) => attempt.n)).toEqual([3, 4, 5, 6, 7]);
    expect(readFileSync(log!, "utf8").length).toBeLessThan(200_000);
    const threeAttempts = new ScriptedProvider({ programs: { go: [hostile, big, "return 2"] } });
    const second = agentWith({}, { role: "few", provider: threeAttempts, log: tempLogPath("improv-attempts-"), maxGenerationAttempts: 3 });
    await second.agent.go();
    const attempts = second.logLines().at(-1)!.attempts as { program: string; program_hash: string; error_message?: string }[];
    expect(attempts[0]!.error_message).toContain("<script>alert(1)</script>");
    expect(attempts[1]!.program.length).toBeLessThanOrEqual(20_100);
    expect(attempts[1]!.program_hash).toBe(hash(big));
  });

  test("the line's own program, cut at 10,000 characters in `code` as in the record, is kept to 20,000 in its attempt", async () => {
    const long = `return ${JSON.stringify("y".repeat(15_000))}.length`;
    const { agent, logLines } = agentWith({ go: long }, { role: "long", log: tempLogPath("improv-attempts-") });
    expect((await agent.go()).value).toBe(15_000);
    const line = logLines().at(-1)!;
    expect(String(line.code)).toMatch(/…\[truncated \d+ chars\]$/);
    const [attempt] = line.attempts as { program?: string }[];
    expect(attempt?.program).toBe(long);
    // A short program is in `code` whole, and not written twice.
    const { agent: short, logLines: shortLines } = agentWith({ go: "return 1" }, { role: "short", log: tempLogPath("improv-attempts-") });
    await short.go();
    expect((shortLines().at(-1)!.attempts as { program?: string }[])[0]?.program).toBeUndefined();
  });

  test("a call whose attempts are used up by a call tree 20 deep keeps each call's own attempts", async () => {
    const programs: Record<string, string> = {};
    for (let depth = 0; depth < 20; depth += 1) programs[`d${depth}.go`] = depth === 19 ? "return 'bottom'" : `return (await delegate('d${depth + 1}').go()).value`;
    const root = Agent.for("d0", { provider: new ScriptedProvider({ programs }), maxDelegationDepth: 25 });
    expect((await root.go()).value).toBe("bottom");
    const record = lastRecord(root);
    expect(record.attempts!.map((attempt) => attempt.n)).toEqual([1]);
  });
});
