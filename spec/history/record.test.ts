import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider } from "../../src/index.ts";
import { createRecord, MAX_RECORD_BYTES, recordBytes } from "../../src/history/record.ts";
import { CALL_PATHS } from "../../test-support/call-paths.ts";

const schema = JSON.parse(readFileSync(new URL("../../schema/history-record.schema.json", import.meta.url), "utf8")) as object;
const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);

function expectValid(record: unknown): void {
  const valid = validate(record);
  expect(validate.errors ?? [], JSON.stringify(record)).toEqual([]);
  expect(valid).toBe(true);
}

describe("records from every path match the JSON Schema", () => {
  test.each(CALL_PATHS)("$expected", async ({ expected, programs, options, call }) => {
    const agent = Agent.for("recorder", { provider: new ScriptedProvider({ programs }), ...options });
    const outcome = await call(agent);
    expect(outcome.errorType ?? "ok").toBe(expected);
    const [record] = Agent.history(agent);
    expectValid(record);
    // Every record is valid JSON as it stands.
    expect(JSON.parse(JSON.stringify(record))).toEqual(record);
  });

  test("cancelled", async () => {
    const agent = Agent.for("recorder", { provider: new ScriptedProvider({ programs: { m: "return 1" } }), signal: AbortSignal.abort() });
    await agent.m();
    expectValid(Agent.history(agent)[0]);
  });

  test("a delegated call's record", async () => {
    const agent = Agent.for("recorder", {
      provider: new ScriptedProvider({ programs: { m: "return (await delegate('helper').h(1)).value", h: "return args[0]" } }),
    });
    await agent.m();
    const [child] = Agent.history(agent.delegate("helper"));
    expectValid(child);
    expect(child).toMatchObject({ speaker: "tool", depth: 1 });
  });

  test("the schema rejects records that break the contract", () => {
    const { record: good } = createRecord({
      callId: "c1", startedAt: new Date(0), speaker: "user", method: "m", args: [], kwargs: {},
      outcome: { status: "ok", ok: true, value: 1, retriable: false }, traceId: "t", parentCallId: undefined, depth: 0, durationMs: 1, program: { code: "return 1", source: "generated" }, artifactHit: false,
    });
    expectValid(good);
    for (const bad of [
      { ...good, timestamp: "2024-01-01T00:00:00Z" },
      { ...good, speaker: "robot" },
      { ...good, args: {} },
      { ...good, outcome_summary: { ...good.outcome_summary, error_type: "oops" } },
      { ...good, outcome_summary: { status: "ok", ok: true, error_type: null, retriable: false } },
    ]) {
      expect(validate(bad)).toBe(false);
    }
  });
});

describe("record fields", () => {
  test("required fields are present with the right types, and the full value is not stored", async () => {
    const agent = Agent.for("recorder", { provider: new ScriptedProvider({ programs: { m: "return { secret: 'value-not-kept', n: args[0] }" } }), traceId: "trace-1" });
    const outcome = await agent.m(41);
    const [record] = Agent.history(agent);
    expect(record).toMatchObject({
      call_id: outcome.callId,
      speaker: "user",
      method_name: "m",
      args: [41],
      kwargs: {},
      outcome_summary: { status: "ok", ok: true, error_type: null, retriable: false, value_class: "object" },
      trace_id: "trace-1",
      depth: 0,
      program_source: "generated",
      program: "return { secret: 'value-not-kept', n: args[0] }",
      artifact_hit: false,
    });
    expect(record?.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(record?.duration_ms).toBeGreaterThanOrEqual(0);
    expect(JSON.stringify(Agent.history(agent))).not.toContain("value-not-kept\"");
    expect(Object.hasOwn(record!, "parent_call_id")).toBe(false);
    expect(Object.hasOwn(record!, "error_type")).toBe(false);
  });

  test("an error record carries error_type and error_message at top level too", async () => {
    const agent = Agent.for("recorder", { provider: new ScriptedProvider({ programs: { m: "throw new TypeError('bad')" } }) });
    await agent.m();
    expect(Agent.history(agent)[0]).toMatchObject({
      error_type: "execution",
      error_message: "TypeError: bad",
      outcome_summary: { status: "error", ok: false, error_type: "execution", retriable: false },
    });
  });

  test("value_class names the returned value's class", async () => {
    const agent = Agent.for("recorder", {
      provider: new ScriptedProvider({ programs: { d: "return new Date(0)", a: "return [1]", n: "return null", u: "return undefined", m: "return new Map()" } }),
    });
    for (const method of ["d", "a", "n", "u", "m"]) await agent[method]();
    expect(Agent.history(agent).map((r) => r.outcome_summary.value_class)).toEqual(["Date", "array", "null", "undefined", "Map"]);
  });

  test("Agent.history is frozen, shared until the next call, and its records are frozen", async () => {
    const agent = Agent.for("recorder", { provider: new ScriptedProvider({ programs: { m: "return 1" } }) });
    await agent.m();
    const first = Agent.history(agent);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first[0])).toBe(true);
    expect(Object.isFrozen(first[0]?.outcome_summary)).toBe(true);
    expect(Agent.history(agent)).toBe(first);
    await agent.m();
    expect(Agent.history(agent)).not.toBe(first);
    expect(first).toHaveLength(1);
  });
});

describe("record size", () => {
  test("a record past 64 KiB is cut down with markers, keeping its required fields", () => {
    const { record, json } = createRecord({
      callId: "c", startedAt: new Date(0), speaker: "user", method: "m",
      args: Array.from({ length: 50 }, () => "y".repeat(9_000)), kwargs: { small: 1 },
      outcome: { status: "error", ok: false, errorType: "execution", errorMessage: "e".repeat(50_000), retriable: false },
      traceId: "t", parentCallId: undefined, depth: 0, durationMs: 1, program: { code: "x".repeat(50_000), source: "generated" }, artifactHit: false,
    });
    expect(recordBytes(record)).toBeLessThanOrEqual(MAX_RECORD_BYTES);
    expect(JSON.parse(json)).toEqual(record);
    expect(record.args).toEqual([expect.stringMatching(/^\[truncated: args were \d+ bytes as JSON\]$/)]);
    expect(record.kwargs).toEqual({ small: 1 });
    expect(record.program).toMatch(/…\[truncated \d+ chars\]$/);
    expect(record.program_source).toBe("generated");
    expectValid(record);
  });
});
