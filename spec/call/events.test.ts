/**
 * `Agent.call(…, { onEvent })`: each step of a call told as it goes, for a UI: asking, the program,
 * running, tool calls, failed attempts, the end; a kept program's run; a listener that throws
 * changes nothing; bad options are a TypeError.
 */
import { describe, expect, test } from "vitest";
import { Agent, type CallEvent, ScriptedProvider, type Tool } from "../../src/index.ts";

const look: Tool = { description: "Looks.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: () => 7 };

describe("onEvent", () => {
  test("a call that is repaired: asking, program, running, its tool call, the failed attempt, the repair, done; times only go up", async () => {
    const provider = new ScriptedProvider({ programs: { solve: ["await tools.look({}); return nope", "return (await tools.look({})) * 2"], "helper.go": "return 1" } });
    const agent = Agent.for("solver", { provider, tools: { look } });
    const events: CallEvent[] = [];
    const outcome = await Agent.call(agent, "solve", [], { onEvent: (event) => events.push(event) });
    expect(outcome.value).toBe(14);
    expect(events.map(({ callId: _id, role: _role, method: _method, atMs: _at, ...step }) => step)).toEqual([
      { type: "asking", attempt: 1 },
      { type: "program", attempt: 1, source: "generated" },
      { type: "running", attempt: 1 },
      { type: "tool", tool: "look", effect: "read" },
      { type: "attempt_failed", attempt: 1, errorType: "execution", errorMessage: expect.stringContaining("nope is not defined") },
      { type: "asking", attempt: 2 },
      { type: "program", attempt: 2, source: "repaired" },
      { type: "running", attempt: 2 },
      { type: "tool", tool: "look", effect: "read" },
      { type: "done", status: "ok", errorType: null },
    ]);
    expect(new Set(events.map((event) => event.callId))).toEqual(new Set([outcome.callId]));
    expect(events.every((event) => event.role === "solver" && event.method === "solve")).toBe(true);
    const times = events.map((event) => event.atMs);
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  test("a kept program's run tells program (reused), running and done, with no asking; a listener that throws changes nothing", async () => {
    const provider = new ScriptedProvider({ programs: { double: "return args[0] * 2" } });
    const agent = Agent.for("calc", { provider });
    await agent.double(1);
    const types: string[] = [];
    const outcome = await Agent.call(agent, "double", [4], {
      onEvent: (event) => {
        types.push(event.type);
        throw new Error("the UI fell over");
      },
    });
    expect(outcome.value).toBe(8);
    expect(types).toEqual(["program", "running", "done"]);
    expect(Agent.history(agent)).toHaveLength(2);
  });

  test("a failed call ends with done and its error type; onEvent must be a function", async () => {
    const agent = Agent.for("calc", { provider: new ScriptedProvider({ programs: { bad: "throw new RangeError('no')" } }) });
    const events: CallEvent[] = [];
    await Agent.call(agent, "bad", [], { onEvent: (event) => events.push(event) });
    expect(events.at(-1)).toMatchObject({ type: "done", status: "error", errorType: "execution" });
    expect(() => Agent.call(agent, "bad", [], { onEvent: "log" as never })).toThrow(new TypeError('Agent.call() option "onEvent" must be a function (event) => void.'));
  });
});
