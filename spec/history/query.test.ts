import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider, type HistoryQuery, type HistoryRecord } from "../../src/index.ts";

/** What a query should return, by filtering every record: the oracle for the index. */
function naive(records: readonly HistoryRecord[], query: HistoryQuery): HistoryRecord[] {
  const time = (value: Date | string | number) => (value instanceof Date ? value.getTime() : typeof value === "number" ? value : Date.parse(value));
  const found = records.filter((record) => {
    if (query.method !== undefined && record.method_name !== query.method) return false;
    if (query.status !== undefined && record.outcome_summary.status !== query.status) return false;
    if (query.errorType !== undefined && record.outcome_summary.error_type !== query.errorType) return false;
    if (query.speaker !== undefined && record.speaker !== query.speaker) return false;
    if (query.traceId !== undefined && record.trace_id !== query.traceId) return false;
    const at = Date.parse(record.timestamp);
    if (query.since !== undefined && at < time(query.since)) return false;
    if (query.until !== undefined && at > time(query.until)) return false;
    return true;
  });
  return query.last === undefined ? found : found.slice(Math.max(0, found.length - query.last));
}

function calculator() {
  const provider = new ScriptedProvider({
    programs: {
      add: "return args[0] + args[1]",
      div: "if (args[1] === 0) throw new RangeError('division by zero'); return args[0] / args[1]",
      slow: "return args[0]",
      missing: "return undefinedThing.value",
    },
  });
  return Agent.for("calculator", { provider, reuse: false, maxGenerationAttempts: 1, executionTimeoutMs: 2_000 });
}

describe("Agent.history(agent, query)", () => {
  test("answers every combination of filters as filtering the whole history would", async () => {
    const calc = calculator();
    for (let call = 0; call < 60; call += 1) {
      const method = ["add", "div", "missing"][call % 3]!;
      await (calc as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[method]!(call, call % 4);
    }
    const records = Agent.history(calc);
    expect(records).toHaveLength(60);
    const middle = records[30]!.timestamp;
    const queries: HistoryQuery[] = [
      {},
      { method: "add" },
      { method: "div", status: "error" },
      { status: "ok" },
      { status: "error" },
      { errorType: "execution" },
      { errorType: "invalid_code" },
      { method: "div", errorType: "execution" },
      { status: "ok", errorType: "execution" },
      { speaker: "user" },
      { speaker: "tool" },
      { method: "nothing" },
      { last: 5 },
      { last: 0 },
      { method: "add", last: 3 },
      { status: "error", last: 4 },
      { since: middle },
      { until: new Date(middle) },
      { since: Date.parse(middle), method: "div", last: 2 },
      { traceId: records[7]!.trace_id as string },
      { traceId: "no-such-trace" },
    ];
    for (const query of queries) expect(Agent.history(calc, query), JSON.stringify(query)).toEqual(naive(records, query));
  });

  test("finds calls by trace and by speaker across a delegation, in the child's history", async () => {
    const provider = new ScriptedProvider({
      programs: { "boss.plan": "const r = await delegate('helper').assist(1); return r.value", "helper.assist": "return args[0] + 1" },
    });
    const boss = Agent.for("boss", { provider, traceId: "trace-1", reuse: false });
    await boss.plan();
    await boss.plan();
    expect(Agent.history(boss, { traceId: "trace-1" })).toHaveLength(2);
    // The boss's own delegate handle is the child agent its programs used.
    const helper = boss.delegate("helper");
    const tool = Agent.history(helper, { speaker: "tool" });
    expect(tool.map((record) => record.method_name)).toEqual(["assist", "assist"]);
    expect(Agent.history(helper, { speaker: "user" })).toEqual([]);
    expect(tool[0]?.trace_id).toBe("trace-1");
  });

  test("indexes application-supplied history when first queried, and again after it is replaced", async () => {
    const calc = calculator();
    const supplied = Array.from({ length: 500 }, (_, index) => ({
      call_id: `c-${index}`,
      timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString(),
      speaker: "user",
      method_name: index % 2 === 0 ? "add" : "mul",
      args: [index],
      kwargs: {},
      outcome_summary: { status: "ok", ok: true, error_type: null, retriable: false, value_class: "number" },
    }));
    calc.remember({ conversation_history: supplied });
    await calc.add(1, 2);
    const mul = Agent.history(calc, { method: "mul", last: 2 });
    expect(mul.map((record) => record.call_id)).toEqual(["c-497", "c-499"]);
    expect(Agent.history(calc, { method: "add" })).toHaveLength(251);
    expect(Agent.history(calc, { since: "2026-01-01T00:08:00.000Z", until: "2026-01-01T00:08:01.000Z" }).map((record) => record.call_id)).toEqual(["c-480", "c-481"]);
    calc.remember({ conversation_history: supplied.slice(0, 3) });
    expect(Agent.history(calc, { method: "add" }).map((record) => record.call_id)).toEqual(["c-0", "c-2"]);
    expect(Object.isFrozen(Agent.history(calc, { method: "add" }))).toBe(true);
  });

  test("says what is wrong with a query", () => {
    const calc = calculator();
    expect(() => Agent.history(calc, { methods: "add" } as never)).toThrow('Unknown history query field "methods". Valid fields: method, status, errorType, speaker, traceId, since, until, last.');
    expect(() => Agent.history(calc, { status: "failed" } as never)).toThrow('History query field status must be "ok" or "error".');
    expect(() => Agent.history(calc, { last: -1 })).toThrow("History query field last must be a whole number ≥ 0.");
    expect(() => Agent.history(calc, { since: "yesterday" })).toThrow("History query field since must be a Date, an ISO 8601 string or epoch milliseconds.");
    expect(() => Agent.history(calc, null as never)).toThrow("Agent.history(agent, query): the query must be an object.");
  });
});

describe("Agent.trace(traceId)", () => {
  test("the call tree of one top-level call across the agents it reached, parents first, children in call order", async () => {
    const provider = new ScriptedProvider({
      programs: {
        "boss.plan": "const a = await delegate('helper').assist(1); const b = await delegate('helper').assist(2); return a.value + b.value",
        "helper.assist": "const r = await delegate('calc').add(args[0], 10); return r.value",
        "calc.add": "return args[0] + args[1]",
      },
    });
    const boss = Agent.for("boss", { provider, reuse: false });
    const first = await boss.plan();
    expect(first.value).toBe(23);
    await boss.plan(); // another trace, which must not appear
    const traceId = Agent.history(boss)[0]!.trace_id as string;
    const tree = Agent.trace(traceId);
    expect(tree.map((node) => `${node.role}.${node.method_name}`)).toEqual(["boss.plan", "helper.assist", "calc.add", "helper.assist", "calc.add"]);
    const [root] = tree;
    expect(root!.call_id).toBe(first.callId);
    expect(root!.children.map((node) => node.args)).toEqual([[1], [2]]);
    expect(root!.children[1]!.children[0]!.args).toEqual([2, 10]);
    for (const node of tree) {
      expect(node.trace_id).toBe(traceId);
      expect(typeof node.agent_id).toBe("string");
      for (const child of node.children) expect(child.parent_call_id).toBe(node.call_id);
    }
    expect(new Set(tree.filter((node) => node.role === "helper").map((node) => node.agent_id)).size).toBe(1);
    expect(Object.isFrozen(tree)).toBe(true);
    expect(Agent.trace("no-such-trace")).toEqual([]);
    expect(() => Agent.trace("")).toThrow("Agent.trace(traceId) takes the trace id of a call (a non-empty string).");
  });
});
