import { AsyncLocalStorage } from "node:async_hooks";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { Agent, ScriptedProvider, SqliteStore, type AgentOptions, type HistoryRecord, type Tool } from "../../src/index.ts";
import { markServerTool } from "../../src/tools/tool.ts";
import { toolTimings } from "../../src/call/bridge/tool.ts";
import { agentWith, type AnyAgent, type ScriptedAgent, type ScriptedPrograms } from "../../test-support/agents.ts";

/** An agent whose methods are scripted programs, granted `tools`. */
function hardened(programs: ScriptedPrograms, tools: AgentOptions["tools"], options: AgentOptions = {}): ScriptedAgent {
  return agentWith(programs, { role: "hardened", tools, ...options });
}

const lastRecord = (agent: AnyAgent) => (Agent.history(agent) as readonly HistoryRecord[]).at(-1)!;
const readOnly = { readOnlyHint: true } as const;

describe("a server's schema, checked on a thread of its own", () => {
  test("a server's tool with a timeoutMs shorter than a thread takes to start answers its first call: the check has time of its own, and the thread starts as the tool is granted", async () => {
    const quick = markServerTool({ description: "Quick.", inputSchema: { type: "object", properties: { n: { type: "number" } } }, annotations: readOnly, timeoutMs: 5, execute: ({ n }: { n: number }) => n + 1 });
    const { agent } = hardened({ go: "return await tools.quick({ n: 1 })" }, { quick });
    expect((await agent.go()).value).toBe(2);
    expect((await agent.go()).value).toBe(2);
  });
});

describe("tools run as the application's call, not as whatever the bridge last served", () => {
  test("execute and toolApproval see the AsyncLocalStorage stores of the call that asked", async () => {
    const user = new AsyncLocalStorage<string>();
    const seen: string[] = [];
    const whoami: Tool = { description: "", inputSchema: {}, execute: () => (seen.push(`execute:${user.getStore()}`), user.getStore()) };
    const { agent } = hardened({ go: "return await tools.whoami({})" }, { whoami }, { toolApproval: () => (seen.push(`approval:${user.getStore()}`), true) });
    expect((await user.run("alice", () => agent.go())).value).toBe("alice");
    expect((await user.run("bob", () => agent.go())).value).toBe("bob");
    expect(seen).toEqual(["approval:alice", "execute:alice", "approval:bob", "execute:bob"]);
  });
});

describe("effects are never repeated", () => {
  test("a tool that may change the world, called in a delegated call, stops the caller's repair too", async () => {
    let sends = 0;
    const send: Tool = { description: "Sends mail.", inputSchema: {}, execute: () => ++sends };
    const { agent, provider } = hardened({ "hardened.go": ["await delegate('mailer').send(); return undefinedName", "return 'repaired'"], "mailer.send": "return await tools.send({})" }, { send });
    const outcome = await agent.go();
    expect(outcome.ok).toBe(false);
    expect(sends).toBe(1);
    expect(provider.calls.filter((call) => call.role === "hardened")).toHaveLength(1);
  });

  test("a tool call the program left running after it returned does not start once the run has ended", async () => {
    const ran: string[] = [];
    const slowSchema = { "~standard": { version: 1, vendor: "test", validate: async (value: unknown) => (await new Promise((resolve) => setTimeout(resolve, 100)), { value }) } };
    const write: Tool = { description: "", inputSchema: slowSchema, execute: () => ran.push("write") };
    let asked = 0;
    const { agent } = hardened({ go: "tools.write({}).catch(() => {}); return 1" }, { write }, { toolApproval: () => (asked++, true) });
    expect((await agent.go()).value).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(ran).toEqual([]);
    expect(asked).toBe(0);
  });
});

describe("budgets and bounds hold against hostile programs", () => {
  test("tool calls made from the getters of another call's input still count against the budget and the in-flight cap", async () => {
    let inFlight = 0;
    let peak = 0;
    let total = 0;
    const slow: Tool = {
      description: "",
      inputSchema: {},
      annotations: readOnly,
      execute: async () => {
        total += 1;
        inFlight += 1;
        peak = Math.max(peak, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 100));
        inFlight -= 1;
        return 1;
      },
    };
    const program = `const pending = [];
      function level(n) { return n === 0 ? {} : { get x() { pending.push(tools.slow(level(n - 1)).catch((e) => e.name)); return 1; } }; }
      pending.push(tools.slow(level(600)).catch((e) => e.name));
      return (await Promise.all(pending)).length`;
    const { agent } = hardened({ go: program }, { slow });
    await agent.go();
    expect(peak).toBeLessThanOrEqual(16);
    expect(total).toBeLessThanOrEqual(256);
  });

  test("a schema pattern that backtracks exponentially is checked in linear time (RE2), and uniqueItems by hashing", async () => {
    const guarded: Tool = {
      description: "",
      inputSchema: { type: "object", properties: { name: { type: "string", pattern: "^(a+)+$" }, tags: { type: "array", uniqueItems: true } } },
      annotations: readOnly,
      execute: () => "ran",
    };
    const { agent } = hardened(
      {
        evil: "try { await tools.guarded({ name: 'a'.repeat(40) + 'b' }) } catch (e) { return e.name }",
        many: "const tags = Array.from({ length: 40000 }, (_, i) => ({ i })); return await tools.guarded({ tags })",
        twice: "try { await tools.guarded({ tags: [{ a: 1, b: 2 }, { b: 2, a: 1 }] }) } catch (e) { return e.message }",
      },
      { guarded },
      { callTimeoutMs: 20_000 },
    );
    const started = performance.now();
    expect((await agent.evil()).value).toBe("TypeError");
    expect((await agent.many()).value).toBe("ran");
    expect(performance.now() - started).toBeLessThan(10_000);
    expect((await agent.twice()).value).toMatch(/does not match the tool's schema/);
  });

  test("a server's input schema whose $refs fan out (2^28 checks for one value) is checked off the host's thread, within its own time: the host's timers keep firing", async () => {
    const saved = toolTimings.serverSchemaCheckMs;
    toolTimings.serverSchemaCheckMs = 300;
    onTestFinished(() => void (toolTimings.serverSchemaCheckMs = saved));
    const levels = 28;
    const $defs: Record<string, unknown> = { [`a${levels}`]: { type: "object" } };
    for (let level = 0; level < levels; level += 1) $defs[`a${level}`] = { allOf: [{ $ref: `#/$defs/a${level + 1}` }, { $ref: `#/$defs/a${level + 1}` }] };
    let ran = 0;
    const fanning = markServerTool({ description: "Looks harmless.", inputSchema: { $schema: "https://json-schema.org/draft/2020-12/schema", $defs, $ref: "#/$defs/a0" }, annotations: readOnly, execute: () => ++ran });
    const { agent } = hardened({ go: "try { await tools.fanning({}); return 'ran' } catch (e) { return e.name + ': ' + e.message }" }, { fanning });
    let ticks = 0;
    const ticking = setInterval(() => (ticks += 1), 10);
    try {
      const outcome = await agent.go();
      expect(outcome.value).toBe("ToolError: tools.fanning: its input was not checked against the server's schema within 300 ms, so the tool was not called (a schema that costly is the server's).");
    } finally {
      clearInterval(ticking);
    }
    expect(ran).toBe(0);
    expect(ticks).toBeGreaterThan(10);
  });

  test("a Date with a toISOString of its own cannot smuggle an unmeasured value", async () => {
    const sly: Tool = {
      description: "",
      inputSchema: {},
      annotations: readOnly,
      execute: () => {
        const date = new Date(0);
        Object.defineProperty(date, "toISOString", { value: () => "x".repeat(50_000_000) });
        return { date };
      },
    };
    const { agent } = hardened({ go: "return (await tools.sly({})).date" }, { sly });
    expect((await agent.go()).value).toBe("1970-01-01T00:00:00.000Z");
  });

  test("a record of 50 tool calls with long non-ASCII inputs and messages stays within 64 KiB", async () => {
    const noisy: Tool = { description: "", inputSchema: {}, annotations: readOnly, execute: () => Promise.reject(new Error("é".repeat(5_000))) };
    const { agent } = hardened({ go: "for (let i = 0; i < 60; i++) { try { await tools.noisy({ text: '字'.repeat(2000) }) } catch {} } return 1" }, { noisy });
    expect((await agent.go()).value).toBe(1);
    const record = lastRecord(agent);
    expect(Buffer.byteLength(JSON.stringify(record))).toBeLessThanOrEqual(64 * 1024);
    expect(record.tool_call_count).toBe(60);
  });
});

describe("tools that are easy to get wrong", () => {
  test("a tool calling back into its own durable agent is refused at once, not at the tool's timeout", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "improv-hardening-")), "agents.db");
    let self: AnyAgent;
    const back: Tool = { description: "", inputSchema: {}, annotations: readOnly, timeoutMs: 10_000, execute: async () => (await self.other()).errorType };
    self = await Agent.open("durable-self", { provider: new ScriptedProvider({ programs: { act: "return await tools.back({})", other: "return 1" } }), store: new SqliteStore(path), tools: { back } });
    const started = performance.now();
    expect((await self.act()).value).toBe("invalid_input");
    expect(performance.now() - started).toBeLessThan(5_000);
    // The refused call keeps its record, committed once the program's own is.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((Agent.history(self) as readonly HistoryRecord[]).map((record) => [record.method_name, record.outcome_summary.error_type])).toEqual([
      ["act", null],
      ["other", "invalid_input"],
    ]);
  });

  test("a tool set may hold tools named execute and inputSchema", async () => {
    const tool = (name: string): Tool => ({ description: name, inputSchema: {}, annotations: readOnly, execute: () => name });
    const { agent } = hardened({ go: "return [await tools.db.execute({}), await tools.db.inputSchema({})]" }, { db: { execute: tool("execute"), inputSchema: tool("inputSchema") } });
    expect((await agent.go()).value).toEqual(["execute", "inputSchema"]);
  });

  test("JSON Schemas with an $id can be granted to many agents, and 2020-12 and 2019-09 schemas are understood", () => {
    const make = (schema: object): Tool => ({ description: "", inputSchema: schema, execute: () => 1 });
    for (let i = 0; i < 3; i += 1) expect(() => Agent.for("x", { tools: { a: make({ $id: "https://example.com/input", type: "object" }) } })).not.toThrow();
    expect(() => Agent.for("x", { tools: { a: make({ $schema: "https://json-schema.org/draft/2020-12/schema", type: "array", prefixItems: [{ type: "string" }] }) } })).not.toThrow();
    expect(() => Agent.for("x", { tools: { a: make({ $schema: "https://json-schema.org/draft/2019-09/schema", type: "object", unevaluatedProperties: false }) } })).not.toThrow();
  });

  test("a program may declare its own tools (or args) without a SyntaxError; the granted ones are then out of its reach", async () => {
    const { agent } = hardened({ go: "const tools = { mine: 1 }; const args = [2]; return [tools.mine, args[0]]" }, { ping: { description: "", inputSchema: {}, execute: () => 1 } });
    expect((await agent.go()).value).toEqual([1, 2]);
  });

  test("a program's own ToolError subclass may name itself", async () => {
    const { agent } = hardened({ go: "class Mine extends ToolError { constructor() { super('m', 't'); this.name = 'Mine'; } } return [new Mine().name, new ToolError('x', 'y').name]" }, undefined);
    expect((await agent.go()).value).toEqual(["Mine", "ToolError"]);
  });
});
