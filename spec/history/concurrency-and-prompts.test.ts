import { describe, expect, test } from "vitest";
import { Agent, kw, ScriptedProvider } from "../../src/index.ts";

describe("concurrency", () => {
  test("200 concurrent calls on one agent give 200 records, unique call ids and no lost update", async () => {
    const provider = new ScriptedProvider({
      programs: { inc: { delayMs: 5, code: "const n = context.n ?? 0; await null; context.n = n + 1; return context.n" } },
    });
    const agent = Agent.for("counter", { provider });
    const outcomes = await Promise.all(Array.from({ length: 200 }, () => agent.inc()));
    expect(outcomes.every((r) => r.ok)).toBe(true);
    expect(agent.runtimeContext.n).toBe(200);
    const history = Agent.history(agent);
    expect(history).toHaveLength(200);
    expect(new Set(history.map((r) => r.call_id)).size).toBe(200);
    expect(new Set(outcomes.map((r) => r.callId))).toEqual(new Set(history.map((r) => r.call_id)));
    expect(outcomes.map((r) => r.value).sort((a, b) => (a as number) - (b as number))).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
  });
});

describe("prompts", () => {
  test("the system prompt explains the history contract", async () => {
    const provider = new ScriptedProvider({ programs: { m: "return 1" } });
    await Agent.for("explainer", { provider }).m();
    const system = provider.calls[0]?.system ?? "";
    expect(system).toContain("`context.conversation_history` is a read-only array of structured records");
    expect(system).toContain("Query it directly with ordinary array methods");
    expect(system).toContain("Optional fields may be absent");
  });

  test("what is the same for every call of a role comes first: the system prompt does not change from call to call, whatever the method, arguments, context or history", async () => {
    const provider = new ScriptedProvider({ programs: (request) => `context[${JSON.stringify(request.method)}] = args; return args.length` });
    const tools = { weather: { description: "Weather for a city.", inputSchema: { type: "object", properties: { city: { type: "string" } } }, execute: async () => 21 } };
    const agent = Agent.for("assistant", { provider, tools, purpose: "Helps a shop's customers.", reuse: false });
    await agent.quokkaCount(1);
    await agent.narwhalSort("two", kw({ three: 3 }));
    await agent.axolotlSum([1, 2, 3]);
    const systems = new Set(provider.calls.map((call) => call.system));
    expect(systems.size).toBe(1);
    const [system] = systems;
    for (const call of provider.calls) {
      expect(system).not.toContain(call.method);
      expect(call.user).toContain(`Method: ${call.method}`);
    }
  });

  test("the user prompt previews the latest records, bounded by historyPreviewLimit", async () => {
    const provider = new ScriptedProvider({ programs: { m: "return 1", bad: "throw new Error('x')" } });
    // Every call asks the provider (no reuse), so the last request is the fourth call's.
    const agent = Agent.for("previewer", { provider, historyPreviewLimit: 2, reuse: false });
    await agent.m();
    await agent.bad();
    await agent.m();
    await agent.m();
    const user = provider.calls.at(-1)?.user ?? "";
    const history = Agent.history(agent);
    expect(user).toContain("History: 3 earlier call(s) in context.conversation_history.");
    expect(user).toContain(`- ${history[1]?.call_id} bad: error (execution)`);
    expect(user).toContain(`- ${history[2]?.call_id} m: ok`);
    expect(user).not.toContain(history[0]?.call_id as string);
    expect(user).toContain("The full history is in context.conversation_history");
  });

  test("the user prompt for the 400th call is about as long as for the 10th", async () => {
    const provider = new ScriptedProvider({ programs: { m: "return 1" } });
    const agent = Agent.for("long-lived", { provider });
    for (let i = 0; i < 400; i += 1) await agent.m(i);
    const tenth = provider.calls[9]?.user.length ?? 0;
    const fourHundredth = provider.calls[399]?.user.length ?? 0;
    expect(fourHundredth / tenth).toBeGreaterThan(0.95);
    expect(fourHundredth / tenth).toBeLessThan(1.05);
  });

  test("the prompt shows a class instance as the program receives it: its own fields, with its class named", async () => {
    class Point {
      x = 1;
      y = 2;
      norm(): number {
        return Math.hypot(this.x, this.y);
      }
    }
    const provider = new ScriptedProvider({ programs: { echo: "return [args[0], typeof args[0].norm]" } });
    const r = await Agent.for("geometry", { provider }).echo(new Point(), kw({ origin: new Point() }));
    expect(r.value).toEqual([{ x: 1, y: 2 }, "undefined"]);
    const user = provider.calls[0]?.user ?? "";
    expect(user).toContain('Positional arguments (args): [{"x":1,"y":2}] (args[0] is a Point, passed as a plain object of its own fields)');
    expect(user).toContain('Named arguments (kwargs): {"origin":{"x":1,"y":2}} (kwargs.origin is a Point, passed as a plain object of its own fields)');
  });
});
