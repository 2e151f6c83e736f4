import { tool } from "ai";
import { Ajv2020 } from "ajv/dist/2020.js";
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { z } from "zod";
import { Agent, ScriptedProvider, type AgentOptions, type HistoryRecord, type Tool, type ToolApprovalRequest } from "../../src/index.ts";
import { agentWith, type ScriptedAgent, type ScriptedPrograms } from "../../test-support/agents.ts";
import { tempLogPath } from "../../test-support/logs.ts";
import { boundedInput } from "../../src/tools/tool-calls.ts";
import type { JsonValue } from "../../src/shared/index.ts";

const schema = JSON.parse(readFileSync(new URL("../../schema/history-record.schema.json", import.meta.url), "utf8")) as object;
const validateRecord = new Ajv2020({ allErrors: true, strict: false }).compile(schema);

/** An agent whose methods are scripted programs, granted `tools`, logging to a temporary file. */
function assistant(programs: ScriptedPrograms, tools: AgentOptions["tools"], options: AgentOptions = {}): ScriptedAgent {
  return agentWith(programs, { role: "assistant", log: tempLogPath("improv-tools-"), tools, ...options });
}

const weather = tool({
  description: "Current weather for a city.",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, tempC: 21 }),
});

describe("tools: calling granted functions from programs", () => {
  test("an AI SDK tool() with a zod schema: called from the program, listed in the record and the log line", async () => {
    const { agent, logLines, history } = assistant({ forecast: "const w = await tools.weather({ city: args[0] }); return `${w.city}: ${w.tempC}C`;" }, { weather: { ...weather, annotations: { readOnlyHint: true } } });
    const outcome = await agent.forecast("Paris");
    expect(outcome.value).toBe("Paris: 21C");
    const record = history().at(-1)!;
    expect(record.tool_call_count).toBe(1);
    expect(record.tool_calls).toEqual([{ tool: "weather", input: { city: "Paris" }, ok: true, duration_ms: expect.any(Number), effect: "read", attempt: 1 }]);
    expect(validateRecord(record), JSON.stringify(validateRecord.errors)).toBe(true);
    const line = logLines().at(-1)!;
    expect(line).toMatchObject({ tool_call_count: 1, tool_names: ["weather"], tool_error_count: 0, tool_access_detected: true, tools_referenced: ["weather"] });
    expect(line.tool_ms).toBeGreaterThanOrEqual(0);
  });

  test("a tool set one level down, and a plain JSON Schema checked on the host", async () => {
    const appended: string[] = [];
    const notes = {
      append: {
        description: "Appends a note.",
        inputSchema: { type: "object", properties: { text: { type: "string", maxLength: 20 } }, required: ["text"], additionalProperties: false },
        execute: async ({ text }: { text: string }) => {
          appended.push(text);
          return { count: appended.length };
        },
      },
    };
    const { agent, history } = assistant({ note: "return (await tools.notes.append({ text: args[0] })).count" }, { notes });
    expect((await agent.note("first")).value).toBe(1);
    expect(appended).toEqual(["first"]);
    expect(history().at(-1)!.tool_calls?.[0]).toMatchObject({ tool: "notes.append", effect: "write", ok: true });
  });

  test("programs see a frozen tools object holding only the granted tools", async () => {
    const { agent } = assistant(
      { look: "const before = Object.keys(tools).join(','); try { tools.extra = 1 } catch {} ; return [before, Object.isFrozen(tools), Object.isFrozen(tools.set), typeof tools.extra, Object.keys(tools.set).join(',')]" },
      { weather, set: { a: weather, b: weather } },
    );
    expect((await agent.look()).value).toEqual(["weather,set", true, true, "undefined", "a,b"]);
  });

  test("with no tools granted, tools is an empty object and the prompt says there are none", async () => {
    const { agent, provider } = assistant({ look: "return Object.keys(tools).length" }, undefined);
    expect((await agent.look()).value).toBe(0);
    expect(provider.calls[0]!.system).toContain("`tools`: none are granted");
  });

  test("the prompt declares the granted tools as TypeScript, with their effects", async () => {
    const { agent, provider } = assistant({ look: "return 1" }, { weather: { ...weather, annotations: { readOnlyHint: true } }, notes: { append: { ...weather, description: "Appends." } } });
    await agent.look();
    const system = provider.calls[0]!.system;
    expect(system).toContain("declare const tools");
    expect(system).toMatch(/weather\(input: \{\s*city: string;?\s*\}\): Promise<unknown>/);
    expect(system).toContain("notes: {");
    expect(system).toMatch(/may change the world/);
  });
});

describe("tools: records", () => {
  test("a record of many tool calls, large inputs and failures fits its bounds and validates against the schema", async () => {
    const echo: Tool = { description: "Echo.", inputSchema: {}, annotations: { readOnlyHint: true }, execute: (input) => (typeof input === "object" && input !== null && "fail" in input ? Promise.reject(new Error("x".repeat(5_000))) : "ok") };
    const { agent, history, logLines } = assistant(
      { many: "for (let i = 0; i < 60; i++) { try { await tools.echo(i % 7 === 0 ? { fail: true } : { i, text: 'y'.repeat(i * 100) }) } catch {} } return 1" },
      { echo },
    );
    expect((await agent.many()).value).toBe(1);
    const record = history().at(-1)!;
    expect(validateRecord(record), JSON.stringify(validateRecord.errors)).toBe(true);
    expect(record.tool_call_count).toBe(60);
    expect(record.tool_calls).toHaveLength(50);
    for (const call of record.tool_calls!) expect(typeof call.input === "string" ? call.input.length : JSON.stringify(call.input).length).toBeLessThanOrEqual(1_000);
    // Past the bound, long strings are cut and keys kept.
    expect(record.tool_calls?.[20]?.input).toEqual({ i: 20, text: `${"y".repeat(200)}…[2000 chars]` });
    expect(record.tool_calls?.[7]).toMatchObject({ ok: false, error_type: "tool", error_message: expect.stringMatching(/^tools\.echo: x+…\[truncated \d+ chars\]$/) });
    expect(Buffer.byteLength(JSON.stringify(record))).toBeLessThanOrEqual(64 * 1024);
    expect(logLines().at(-1)).toMatchObject({ tool_call_count: 60, tool_error_count: 9, tool_names: ["echo"] });
  });

  test("an input past its bound: long strings cut with their keys kept, else the start of its JSON, marked", () => {
    expect(boundedInput({ to: "bob", amount: 5 }, 100)).toEqual({ to: "bob", amount: 5 });
    expect(boundedInput({ memo: "x".repeat(500), to: "mallory", amount: 2e6, tags: ["y".repeat(300)] }, 600)).toEqual({ memo: `${"x".repeat(200)}…[500 chars]`, to: "mallory", amount: 2e6, tags: [`${"y".repeat(200)}…[300 chars]`] });
    expect(boundedInput({ memo: "x".repeat(500), to: "m" }, 60)).toEqual({ memo: `${"x".repeat(20)}…[500 chars]`, to: "m" });
    const many = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`key${i}`, i]));
    expect(boundedInput(many, 200)).toMatch(/^\{"key0":0,.*…\[truncated: input was \d+ chars as JSON\]$/);
    const own = boundedInput(JSON.parse(`{"__proto__": "${"z".repeat(300)}"}`) as JsonValue, 100) as Record<string, unknown>;
    expect(Object.getPrototypeOf(own)).toBe(Object.prototype);
    expect(Object.hasOwn(own, "__proto__")).toBe(true);
  });

  test("the log line names which tools failed, not every tool the call used", async () => {
    const ok: Tool = { description: "Answers.", inputSchema: {}, annotations: { readOnlyHint: true }, execute: () => "fine" };
    const broken: Tool = { description: "Fails.", inputSchema: {}, annotations: { readOnlyHint: true }, execute: () => Promise.reject(new Error("down")) };
    const { agent, logLines } = assistant({ mixed: "await tools.ok({}); await tools.ok({}); try { await tools.broken({}) } catch {} ; return 1", clean: "return await tools.ok({})" }, { ok, broken });
    expect((await agent.mixed()).value).toBe(1);
    expect(logLines().at(-1)).toMatchObject({ tool_call_count: 3, tool_names: ["ok", "broken"], tool_error_count: 1, tool_failed_names: ["broken"] });
    expect((await agent.clean()).value).toBe("fine");
    expect(logLines().at(-1)).toMatchObject({ tool_error_count: 0, tool_failed_names: [] });
  });
});

describe("tools: failures", () => {
  test("input that fails the schema is a TypeError in the program, repaired like an engine mistake", async () => {
    const { agent, provider, history } = assistant({ forecast: ["return await tools.weather({ town: args[0] })", "return (await tools.weather({ city: args[0] })).tempC"] }, { weather });
    const outcome = await agent.forecast("Rome");
    expect(outcome.value).toBe(21);
    expect(provider.calls).toHaveLength(2);
    expect(provider.calls[1]!.user).toContain("does not match the tool's schema");
    const record = history().at(-1)!;
    expect(record.tool_calls?.map((call) => [call.attempt, call.ok, call.error_type ?? null])).toEqual([
      [1, false, "invalid_input"],
      [2, true, null],
    ]);
  });

  test("a tool that throws is a ToolError the program may catch; its message carries no host path or stack", async () => {
    const failing = { description: "Fails.", inputSchema: { type: "object" }, execute: async () => Promise.reject(new Error("ENOENT: no such file, open '/srv/app/secrets/key.pem'")) };
    const { agent } = assistant({ look: "try { await tools.failing({}) } catch (e) { return { name: e.name, message: e.message, tool: e.tool, isToolError: e instanceof ToolError, stack: String(e.stack).includes('/srv') } }" }, { failing });
    const value = (await agent.look()).value as Record<string, unknown>;
    expect(value).toMatchObject({ name: "ToolError", tool: "failing", isToolError: true, stack: false });
    expect(value.message).toContain("tools.failing: ENOENT");
    expect(value.message).not.toContain("/srv/app");
  });

  test("left uncaught, a tool's failure ends the call with outcome tool, retriable, naming the tool; not repaired", async () => {
    const failing = { description: "Fails.", inputSchema: { type: "object" }, execute: () => { throw "a string, not an Error"; } };
    const { agent, provider, logLines } = assistant({ look: "return await tools.failing({})" }, { failing: { ...failing, annotations: { readOnlyHint: true } } });
    const outcome = await agent.look();
    expect(outcome).toMatchObject({ ok: false, errorType: "tool", retriable: true });
    expect(outcome.errorMessage).toContain("tools.failing");
    expect(provider.calls).toHaveLength(1);
    expect(logLines().at(-1)).toMatchObject({ error_type: "tool", tool_call_count: 1, tool_error_count: 1 });
  });

  test("a tool past its timeoutMs is a ToolError, and its signal aborts; one that ignores its signal does not hold the call", async () => {
    let aborted = false;
    const slow: Tool = {
      description: "Never answers.",
      inputSchema: { type: "object" },
      timeoutMs: 100,
      annotations: { readOnlyHint: true },
      execute: (_input, { signal }) => {
        signal.addEventListener("abort", () => (aborted = true));
        return new Promise(() => {});
      },
    };
    const { agent, history } = assistant({ look: "try { await tools.slow({}) } catch (e) { return e.message }" }, { slow });
    const started = performance.now();
    const outcome = await agent.look();
    expect(outcome.value).toContain("did not answer within its timeoutMs (100 ms)");
    expect(aborted).toBe(true);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(history().at(-1)!.tool_calls?.[0]).toMatchObject({ ok: false, error_type: "timeout" });
  });

  test("waiting for a tool does not count against executionTimeoutMs", async () => {
    const slowish = { description: "Takes 400 ms.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: () => new Promise((resolve) => setTimeout(() => resolve("done"), 400)) };
    const { agent } = assistant({ look: "return await tools.slowish({})" }, { slowish }, { executionTimeoutMs: 150 });
    expect((await agent.look()).value).toBe("done");
  });

  test("the tool's signal aborts when the call is cancelled, and its late result is ignored", async () => {
    const controller = new AbortController();
    let toolSignal: AbortSignal | undefined;
    let finish: (value: unknown) => void = () => {};
    const pending: Tool = {
      description: "Waits.",
      inputSchema: { type: "object" },
      annotations: { readOnlyHint: true },
      execute: (_input, { signal }) => {
        toolSignal = signal;
        return new Promise((resolve) => (finish = resolve));
      },
    };
    const { agent, history } = assistant({ look: "return await tools.pending({})" }, { pending }, { signal: controller.signal });
    const call = agent.look();
    await new Promise((resolve) => setTimeout(resolve, 200));
    controller.abort();
    const outcome = await call;
    expect(outcome.errorType).toBe("cancelled");
    expect(toolSignal?.aborted).toBe(true);
    finish("late");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(history()).toHaveLength(1);
    expect(history()[0]!.tool_calls?.[0]).toMatchObject({ ok: false });
  });

  test("execute is given the call's id and a tool call id of its own", async () => {
    const seen: { callId: string; toolCallId: string }[] = [];
    const echo: Tool = { description: "Echo.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: (_input, { callId, toolCallId }) => seen.push({ callId, toolCallId }) };
    const { agent } = assistant({ look: "await tools.echo({}); await tools.echo({}); return 1" }, { echo });
    const outcome = await agent.look();
    expect(seen.map((entry) => entry.callId)).toEqual([outcome.callId, outcome.callId]);
    expect(new Set(seen.map((entry) => entry.toolCallId)).size).toBe(2);
  });
});

describe("tools: effects and approval", () => {
  const counter = () => {
    const state = { calls: 0 };
    const bump: Tool = { description: "Changes the world.", inputSchema: { type: "object" }, execute: () => ++state.calls };
    return { state, bump };
  };

  test("after a tool that may change the world, a program's mistake is not repaired: the provider is not asked again", async () => {
    const { state, bump } = counter();
    const { agent, provider, history } = assistant({ act: ["await tools.bump({}); return undefinedName", "await tools.bump({}); return 1"] }, { bump });
    const outcome = await agent.act();
    expect(outcome.ok).toBe(false);
    expect(outcome.errorMessage).toContain("ReferenceError");
    expect(state.calls).toBe(1);
    expect(provider.calls).toHaveLength(1);
    expect(history().at(-1)!.tool_calls?.[0]).toMatchObject({ effect: "write", ok: true });
  });

  test("a read-only tool does not stop repair", async () => {
    const { agent, provider } = assistant({ act: ["await tools.weather({ city: 'x' }); return undefinedName", "return (await tools.weather({ city: 'x' })).tempC"] }, { weather: { ...weather, annotations: { readOnlyHint: true } } });
    expect((await agent.act()).value).toBe(21);
    expect(provider.calls).toHaveLength(2);
  });

  test("toolApproval is asked before each call of a tool that may change the world; false is a ToolError 'denied', not retriable", async () => {
    const { state, bump } = counter();
    const asked: ToolApprovalRequest[] = [];
    const { agent } = assistant(
      { act: "return await tools.bump({ n: 1 })", look: "return (await tools.weather({ city: 'Oslo' })).city" },
      { bump, weather: { ...weather, annotations: { readOnlyHint: true } } },
      { toolApproval: (request) => (asked.push(request), false) },
    );
    const outcome = await agent.act();
    expect(outcome).toMatchObject({ ok: false, errorType: "tool", retriable: false });
    expect(outcome.errorMessage).toContain("denied");
    expect(state.calls).toBe(0);
    expect(asked).toEqual([{ kind: "tool", tool: "bump", input: { n: 1 }, role: "assistant", lineage: ["assistant"], rootAgentId: expect.any(String), agentId: expect.any(String), callId: outcome.callId }]);
    expect(asked[0]?.rootAgentId).toBe(asked[0]?.agentId);
    expect((await agent.look()).value).toBe("Oslo");
    expect(asked).toHaveLength(1);
  });

  test("a delegated call's approval says whose call tree it is in: the role a program chose is the last of the lineage, under the application's agent", async () => {
    const { bump } = counter();
    const asked: ToolApprovalRequest[] = [];
    const { agent } = assistant(
      { direct: "return await tools.bump({ n: 1 })", viaChild: "return (await delegate('billing').refund()).value", refund: "return await tools.bump({ n: 2 })" },
      { bump },
      // An approval that trusts billing agents, as the application made them.
      { toolApproval: (request) => (asked.push(request), request.role === "billing" && request.lineage.length === 1) },
    );
    expect((await agent.direct()).ok).toBe(false);
    const outcome = await agent.viaChild();
    expect(outcome.value).toBeUndefined();
    expect(asked.at(-1)).toMatchObject({ kind: "tool", role: "billing", lineage: ["assistant", "billing"] });
    expect(asked.at(-1)?.rootAgentId).toBe(asked[0]?.agentId);
    expect(asked.at(-1)?.agentId).not.toBe(asked[0]?.agentId);
  });

  test("an approval that throws refuses the call", async () => {
    const { state, bump } = counter();
    const { agent } = assistant({ act: "try { return await tools.bump({}) } catch (e) { return e.message }" }, { bump }, { toolApproval: () => { throw new Error("approval service down"); } });
    expect((await agent.act()).value).toContain("denied (the approval failed: approval service down)");
    expect(state.calls).toBe(0);
  });

  test("an approval that never answers does not hold the call past callTimeoutMs, and the tool never runs", async () => {
    const { state, bump } = counter();
    const { agent } = assistant({ act: "return await tools.bump({})" }, { bump }, { toolApproval: () => new Promise<boolean>(() => {}), callTimeoutMs: 300 });
    const started = performance.now();
    expect((await agent.act()).errorType).toBe("timeout");
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(state.calls).toBe(0);
  });

  test("a tool that calls back into its own agent gets a clear error at once, never a hang", async () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    let self: any;
    const back: Tool = { description: "Calls the agent.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: async () => (await self.other()).errorMessage };
    const { agent } = assistant({ act: "return await tools.back({})", other: "return 1" }, { back });
    self = agent;
    const started = performance.now();
    const outcome = await agent.act();
    expect(outcome.value).toContain("would wait for itself");
    expect(performance.now() - started).toBeLessThan(5_000);
    expect((await agent.other()).value).toBe(1);
  });

  test("so is toolApproval calling back into the agent whose program waits for the approval", async () => {
    const { state, bump } = counter();
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    let self: any;
    let asked: string | undefined;
    const { agent } = assistant({ act: "return await tools.bump({})", other: "return 1" }, { bump }, { toolApproval: async () => ((asked = (await self.other()).errorMessage), true), callTimeoutMs: 5_000 });
    self = agent;
    expect((await agent.act()).ok).toBe(true);
    expect(asked).toContain("would wait for itself");
    expect(state.calls).toBe(1);
  });

  test("through a delegate chain too: a tool of the child calling the parent is refused", async () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    let parent: any;
    const back: Tool = { description: "Calls the parent.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: async () => (await parent.other()).errorType };
    const { agent } = assistant({ act: "const r = await delegate('helper').work(); return r.value", work: "return await tools.back({})", other: "return 1" }, { back });
    parent = agent;
    expect((await agent.act()).value).toBe("invalid_input");
  });
});

describe("tools: construction", () => {
  const cases: [string, unknown, RegExp][] = [
    ["a name that is not an identifier", { "get-weather": weather }, /Tool name "get-weather" must be an identifier/],
    ["a refused name", { then: weather }, /Tool name "then" is not allowed/],
    ["sets nested deeper than one level", { a: { b: { c: weather } } }, /Tool "a.b" must be a tool.*one level down only/],
    ["an inputSchema that is no schema", { a: { execute: () => 1, inputSchema: 3 } }, /Tool "a": inputSchema must be a Standard Schema/],
    ["a JSON Schema ajv cannot use", { a: { execute: () => 1, inputSchema: { type: "no-such-type" } } }, /Tool "a": inputSchema is not a usable JSON Schema/],
    ["a remote $ref (never fetched)", { a: { execute: () => 1, inputSchema: { $ref: "https://example.com/schema.json" } } }, /Tool "a": inputSchema is not a usable JSON Schema/],
    ["a bad timeoutMs", { a: { ...weather, timeoutMs: -1 } }, /Tool "a": timeoutMs must be/],
    ["not an object", [weather], /Option "tools" must be an object/],
    ["a value that is neither", { a: 3 }, /Tool "a" must be a tool/],
  ];
  test.each(cases)("%s is a TypeError naming the tool", (_name, tools, message) => {
    expect(() => Agent.for("x", { tools: tools as AgentOptions["tools"] })).toThrow(TypeError);
    expect(() => Agent.for("x", { tools: tools as AgentOptions["tools"] })).toThrow(message);
  });

  test("toolApproval must be a function", () => {
    expect(() => Agent.for("x", { toolApproval: true as never })).toThrow(/Option "toolApproval" must be a function/);
  });
});

describe("tools: reuse", () => {
  test("a kept program runs its tool calls again for each call, and programs kept for other tools are not used", async () => {
    let calls = 0;
    const counted: Tool = { description: "Counts.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: () => ++calls };
    const provider = new ScriptedProvider({ programs: { count: "return await tools.counted({ n: args[0] })" } });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const agent = Agent.for("reuser", { provider, tools: { counted } }) as any;
    expect((await agent.count(1)).value).toBe(1);
    expect((await agent.count(2)).value).toBe(2);
    expect(provider.calls).toHaveLength(1);
    const records = Agent.history(agent) as readonly HistoryRecord[];
    expect(records.at(-1)).toMatchObject({ artifact_hit: true, tool_call_count: 1 });
    // The same role and provider with other tools: a new program is asked for.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const other = Agent.for("reuser", { provider, tools: { counted: { ...counted, description: "Counts differently." } } }) as any;
    expect((await other.count(3)).value).toBe(3);
    expect(provider.calls).toHaveLength(2);
  });
});
