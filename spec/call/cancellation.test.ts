import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider } from "../../src/index.ts";

describe("cancellation through options.signal", () => {
  test("aborting while the provider works cancels the call", async () => {
    const controller = new AbortController();
    const agent = Agent.for<{ kept: number }>("worker", {
      provider: new ScriptedProvider({ programs: { slow: { delayMs: 10_000, code: "return 1" } } }),
      signal: controller.signal,
    });
    const pending = agent.slow();
    setTimeout(() => controller.abort(), 30);
    const r = await pending;
    expect(r).toMatchObject({ errorType: "cancelled", errorMessage: "The call was cancelled while waiting for the provider.", retriable: false });
  });

  test("aborting while the program runs cancels it and keeps the context as it was", async () => {
    const controller = new AbortController();
    const agent = Agent.for<{ kept: number }>("worker", {
      provider: new ScriptedProvider({ programs: { spin: "context.touched = true; while (true) {}", ping: "return 'pong'" } }),
      signal: controller.signal,
      executionTimeoutMs: 20_000,
    });
    agent.kept = 1;
    const pending = agent.spin();
    setTimeout(() => controller.abort(), 300);
    const r = await pending;
    expect(r.errorType).toBe("cancelled");
    expect(agent.runtimeContext).toEqual({ kept: 1 });
  });

  test("a signal aborted before the call cancels it without asking the provider", async () => {
    const provider = new ScriptedProvider({ programs: { m: "return 1" } });
    const agent = Agent.for("worker", { provider, signal: AbortSignal.abort() });
    expect((await agent.m()).errorType).toBe("cancelled");
    expect(provider.calls).toHaveLength(0);
  });

  test("children inherit the signal", async () => {
    const controller = new AbortController();
    const parent = Agent.for("worker", { provider: new ScriptedProvider({ programs: { m: "return 1" } }), signal: controller.signal });
    const child = parent.delegate("helper");
    controller.abort();
    expect((await child.m()).errorType).toBe("cancelled");
  });
});
