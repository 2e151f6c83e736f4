import { describe, expect, test } from "vitest";
import { Agent } from "../../src/index.ts";
import { scriptedAgent } from "../../test-support/agents.ts";

describe("generation attempts", () => {
  test("a null payload is retried and the next program runs", async () => {
    const { agent, provider } = scriptedAgent("calculator", { answer: [null, "return 42"] });
    const r = await agent.answer();
    expect(r.value).toBe(42);
    expect(provider.calls.map((c) => c.attempt)).toEqual([1, 2]);
    expect(Agent.history(agent)).toHaveLength(1);
  });

  test("null, blank and unparsable programs use up every attempt, then invalid_code", async () => {
    const { agent, provider } = scriptedAgent("calculator", { answer: [null, "   ", "return (("] }, { maxGenerationAttempts: 3 });
    const r = await agent.answer();
    expect(r.errorType).toBe("invalid_code");
    expect(r.retriable).toBe(true);
    expect(r.errorMessage).toMatch(/^The program does not parse \(attempt 3\): /);
    expect(provider.calls).toHaveLength(3);
  });

  test("maxGenerationAttempts bounds the attempts", async () => {
    const { agent, provider } = scriptedAgent("calculator", { answer: "" }, { maxGenerationAttempts: 4 });
    expect((await agent.answer()).errorType).toBe("invalid_code");
    expect(provider.calls).toHaveLength(4);
  });

  test("code that cannot break out of the function body is invalid, not run", async () => {
    const { agent } = scriptedAgent("calculator", { answer: "}); globalThis.escaped = true; (function(){" }, { maxGenerationAttempts: 1 });
    expect((await agent.answer()).errorType).toBe("invalid_code");
  });

  test("a provider failure is retried, and the last attempt's error is the outcome", async () => {
    const { agent, provider } = scriptedAgent("calculator", { answer: [{ error: "first" }, { error: "second" }] });
    const r = await agent.answer();
    expect(r).toMatchObject({ errorType: "provider", errorMessage: "The provider failed: second", retriable: true });
    expect(provider.calls).toHaveLength(2);
  });

  test("a provider slower than providerTimeoutMs ends with a timeout in about that time", async () => {
    const { agent } = scriptedAgent("calculator", { answer: { delayMs: 10_000, code: "return 1" } }, { providerTimeoutMs: 150, maxGenerationAttempts: 1 });
    const started = performance.now();
    const r = await agent.answer();
    expect(r).toMatchObject({ errorType: "timeout", errorMessage: "The provider did not answer within providerTimeoutMs (150 ms).", retriable: true });
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  test("a provider that ignores its abort signal still cannot hold the call past the timeout", async () => {
    const stubborn = { generate: () => new Promise<never>(() => {}) };
    const r = await Agent.for("calculator", { provider: stubborn, providerTimeoutMs: 100, maxGenerationAttempts: 2 }).answer();
    expect(r.errorType).toBe("timeout");
  });

  test("a program that throws is an execution outcome carrying its message, not retried", async () => {
    const { agent, provider } = scriptedAgent("calculator", { answer: "throw new TypeError('bad operand')" });
    const r = await agent.answer();
    expect(r).toMatchObject({ errorType: "execution", errorMessage: "TypeError: bad operand", retriable: false });
    expect(provider.calls).toHaveLength(1);
  });

  test("throwing a non-error value still gives a readable message", async () => {
    const { agent } = scriptedAgent("calculator", { answer: "throw 'plain text'" });
    expect((await agent.answer()).errorMessage).toBe("plain text");
  });

  test("a provider returning something that is not a generation is a provider outcome", async () => {
    const r = await Agent.for("calculator", { provider: { generate: async () => undefined as never }, maxGenerationAttempts: 1 }).answer();
    expect(r.errorType).toBe("provider");
  });
});
