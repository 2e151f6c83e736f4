import { inspect } from "node:util";
import { describe, expect, test } from "vitest";
import { Agent, AGENT_OPTION_NAMES, kw, Outcome, ScriptedProvider } from "../src/index.ts";
import { scriptedAgent } from "../test-support/agents.ts";

describe("Agent.for", () => {
  test("returns an agent that is an instance of Agent and knows its role", () => {
    const calc = Agent.for("calculator", { provider: new ScriptedProvider({ programs: {} }) });
    expect(calc instanceof Agent).toBe(true);
    expect(Agent.role(calc)).toBe("calculator");
  });

  test("rejects unknown options with a message listing the valid ones", () => {
    expect(() => Agent.for("calculator", { timeout: 5 } as never)).toThrow(
      new TypeError(`Unknown option "timeout" for Agent.for(). Valid options: ${AGENT_OPTION_NAMES.join(", ")}.`),
    );
    expect(AGENT_OPTION_NAMES).toEqual([
      "provider", "model", "log", "debug", "verbose", "maxGenerationAttempts", "providerTimeoutMs", "executionTimeoutMs", "callTimeoutMs", "maxTokens", "pricing", "maxCostUsd",
      "memoryLimitMb", "maxDelegationDepth", "historyPreviewLimit", "traceId", "signal", "store", "id", "reuse", "maxReuseFailures", "keepValues", "historyPreview", "tools", "toolApproval", "maxWriteCalls", "onFailure", "egress", "knowledge", "purpose", "methods",
    ]);
  });

  test("rejects option values of the wrong type or range", () => {
    expect(() => Agent.for("a", { executionTimeoutMs: -1 })).toThrow(new RangeError('Option "executionTimeoutMs" must be at least 1, got -1.'));
    expect(() => Agent.for("a", { callTimeoutMs: 0 })).toThrow(new RangeError('Option "callTimeoutMs" must be at least 1, got 0.'));
    // Past what a timer can keep, Node would fire it after 1 ms.
    for (const name of ["providerTimeoutMs", "executionTimeoutMs", "callTimeoutMs"] as const) {
      expect(() => Agent.for("a", { [name]: 2 ** 31 })).toThrow(new RangeError(`Option "${name}" must be at most 2147483647, got 2147483648.`));
      expect(() => Agent.for("a", { [name]: 2 ** 31 - 1 })).not.toThrow();
    }
    expect(() => Agent.for("a", { memoryLimitMb: 4 })).toThrow(RangeError);
    expect(() => Agent.for("a", { maxGenerationAttempts: 1.5 })).toThrow(TypeError);
    expect(() => Agent.for("a", { provider: {} as never })).toThrow(/generate\(request, signal\)/);
    expect(() => Agent.for("", {})).toThrow(TypeError);
  });

  test("a role or id that a store would keep the same as another is refused", () => {
    // Lone surrogates: a store writes each as U+FFFD, so "user-\ud800" and "user-\udc00" would be one stored agent.
    expect(() => Agent.for("a", { id: "user-\ud800" })).toThrow(new TypeError('Option "id" must be well-formed Unicode text (it holds a lone surrogate, which a store would keep as U+FFFD, the same as others).'));
    expect(() => Agent.for("calc\udc00")).toThrow(/role must be well-formed Unicode text/);
    expect(() => Agent.for("a", { id: "user-\u{1F600}" })).not.toThrow();
  });

  test("new Agent() is refused in favour of Agent.for", () => {
    expect(() => new Agent()).toThrow("Use Agent.for(role, options) to make an agent.");
  });

  test("the statics refuse things that are not agents", () => {
    expect(() => Agent.role({})).toThrow("Agent.role() expects an agent made by Agent.for(role).");
  });

});

describe("setters and readers", () => {
  test("a setter writes context without asking the provider, and the key reads back as its value", () => {
    const { agent, provider } = scriptedAgent<{ value: number }>("calculator", {});
    agent.value = 5;
    expect(agent.value).toBe(5);
    expect(agent.runtimeContext).toEqual({ value: 5 });
    expect(provider.calls).toHaveLength(0);
    expect(Agent.history(agent)).toHaveLength(0);
  });

  test("respondTo and `in` follow the reader rule", () => {
    const { agent } = scriptedAgent<{ value: number }>("calculator", {});
    expect(Agent.respondTo(agent, "value=")).toBe(true);
    expect(Agent.respondTo(agent, "value")).toBe(false);
    expect("value" in agent).toBe(false);
    agent.value = 5;
    expect(Agent.respondTo(agent, "value")).toBe(true);
    expect("value" in agent).toBe(true);
    expect(Agent.respondTo(agent, "add")).toBe(false);
    expect("add" in agent).toBe(false);
    expect(Agent.respondTo(agent, "remember")).toBe(true);
    expect(Agent.respondTo(agent, "then")).toBe(false);
    expect(Agent.respondTo(agent, "remember=")).toBe(false);
  });

  test("keys that generated code writes show only through runtimeContext", async () => {
    const { agent } = scriptedAgent("calculator", { note: "context.note = 'hi'; return 1" });
    expect((await agent.note()).ok).toBe(true);
    expect(agent.runtimeContext.note).toBe("hi");
    expect(typeof agent.note).toBe("function");
  });

  test("reserved names cannot be assigned", () => {
    const { agent } = scriptedAgent("calculator", {});
    expect(() => {
      (agent as Record<string, unknown>).remember = 1;
    }).toThrow(/"remember" is reserved on agents/);
  });

  test("__proto__ is no context key: writing it (from parsed JSON, say) is a TypeError, and the context keeps its own prototype", () => {
    const { agent } = scriptedAgent("calculator", {});
    const parsed = JSON.parse('{"__proto__": {"admin": true}, "y": 2}') as Record<string, unknown>;
    expect(() => agent.remember(parsed)).toThrow(new TypeError('Cannot store "__proto__" on agent "calculator": it would change the context object\'s prototype, not store a value. Use another key.'));
    expect(Object.getPrototypeOf(agent.runtimeContext)).toBe(Object.prototype);
    expect((agent.runtimeContext as Record<string, unknown>).admin).toBeUndefined();
    expect(agent.runtimeContext).toEqual({});
  });

  test("a value that cannot enter the sandbox is refused at assignment", () => {
    const { agent } = scriptedAgent<{ helper: unknown }>("calculator", {});
    expect(() => {
      agent.helper = () => 1;
    }).toThrow('Cannot store "helper" on agent "calculator": helper is a function, which cannot enter the sandbox. Store plain data.');
  });
});

describe("reserved members never call the model", () => {
  test("then is undefined, so awaiting an agent is safe", async () => {
    const { agent, provider } = scriptedAgent("calculator", {});
    expect(agent.then).toBeUndefined();
    expect(await agent).toBe(agent);
    expect(provider.calls).toHaveLength(0);
  });

  test("console.log, inspect, JSON.stringify and string conversion make no call", () => {
    const { agent, provider } = scriptedAgent<{ value: number }>("calculator", {});
    agent.value = 5;
    expect(inspect(agent)).toBe("Agent<calculator> { value: 5 }");
    expect(JSON.stringify(agent)).toBe('{"role":"calculator"}');
    expect(`${agent}`).toBe("[Agent calculator]");
    expect(String(agent)).toBe("[Agent calculator]");
    expect(agent + "").toBe("[Agent calculator]");
    expect(Object.keys(agent)).toEqual(["value"]);
    expect(provider.calls).toHaveLength(0);
  });
});

describe("remember and runtimeContext", () => {
  test("remember writes entries and returns the same agent", () => {
    const { agent } = scriptedAgent("calculator", {});
    expect(agent.remember({ mode: "scientific", precision: 3 })).toBe(agent);
    expect(agent.mode).toBe("scientific");
    expect(Agent.respondTo(agent, "precision")).toBe(true);
  });

  test("runtimeContext is the live object: changes show both ways", async () => {
    const { agent } = scriptedAgent("calculator", { bump: "context.count = (context.count ?? 0) + 1; return context.count" });
    const context = agent.runtimeContext;
    context.count = 10;
    expect((await agent.bump()).value).toBe(11);
    expect(agent.runtimeContext).toBe(context);
    expect(context.count).toBe(11);
  });
});

describe("dynamic calls", () => {
  test("positional arguments reach the program as args", async () => {
    const { agent } = scriptedAgent("calculator", { add: "return args[0] + args[1]" });
    const r = await agent.add(2, 3);
    expect(r).toBeInstanceOf(Outcome);
    expect(r).toMatchObject({ status: "ok", ok: true, value: 5, retriable: false });
    expect(r.callId).toMatch(/^[0-9a-f-]{36}$/);
    expect(Object.hasOwn(r, "errorType")).toBe(false);
  });

  test("kw() passes named arguments as kwargs", async () => {
    const { agent } = scriptedAgent("calculator", {
      convert: "return kwargs.to === 'f' ? args[0] * 9 / 5 + 32 : null",
    });
    expect((await agent.convert(100, kw({ from: "c", to: "f" }))).value).toBe(212);
  });

  test("kw() anywhere but last is invalid input", async () => {
    const { agent } = scriptedAgent("calculator", { convert: "return 1" });
    const r = await agent.convert(kw({ from: "c" }), 100);
    expect(r.errorType).toBe("invalid_input");
    expect(r.errorMessage).toBe("kw() must be the last argument, but args[0] is kw(). Move the named arguments to the end.");
  });

  test("an argument that cannot enter the sandbox is invalid input naming its path", async () => {
    const { agent, provider } = scriptedAgent("calculator", { apply: "return 1" });
    const r = await agent.apply(1, { cb: () => 1 });
    expect(r.errorType).toBe("invalid_input");
    expect(r.errorMessage).toBe("Argument args[1].cb is a function and cannot enter the sandbox. Pass plain data.");
    expect(provider.calls).toHaveLength(0);
  });

  test("structured-clone types survive the trip in and out", async () => {
    const { agent } = scriptedAgent("echo", { echo: "return args[0]" });
    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    const input = { when: new Date(0), map: new Map([["a", 1]]), set: new Set([1, 2]), bytes: new Uint8Array([1, 2, 255]), cyclic };
    const { value } = await agent.echo(input);
    const out = value as typeof input;
    expect(out.when).toEqual(new Date(0));
    expect(out.map).toEqual(new Map([["a", 1]]));
    expect(out.set).toEqual(new Set([1, 2]));
    expect(out.bytes).toEqual(new Uint8Array([1, 2, 255]));
    expect(out.cyclic.self).toBe(out.cyclic);
  });

  test("context changes persist across calls", async () => {
    const { agent } = scriptedAgent("counter", { inc: "context.n = (context.n ?? 0) + args[0]; return context.n" });
    await agent.inc(2);
    await agent.inc(3);
    expect((await agent.inc(4)).value).toBe(9);
    expect(agent.runtimeContext.n).toBe(9);
  });

  test("a failed run leaves the context as it was", async () => {
    const { agent } = scriptedAgent<{ kept: string }>("counter", {
      inc: "context.n = (context.n ?? 0) + 1; return context.n",
      breakIt: "context.n = 1000; context.extra = true; delete context.kept; throw new Error('half done')",
    });
    agent.kept = "yes";
    await agent.inc();
    const r = await agent.breakIt();
    expect(r.errorType).toBe("execution");
    expect(r.errorMessage).toBe("Error: half done");
    expect(agent.runtimeContext).toEqual({ kept: "yes", n: 1 });
  });

  test("unwrap returns the value or throws an ImprovError with the outcome's fields", async () => {
    const { agent } = scriptedAgent("calculator", { ok: "return 7", bad: "throw new RangeError('no')" });
    expect((await agent.ok()).unwrap()).toBe(7);
    const failed = await agent.bad();
    expect(() => failed.unwrap()).toThrow(expect.objectContaining({ name: "ImprovError", errorType: "execution", retriable: false, callId: failed.callId, errorMessage: "RangeError: no" }));
  });

  test("concurrent calls on one agent commit one at a time without losing updates", async () => {
    const { agent } = scriptedAgent("counter", { inc: "const n = context.n ?? 0; await null; context.n = n + 1; return context.n" });
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => agent.inc()));
    expect(outcomes.every((r) => r.ok)).toBe(true);
    expect(agent.runtimeContext.n).toBe(20);
    expect(new Set(outcomes.map((r) => r.value)).size).toBe(20);
  });

  test("with no provider configured, a call is a provider outcome that says what to do", async () => {
    const saved = process.env.OPENAI_API_KEY;
    const savedAnthropic = process.env.ANTHROPIC_API_KEY;
    delete process.env.OPENAI_API_KEY;
    delete process.env.ANTHROPIC_API_KEY;
    try {
      const r = await Agent.for("calculator").add(1);
      expect(r.errorType).toBe("provider");
      expect(r.errorMessage).toBe("No provider configured. Pass { provider } to Agent.for(), or set OPENAI_API_KEY or ANTHROPIC_API_KEY.");
      expect(r.retriable).toBe(true);
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
      if (savedAnthropic !== undefined) process.env.ANTHROPIC_API_KEY = savedAnthropic;
    }
  });
});
