import { context, trace, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { Agent, fromRetrieval, ScriptedProvider } from "../../src/index.ts";
import { json, startWebServer } from "../../test-support/web-server.ts";
import { tempLogPath } from "../../test-support/logs.ts";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
});
afterAll(async () => {
  trace.disable();
  await provider.shutdown();
});
beforeEach(() => exporter.reset());

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const named = (name: string) => exporter.getFinishedSpans().filter((span) => span.name === name);

describe("OpenTelemetry spans", () => {
  test("an ok call: invoke_agent, then chat and run_program under it, with GenAI and improv attributes, and the log line joined to it", async () => {
    const log = tempLogPath("improv-spans-");
    const calc = Agent.for("calculator", { provider: new ScriptedProvider({ programs: { add: "return args[0] + args[1]" } }), model: "m-1", log, traceId: "conversation-1" });
    const outcome = await calc.add(2, 3);
    const [invoke] = named("invoke_agent calculator");
    const [chat] = named("chat m-1");
    const [tool] = named("run_program add");
    expect(invoke?.kind).toBe(SpanKind.INTERNAL);
    expect(invoke?.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "calculator",
      "gen_ai.conversation.id": "conversation-1",
      "improv.call_id": outcome.callId,
      "improv.method": "add",
      "improv.outcome.status": "ok",
      "improv.artifact_hit": false,
      "improv.program_source": "generated",
    });
    expect(invoke?.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(chat?.kind).toBe(SpanKind.CLIENT);
    expect(chat?.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.provider.name": "improv.scripted", "gen_ai.request.model": "m-1", "gen_ai.response.model": "scripted", "improv.attempt": 1 });
    expect(tool?.attributes).toMatchObject({ "improv.operation": "run_program", "improv.method": "add" });
    // execute_tool is the conventions' name for tool calls: the run's span does not take it.
    expect(tool?.attributes["gen_ai.operation.name"]).toBeUndefined();
    expect(parentOf(chat!)).toBe(invoke!.spanContext().spanId);
    expect(parentOf(tool!)).toBe(invoke!.spanContext().spanId);
    // No prompts or code on spans without debug.
    for (const span of exporter.getFinishedSpans()) expect(Object.keys(span.attributes).filter((key) => /prompt|code|message/.test(key))).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const line = JSON.parse(readFileSync(log, "utf8").trim()) as Record<string, unknown>;
    expect(line.otel_trace_id).toBe(invoke!.spanContext().traceId);
    expect(line.otel_span_id).toBe(invoke!.spanContext().spanId);
  });

  test("a retry makes two chat spans, the failed one with error.type; a failed call marks invoke_agent", async () => {
    const calc = Agent.for("calculator", { provider: new ScriptedProvider({ programs: { div: [null, "throw new RangeError('division by zero')"] } }), reuse: false });
    const outcome = await calc.div(1, 0);
    expect(outcome.errorType).toBe("execution");
    const chats = exporter.getFinishedSpans().filter((span) => span.name.startsWith("chat"));
    expect(chats.map((span) => span.attributes["improv.attempt"])).toEqual([1, 2]);
    expect(chats[0]?.attributes["error.type"]).toBe("invalid_code");
    expect(chats[0]?.status.code).toBe(SpanStatusCode.ERROR);
    expect(chats[1]?.attributes["error.type"]).toBeUndefined();
    const [invoke] = named("invoke_agent calculator");
    expect(invoke?.status.code).toBe(SpanStatusCode.ERROR);
    expect(invoke?.attributes).toMatchObject({ "error.type": "execution", "improv.error_type": "execution", "improv.outcome.status": "error" });
    expect(named("run_program div")[0]?.attributes["error.type"]).toBe("execution");
  });

  test("a chat span carries the tokens the provider reported, prompt-cache reads and writes included; a fallback makes one chat span per provider asked", async () => {
    const failing = new ScriptedProvider({ name: "primary", programs: { add: { error: "overloaded", kind: "server" } } });
    const answering = new ScriptedProvider({ name: "backup", programs: { add: { code: "return args[0] + args[1]", usage: { promptTokens: 1200, completionTokens: 20, cachedTokens: 1024, cacheWriteTokens: 64 } } } });
    // Priced: 112 plain input at $3, 1024 cached at $0.3, 64 written at $3.75 and 20 output at $15, per million tokens.
    await Agent.for("calculator", { provider: [failing, answering], pricing: { scripted: { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 } } }).add(2, 3);
    const chats = exporter.getFinishedSpans().filter((span) => span.name.startsWith("chat"));
    expect(chats.map((span) => span.attributes["gen_ai.provider.name"])).toEqual(["primary", "backup"]);
    expect(chats[0]?.attributes["error.type"]).toBe("provider");
    expect(chats[0]?.attributes["improv.cost_usd"]).toBeUndefined();
    expect(chats[1]?.attributes).toMatchObject({
      "gen_ai.usage.input_tokens": 1200,
      "gen_ai.usage.output_tokens": 20,
      "gen_ai.usage.cache_read.input_tokens": 1024,
      "gen_ai.usage.cache_creation.input_tokens": 64,
    });
    expect(chats[1]?.attributes["improv.cost_usd"]).toBeCloseTo((112 * 3 + 1024 * 0.3 + 64 * 3.75 + 20 * 15) / 1e6, 12);
  });

  test("a reused program: no chat span, artifact_hit on invoke_agent", async () => {
    const calc = Agent.for("calculator", { provider: new ScriptedProvider({ programs: { add: "return args[0] + args[1]" } }) });
    await calc.add(1, 2);
    exporter.reset();
    await calc.add(3, 4);
    expect(exporter.getFinishedSpans().map((span) => span.name).sort()).toEqual(["invoke_agent calculator", "run_program add"]);
    expect(named("invoke_agent calculator")[0]?.attributes).toMatchObject({ "improv.artifact_hit": true, "improv.program_source": "reused" });
  });

  test("a delegated call's spans are children of the calling program's run_program span, in one trace", async () => {
    const boss = Agent.for("boss", {
      provider: new ScriptedProvider({ programs: { "boss.plan": "const r = await delegate('helper').assist(1); return r.value", "helper.assist": "return args[0] + 1" } }),
    });
    expect((await boss.plan()).value).toBe(2);
    const [bossTool] = named("run_program plan");
    const [helperInvoke] = named("invoke_agent helper");
    expect(parentOf(helperInvoke!)).toBe(bossTool!.spanContext().spanId);
    expect(new Set(exporter.getFinishedSpans().map((span) => span.spanContext().traceId)).size).toBe(1);
    const helperChat = exporter.getFinishedSpans().find((span) => span.name.startsWith("chat") && parentOf(span) === helperInvoke!.spanContext().spanId);
    expect(helperChat?.attributes["improv.call_id"]).toBe(helperInvoke!.attributes["improv.call_id"]);
  });

  test("each tool call is an execute_tool {tool} span, a child of the run's span, with the tool's name and call id", async () => {
    const agent = Agent.for("assistant", {
      provider: new ScriptedProvider({ programs: { look: "await tools.weather({ city: 'Oslo' }); try { await tools.notes.add({}) } catch {} ; return 1" } }),
      tools: {
        weather: { description: "Weather.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: () => ({ tempC: 3 }) },
        notes: { add: { description: "Fails.", inputSchema: { type: "object" }, execute: () => Promise.reject(new Error("disk full")) } },
      },
    });
    expect((await agent.look()).value).toBe(1);
    const [run] = named("run_program look");
    const [weather] = named("execute_tool weather");
    const [add] = named("execute_tool notes.add");
    expect(parentOf(weather!)).toBe(run!.spanContext().spanId);
    expect(parentOf(add!)).toBe(run!.spanContext().spanId);
    expect(weather?.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather", "gen_ai.tool.call.id": expect.any(String), "improv.tool.effect": "read" });
    expect(add?.status.code).toBe(SpanStatusCode.ERROR);
    expect(add?.attributes["error.type"]).toBe("tool");
  });

  test("each revert of a failed call's effect is a revert_tool {tool} span under the call's invoke_agent span; a failed one has its error", async () => {
    let n = 0;
    const agent = Agent.for("shop", {
      provider: new ScriptedProvider({ programs: { buy: "await tools.order({}); await tools.order({}); throw new Error('no')" } }),
      tools: { order: { description: "Orders.", inputSchema: { type: "object" }, execute: () => ++n, revert: (_input: unknown, result: unknown) => { if (result === 1) throw new Error("too late"); } } },
      onFailure: "revert",
    });
    expect((await agent.buy()).ok).toBe(false);
    const [invoke] = named("invoke_agent shop");
    const reverts = named("revert_tool order");
    expect(reverts).toHaveLength(2);
    expect(reverts.every((span) => parentOf(span) === invoke!.spanContext().spanId)).toBe(true);
    expect(reverts.map((span) => span.status.code)).toEqual([SpanStatusCode.UNSET, SpanStatusCode.ERROR]);
    expect(reverts[1]?.attributes).toMatchObject({ "gen_ai.tool.name": "order", "improv.effect.state": "applied", "error.type": "revert_failed" });
  });

  test("with a context manager registered, a tool's execute_tool span is the active one while it runs, so spans the tool starts are its children", async () => {
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    try {
      const appTracer = trace.getTracer("application");
      const agent = Agent.for("instrumented", {
        provider: new ScriptedProvider({ programs: { look: "return (await tools.lookup({})).found" } }),
        tools: {
          lookup: {
            description: "Looks something up, with spans of its own.",
            inputSchema: { type: "object" },
            annotations: { readOnlyHint: true },
            execute: async () => {
              appTracer.startSpan("application query").end();
              await new Promise((resolve) => setTimeout(resolve, 5));
              appTracer.startSpan("application query after a wait").end();
              return { found: true };
            },
          },
        },
      });
      expect((await agent.look()).value).toBe(true);
      const [tool] = named("execute_tool lookup");
      const [first] = named("application query");
      const [second] = named("application query after a wait");
      expect(parentOf(first!)).toBe(tool!.spanContext().spanId);
      expect(parentOf(second!)).toBe(tool!.spanContext().spanId);
      expect(first!.spanContext().traceId).toBe(tool!.spanContext().traceId);
    } finally {
      context.disable();
      manager.disable();
    }
  });

  test("with a context manager registered, a fetch's execute_tool span is the active one as the HTTP request is made (where HTTP client instrumentation reads its parent)", async () => {
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    const server = await startWebServer({ "/feed": json({ ok: true }) });
    const activeAtRequest: (string | undefined)[] = [];
    const onRequest = () => activeAtRequest.push(trace.getActiveSpan()?.spanContext().spanId);
    subscribe("undici:request:create", onRequest);
    try {
      const agent = Agent.for("fetcher", { provider: new ScriptedProvider({ programs: { read: `return (await fetch("${server.origin}/feed")).status` } }), egress: { allow: [server.origin] } });
      expect((await agent.read()).value).toBe(200);
      const [fetched] = named("execute_tool fetch");
      expect(activeAtRequest).toEqual([fetched!.spanContext().spanId]);
    } finally {
      unsubscribe("undici:request:create", onRequest);
      await server.close();
      context.disable();
      manager.disable();
    }
  });

  test("each fetch is an execute_tool fetch span under the run's, with its method, cleaned URL and status, and no injected secret", async () => {
    const server = await startWebServer({ "/feed": json({ ok: true }) });
    try {
      const agent = Agent.for("reader", {
        provider: new ScriptedProvider({ programs: { read: `const r = await fetch("${server.origin}/feed?token=t0k&page=2"); return r.status` } }),
        egress: { allow: [server.origin], headers: { [server.origin]: { authorization: "Bearer span-secret-123" } } },
      });
      expect((await agent.read()).value).toBe(200);
      const [run] = named("run_program read");
      const [fetched] = named("execute_tool fetch");
      expect(parentOf(fetched!)).toBe(run!.spanContext().spanId);
      expect(fetched?.kind).toBe(SpanKind.CLIENT);
      expect(fetched?.attributes).toMatchObject({
        "gen_ai.tool.name": "fetch",
        "http.request.method": "GET",
        "url.full": `${server.origin}/feed?token=[redacted]&page=2`,
        "http.response.status_code": 200,
        "improv.tool.effect": "read",
      });
      expect(JSON.stringify(exporter.getFinishedSpans().map((span) => span.attributes))).not.toContain("span-secret-123");
    } finally {
      await server.close();
    }
  });
  test("each retrieval of a call's knowledge is a span under invoke_agent, a failed one marked with error.type knowledge", async () => {
    const agent = Agent.for("support", {
      provider: new ScriptedProvider({ programs: { answer: "return knowledge.length" } }),
      knowledge: [
        fromRetrieval({ search: async () => [{ content: "a passage", score: 0.9, sourceId: "doc-1" }] }, { name: "kb", query: "q", topK: 3 }),
        fromRetrieval({ search: async () => { throw new Error("index offline"); } }, { name: "backup", query: "q", optional: true }),
      ],
    });
    expect((await agent.answer()).value).toBe(1);
    const [invoke] = named("invoke_agent support");
    const [kb] = named("retrieve kb");
    const [backup] = named("retrieve backup");
    expect(kb?.kind).toBe(SpanKind.CLIENT);
    expect(parentOf(kb!)).toBe(invoke?.spanContext().spanId);
    expect(kb?.attributes).toMatchObject({ "improv.knowledge.source": "kb", "improv.knowledge.top_k": 3, "improv.knowledge.results": 1 });
    expect(backup?.status.code).toBe(SpanStatusCode.ERROR);
    expect(backup?.attributes["error.type"]).toBe("knowledge");
  });

  test("a span processor that throws as a retrieval's span ends, while another retrieval still searches, fails the call cleanly: no unhandled rejection", async () => {
    const breaking = new BasicTracerProvider({
      spanProcessors: [
        {
          onStart: () => undefined,
          onEnd: (span: ReadableSpan) => {
            if (span.name === "retrieve fast") throw new Error("span processor broke");
          },
          forceFlush: async () => undefined,
          shutdown: async () => undefined,
        },
      ],
    });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    trace.disable();
    trace.setGlobalTracerProvider(breaking);
    try {
      const slow = { search: () => new Promise<never[]>((resolve) => setTimeout(() => resolve([]), 50)) };
      const agent = Agent.for("support", {
        provider: new ScriptedProvider({ programs: { answer: "return 1" } }),
        knowledge: [fromRetrieval(slow, { name: "slow", query: "q" }), fromRetrieval({ search: async () => [] }, { name: "fast", query: "q" })],
      });
      const outcome = await agent.answer();
      expect(outcome).toMatchObject({ ok: false, errorType: "execution", errorMessage: expect.stringContaining("span processor broke") });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(unhandled).toEqual([]);
      expect(Agent.history(agent)).toHaveLength(1);
    } finally {
      process.off("unhandledRejection", onUnhandled);
      trace.disable();
      trace.setGlobalTracerProvider(provider);
    }
  });
});
