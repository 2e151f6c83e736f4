import { describe, expect, test } from "vitest";
import { Agent, ImprovError, ScriptedProvider } from "../../src/index.ts";

describe("delegation from application code", () => {
  test("a child inherits the parent's options and sits one level deeper", async () => {
    const provider = new ScriptedProvider({ programs: { mean: "return args[0].reduce((a, b) => a + b, 0) / args[0].length" } });
    const calc = Agent.for("calculator", { provider, traceId: "trace-app" });
    const stats = calc.delegate("statistician");
    expect(Agent.role(stats)).toBe("statistician");
    expect(stats instanceof Agent).toBe(true);
    const r = await stats.mean([1, 2, 3]);
    expect(r.value).toBe(2);
    const [record] = Agent.history(stats);
    expect(record).toMatchObject({ speaker: "user", depth: 1, trace_id: "trace-app" });
    expect(Agent.history(calc)).toHaveLength(0);
  });

  test("the same role gives the same child, so its history accumulates", () => {
    const calc = Agent.for("calculator", { provider: new ScriptedProvider({ programs: {} }) });
    expect(calc.delegate("statistician")).toBe(calc.delegate("statistician"));
  });

  test("an agent keeps helpers of at most 1,024 roles: a new role past them is budget_exceeded, for the application as for a program, and the roles kept still answer", async () => {
    const provider = new ScriptedProvider({ programs: { "boss.more": "const r = await delegate('one-more-role').work(); return r", "boss.again": "const r = await delegate('r7').work(); return r", work: "return 'worked'" } });
    const boss = Agent.for("boss", { provider, reuse: false });
    for (let index = 0; index < 1_024; index += 1) boss.delegate(`r${index}`);
    expect(() => boss.delegate("r1024")).toThrow(expect.objectContaining({ errorType: "budget_exceeded", message: expect.stringMatching(/^Agent "boss" has helpers of 1024 roles, the most an agent keeps: delegate to a role it has, or make another agent\.$/) }));
    expect(boss.delegate("r7")).toBe(boss.delegate("r7"));
    expect((await boss.more()).value).toMatchObject({ ok: false, error_type: "budget_exceeded" });
    expect((await boss.again()).value).toMatchObject({ ok: true, value: "worked" });
  });

  test("beyond maxDelegationDepth, delegate throws a budget_exceeded ImprovError", () => {
    const calc = Agent.for("calculator", { provider: new ScriptedProvider({ programs: {} }), maxDelegationDepth: 1 });
    const child = calc.delegate("one");
    expect(() => child.delegate("two")).toThrow(ImprovError);
    expect(() => child.delegate("two")).toThrow(expect.objectContaining({ errorType: "budget_exceeded" }));
  });
});

describe("delegation from generated code", () => {
  const programs = {
    "builder.build": "const r = await delegate('statistician').mean([2, 4]); return { got: r }",
    "statistician.mean": "return args[0].reduce((a, b) => a + b, 0) / args[0].length",
    "builder.chain": "const r = await delegate('builder').chain(); return r",
    "builder.catches": "try { delegate('deeper') } catch (e) { return 'caught ' + e.name } return 'no throw'",
    "builder.fails": "const r = await delegate('statistician').broken(); return r",
    "statistician.broken": "throw new Error('child broke')",
    "builder.reserved": "return await delegate('statistician').remember({ a: 1 })",
  };

  test("the child's Outcome comes back as a plain object, recorded in the child's history as speaker tool", async () => {
    const builder = Agent.for("builder", { provider: new ScriptedProvider({ programs }) });
    const r = await builder.build();
    expect(r.value).toEqual({ got: { status: "ok", ok: true, value: 3, retriable: false } });
    const [parentRecord] = Agent.history(builder);
    const [childRecord] = Agent.history(builder.delegate("statistician"));
    expect(childRecord).toMatchObject({ speaker: "tool", depth: 1, parent_call_id: parentRecord?.call_id, trace_id: parentRecord?.trace_id });
    expect(parentRecord).toMatchObject({ speaker: "user", depth: 0 });
    expect(Agent.history(builder)).toHaveLength(1);
  });

  test("trace_id is shared and parent_call_id links each level of a chain", async () => {
    const builder = Agent.for("builder", { provider: new ScriptedProvider({ programs }), maxDelegationDepth: 3 });
    const r = await builder.chain();
    // Depth 3 is allowed; the program at depth 3 then fails to delegate to depth 4.
    expect(r.ok).toBe(true);
    let agent = builder;
    const records = [];
    for (let depth = 0; depth <= 3; depth += 1) {
      records.push(Agent.history(agent)[0]!);
      if (depth < 3) agent = agent.delegate("builder");
    }
    expect(new Set(records.map((rec) => rec.trace_id)).size).toBe(1);
    expect(records.map((rec) => rec.depth)).toEqual([0, 1, 2, 3]);
    for (let depth = 1; depth <= 3; depth += 1) expect(records[depth]?.parent_call_id).toBe(records[depth - 1]?.call_id);
    expect(records[3]?.outcome_summary.error_type).toBe("budget_exceeded");
  });

  test("an uncaught BudgetExceededError makes the call budget_exceeded", async () => {
    const builder = Agent.for("builder", { provider: new ScriptedProvider({ programs }), maxDelegationDepth: 0 });
    const r = await builder.build();
    expect(r.errorType).toBe("budget_exceeded");
    expect(r.errorMessage).toBe('BudgetExceededError: delegate("statistician") would reach delegation depth 1, beyond maxDelegationDepth 0.');
    expect(r.retriable).toBe(false);
  });

  test("a caught BudgetExceededError lets the program go on", async () => {
    const builder = Agent.for("builder", { provider: new ScriptedProvider({ programs }), maxDelegationDepth: 0 });
    expect((await builder.catches()).value).toBe("caught BudgetExceededError");
  });

  test("a program's own error named BudgetExceededError is an execution error, not a budget one", async () => {
    const builder = Agent.for("builder", {
      provider: new ScriptedProvider({ programs: { fake: "const e = new Error('forged'); e.name = 'BudgetExceededError'; throw e" } }),
    });
    expect((await builder.fake()).errorType).toBe("execution");
  });

  test("a child's failure is an error Outcome the calling program receives and may go on from", async () => {
    const builder = Agent.for("builder", { provider: new ScriptedProvider({ programs }) });
    const r = await builder.fails();
    expect(r.ok).toBe(true);
    expect(r.value).toEqual({ status: "error", ok: false, error_type: "execution", error_message: "Error: child broke", retriable: false });
  });

  test("reserved names cannot be called through delegate", async () => {
    const builder = Agent.for("builder", { provider: new ScriptedProvider({ programs }) });
    const r = await builder.reserved();
    expect(r.value).toMatchObject({ ok: false, error_type: "invalid_input" });
  });
});
