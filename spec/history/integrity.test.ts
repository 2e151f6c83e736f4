import { describe, expect, test, vi } from "vitest";
import { Agent, ScriptedProvider } from "../../src/index.ts";
import { agentWith, type AnyAgent } from "../../test-support/agents.ts";

/** An agent running `programs`, with `add` and `fail` to seed its history with. */
function historian(programs: Record<string, string>): AnyAgent {
  const seeds = { add: "context.total = (context.total ?? 0) + args[0]; return context.total", fail: "throw new Error('nope')" };
  return agentWith({ ...seeds, ...programs }, { role: "historian", executionTimeoutMs: 1_000, memoryLimitMb: 16 }).agent;
}

async function seed(agent: AnyAgent): Promise<void> {
  await agent.add(1);
  await agent.add(2);
  await agent.fail();
  await agent.add(3);
}

describe("generated code reads history as plain data", () => {
  const queries: [string, string, unknown][] = [
    ["filter", "return context.conversation_history.filter((r) => r.outcome_summary.ok).length", 3],
    ["map", "return context.conversation_history.map((r) => r.method_name)", ["add", "add", "fail", "add"]],
    ["slice", "return context.conversation_history.slice(-2).map((r) => r.args[0] ?? null)", [null, 3]],
    ["find", "return context.conversation_history.find((r) => !r.outcome_summary.ok).error_type", "execution"],
    ["findLast", "return context.conversation_history.findLast((r) => r.method_name === 'add').args", [3]],
    ["reduce", "return context.conversation_history.reduce((sum, r) => sum + (r.args[0] ?? 0), 0)", 6],
    ["Object.groupBy", "const g = Object.groupBy(context.conversation_history, (r) => r.method_name); return Object.keys(g).map((k) => [k, g[k].length])", [["add", 3], ["fail", 1]]],
    ["for...of", "let n = 0; for (const r of context.conversation_history) if (r.speaker === 'user') n++; return n", 4],
    ["destructuring", "const { conversation_history: h } = context; const [first] = h; return first.method_name", "add"],
    ["Array.isArray and JSON", "const h = context.conversation_history; return [Array.isArray(h), JSON.parse(JSON.stringify(h)).length]", [true, 4]],
    ["spreading", "return [...context.conversation_history].reverse()[0].args", [3]],
  ];

  test.each(queries)("%s", async (_name, program, expected) => {
    const agent = historian({ query: program });
    await seed(agent);
    const r = await agent.query();
    expect(r.errorMessage).toBeUndefined();
    expect(r.value).toEqual(expected);
  });
});

describe("generated code cannot damage the history", () => {
  const attacks: [string, string][] = [
    ["assigning a new array", "context.conversation_history = []"],
    ["assigning in strict mode", "'use strict'; context.conversation_history = []"],
    ["deleting it", "delete context.conversation_history"],
    ["truncating it", "context.conversation_history.length = 0"],
    ["pushing a forged record", "context.conversation_history.push({ call_id: 'forged' })"],
    ["splicing", "context.conversation_history.splice(0, 2)"],
    ["sorting in place", "context.conversation_history.sort()"],
    ["editing a record", "context.conversation_history[0].method_name = 'forged'; context.conversation_history[0].outcome_summary.ok = false"],
    ["editing a record in strict mode", "'use strict'; context.conversation_history[0].args.push('forged')"],
    ["redefining an entry", "Object.defineProperty(context.conversation_history, 0, { value: { forged: true } })"],
    ["changing its prototype", "Object.setPrototypeOf(context.conversation_history, null)"],
    ["freezing it", "Object.freeze(context.conversation_history)"],
    ["replacing it with a Proxy", "Object.defineProperty(context, 'conversation_history', { value: new Proxy([], {}) })"],
    ["killing the isolate with memory", "const hog = []; while (true) hog.push(new Array(1e6).fill(1))"],
    ["running past the deadline", "while (true) {}"],
  ];

  test.each(attacks)("%s", async (_name, attack) => {
    const agent = historian({ attack: `${attack}; return 'done'`, count: "return context.conversation_history.map((r) => r.method_name + ':' + r.outcome_summary.ok)" });
    await seed(agent);
    const before = JSON.stringify(Agent.history(agent));
    const contextBefore = { ...agent.runtimeContext };
    const r = await agent.attack();
    const after = Agent.history(agent);
    expect(after).toHaveLength(5);
    expect(JSON.stringify(after.slice(0, 4))).toBe(before);
    if (!r.ok) expect(agent.runtimeContext).toEqual(contextBefore);
    const seen = await agent.count();
    expect(seen.value).toEqual(["add:true", "add:true", "fail:false", "add:true", `attack:${r.ok}`]);
  });

  test("a program changing its copy of a record does not change what the next program reads", async () => {
    const agent = historian({
      tamper: "const r = { ...context.conversation_history[0] }; r.method_name = 'changed'; return r.method_name",
      read: "return context.conversation_history[0].method_name",
    });
    await seed(agent);
    expect((await agent.tamper()).value).toBe("changed");
    expect((await agent.read()).value).toBe("add");
  });

  test("a program that reads the history with its stack nearly full, and catches the failure, loses no record for later programs", async () => {
    // Recurses to the stack's end, then, frame by frame on the way back, reads the history with
    // ever less stack to spare until a read succeeds.
    const attack = `
      let reads = 0;
      function reader() { return context.conversation_history.length; }
      function dive(depth) {
        try { return dive(depth + 1); } catch (error) {
          if (reads > 0) throw error;
          for (let spare = 200; spare >= 0; spare--) { try { reader(...new Array(spare)); reads += 1; break; } catch {} }
          if (reads === 0) throw error;
          return depth;
        }
      }
      dive(0);
      return context.conversation_history.length;`;
    const agent = historian({ attack, names: "return context.conversation_history.map((r) => r.method_name)" });
    await seed(agent);
    for (let call = 0; call < 4; call += 1) await agent.attack();
    const names = await agent.names();
    expect(names.value).toEqual(Agent.history(agent).slice(0, -1).map((record) => record.method_name));
    expect(names.value).toEqual(["add", "add", "fail", "add", "attack", "attack", "attack", "attack"]);
  });
});

describe("application-supplied history", () => {
  const valid = {
    call_id: "imported-1",
    timestamp: "2024-05-01T10:00:00.000Z",
    speaker: "user",
    method_name: "lookup",
    args: ["weather"],
    kwargs: {},
    outcome_summary: { status: "ok", ok: true, error_type: null, retriable: false, value_class: "string" },
  };

  /** The warnings a test provokes, caught (not printed among the run's output) until `stop`. */
  function collectWarnings(): { messages: string[]; stop: () => void } {
    const messages: string[] = [];
    const spy = vi.spyOn(process, "emitWarning").mockImplementation(((warning: string | Error) => void messages.push(typeof warning === "string" ? warning : warning.message)) as typeof process.emitWarning);
    return { messages, stop: () => spy.mockRestore() };
  }

  test("valid records are kept, replace the history, and generated code reads them", async () => {
    const agent = historian({ previous: "return context.conversation_history.map((r) => r.call_id)" });
    await agent.add(1);
    agent.remember({ conversation_history: [valid] });
    expect(Agent.history(agent)).toEqual([valid]);
    expect((await agent.previous()).value).toEqual(["imported-1"]);
  });

  test("malformed entries are dropped with a warning; valid ones are kept", async () => {
    const warnings = collectWarnings();
    const agent = historian({});
    agent.remember({ conversation_history: [valid, { call_id: "no-fields" }, 42, { ...valid, speaker: "robot" }] });
    await new Promise((resolve) => setImmediate(resolve));
    warnings.stop();
    expect(Agent.history(agent).map((r) => r.call_id)).toEqual(["imported-1"]);
    expect(warnings.messages).toEqual([
      "conversation_history[1] was dropped: timestamp is not ISO 8601 UTC with milliseconds.",
      "conversation_history[2] was dropped: it is not an object.",
      'conversation_history[3] was dropped: speaker is not "user", "tool" or "agent".',
    ]);
  });

  test("a non-array becomes an empty history, with a warning in debug mode only", async () => {
    const warnings = collectWarnings();
    const quiet = historian({});
    quiet.remember({ conversation_history: "not an array" });
    const loud = Agent.for<{ conversation_history: unknown }>("historian", { provider: new ScriptedProvider({ programs: {} }), debug: true });
    loud.conversation_history = { nope: true };
    await new Promise((resolve) => setImmediate(resolve));
    warnings.stop();
    expect(Agent.history(quiet)).toEqual([]);
    expect(Agent.history(loud)).toEqual([]);
    expect(warnings.messages).toEqual(["conversation_history must be an array of records; it was replaced by an empty history."]);
  });

  test("non-JSON values inside otherwise valid records become stand-ins", () => {
    const agent = historian({});
    agent.remember({ conversation_history: [{ ...valid, args: [10n, Number.NaN] }] });
    expect(Agent.history(agent)[0]?.args).toEqual(["[BigInt 10]", "[NaN]"]);
  });
});
