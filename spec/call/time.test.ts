import { describe, expect, test } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, PostgresStore, ScriptedProvider, SqliteStore, type Provider } from "../../src/index.ts";
import { postgresUnavailable, startPostgres } from "../../test-support/postgres.ts";
import { scriptedAgent } from "../../test-support/agents.ts";
import { waitFor } from "../../test-support/wait-for.ts";

/** A program line that keeps the isolate busy for `ms`. */
const spin = (ms: number) => `const end = Date.now() + ${ms}; while (Date.now() < end) {}`;

describe("executionTimeoutMs counts the program's own running time", () => {
  test("waiting for a delegated call whose model is slower than the limit is not the program's time", async () => {
    const { agent } = scriptedAgent("planner", {
      "planner.plan": "const r = await delegate('writer').draft(); return r.value",
      "writer.draft": { delayMs: 1_500, code: "return 'drafted'" },
    }, { executionTimeoutMs: 500, reuse: false });
    const outcome = await agent.plan();
    expect(outcome.errorMessage).toBeUndefined();
    expect(outcome.value).toBe("drafted");
  });

  test("a program that spins past the limit still ends timeout, before a wait and after one", async () => {
    const { agent } = scriptedAgent("spinner", {
      "spinner.before": `${spin(1_500)} return 1`,
      "spinner.after": `await delegate('helper').ping(); ${spin(1_500)} return 1`,
      "helper.ping": "return 'pong'",
    }, { executionTimeoutMs: 500, reuse: false });
    for (const outcome of [await agent.before(), await agent.after()]) {
      expect(outcome.errorType).toBe("timeout");
      expect(outcome.errorMessage).toContain("executionTimeoutMs (500 ms)");
    }
  });

  test("what the program runs beside a request still in flight is its own time", async () => {
    const { agent } = scriptedAgent("juggler", {
      "juggler.juggle": `const slow = delegate('helper').slow(); await delegate('helper').fast(); ${spin(4_000)} return (await slow).value`,
      "helper.fast": "return 'fast'",
      "helper.slow": { delayMs: 6_000, code: "return 'slow'" },
    }, { executionTimeoutMs: 500, callTimeoutMs: 30_000, reuse: false });
    const outcome = await agent.juggle();
    expect(outcome.errorType).toBe("timeout");
    expect(outcome.errorMessage).toContain("executionTimeoutMs (500 ms)");
  });

  test("a program awaiting a promise that never settles, with nothing asked of the host, ends timeout", async () => {
    const { agent } = scriptedAgent("stuck", { stuck: "await new Promise(() => {}); return 1" }, { executionTimeoutMs: 300, reuse: false });
    const outcome = await agent.stuck();
    expect(outcome.errorType).toBe("timeout");
    expect(outcome.errorMessage).toContain("executionTimeoutMs (300 ms)");
  });
});

describe("callTimeoutMs bounds the whole call", () => {
  test("a provider slower than what is left of the call", async () => {
    const { agent } = scriptedAgent("patient", { answer: { delayMs: 3_000, code: "return 1" } }, { callTimeoutMs: 400, reuse: false });
    const outcome = await agent.answer();
    expect(outcome.errorType).toBe("timeout");
    // It says where the time went: most of it waiting for the provider (the rest, before asking, is the first call's setting up).
    const spent = /^The call took longer than callTimeoutMs \(400 ms\): (\d+) ms waiting for the provider, 0 ms in its programs' runs\.$/.exec(outcome.errorMessage ?? "");
    expect(spent, outcome.errorMessage).not.toBeNull();
    expect(Number(spent![1])).toBeGreaterThan(200);
    expect(Number(spent![1])).toBeLessThanOrEqual(Math.ceil(Agent.history(agent)[0]?.duration_ms ?? 0));
    expect(outcome.retriable).toBe(true);
  });

  test("a program whose waits for the host outlast the call is stopped, and the call ends timeout", async () => {
    const { agent, provider } = scriptedAgent("waiter", {
      "waiter.wait": "await delegate('helper').a(); await delegate('helper').b(); await delegate('helper').c(); return 'all'",
      "helper.a": { delayMs: 300, code: "return 1" },
      "helper.b": { delayMs: 300, code: "return 2" },
      "helper.c": { delayMs: 5_000, code: "return 3" },
    }, { callTimeoutMs: 1_500, executionTimeoutMs: 5_000, reuse: false });
    const outcome = await agent.wait();
    expect(outcome.errorType).toBe("timeout");
    // It says where the time went: most of it in the program's run, waiting for its delegated calls.
    // The run's own stop or the call's overdue check may end it first: both say where the time went.
    const spent = /(?:The call ran past its callTimeoutMs while its program ran, and the program was stopped|The call took longer than callTimeoutMs \(1500 ms\)): \d+ ms waiting for the provider, (\d+) ms in its programs' runs, (\d+) ms of them waiting for tools, fetches and delegated calls\./.exec(outcome.errorMessage ?? "");
    expect(spent, outcome.errorMessage).not.toBeNull();
    const [runsMs, waitsMs] = [Number(spent![1]), Number(spent![2])];
    // Two helper calls of 300 ms each at least, all within the runs, which end near the call's 1.5 s.
    expect(waitsMs).toBeGreaterThanOrEqual(600);
    expect(waitsMs).toBeLessThanOrEqual(runsMs);
    expect(runsMs).toBeGreaterThanOrEqual(1_000);
    // Its helpers' calls end with it (the last one's model would have taken 5 s).
    expect(provider.calls.map((call) => call.method)).toContain("a");
    expect(Agent.history(agent).at(-1)?.outcome_summary).toMatchObject({ status: "error", error_type: "timeout" });
  });

  test("a call whose time ran out before its provider was asked ends timeout, not as a rate limit (its provider was never paused)", async () => {
    // The provider's settings are read when it is first asked; here that read takes longer than the call has.
    const provider: Provider = {
      name: "sluggish",
      model: "m",
      get maxConcurrentRequests() {
        const end = Date.now() + 1_500;
        while (Date.now() < end);
        return 4;
      },
      generate: async () => ({ code: "return 1", model: "m" }),
    };
    const outcome = await Agent.for("late", { provider, callTimeoutMs: 1_000, reuse: false, maxGenerationAttempts: 1 }).work();
    expect(outcome).toMatchObject({ ok: false, errorType: "timeout" });
    expect(outcome.errorMessage).toMatch(/^The call took longer than callTimeoutMs \(1000 ms\)/);
  });

  test("a program may lower its delegate's callTimeoutMs, never raise it", async () => {
    const { agent } = scriptedAgent("boss", {
      "boss.run": "const r = await delegate('worker', { callTimeoutMs: 300 }).slow(); return r",
      "worker.slow": { delayMs: 2_000, code: "return 1" },
    }, { callTimeoutMs: 10_000, reuse: false });
    const outcome = await agent.run();
    expect(outcome.value).toMatchObject({ ok: false, error_type: "timeout", error_message: expect.stringMatching(/^The call took longer than callTimeoutMs \(300 ms\): \d+ ms waiting for the provider/) });
  });

  test("a call waiting behind its agent's running program ends at its callTimeoutMs; its program never runs, and the history keeps both records", async () => {
    const { agent } = scriptedAgent("busy", { hold: `${spin(2_000)} return 'held'`, mark: "context.marked = true; return 'marked'", peek: "return context.marked ?? null" }, { executionTimeoutMs: 5_000, reuse: false });
    const holding = agent.hold();
    const began = performance.now();
    const waiting = await Agent.call<string>(agent, "mark", [], { callTimeoutMs: 300 });
    const waitedMs = performance.now() - began;
    expect(waiting.errorType).toBe("timeout");
    expect(waiting.errorMessage).toMatch(/^The call took longer than callTimeoutMs \(300 ms\), \d+ ms of it waiting for this agent's earlier calls to end \(an agent runs one program at a time\), so its program did not run: /);
    // Answered at its own limit, not when the 2 s program let go of the agent.
    expect(waitedMs).toBeLessThan(1_500);
    expect((await holding).value).toBe("held");
    const records = Agent.history(agent);
    expect(records.map((record) => [record.method_name, record.outcome_summary.status])).toEqual(expect.arrayContaining([["hold", "ok"], ["mark", "error"]]));
    expect(records).toHaveLength(2);
    expect((await agent.peek()).value).toBeNull();
  });

  test("a call cancelled while it waits behind its agent's running program ends cancelled at once", async () => {
    const { agent, provider } = scriptedAgent("queued", { hold: `${spin(4_000)} return 'held'`, mark: "context.marked = true; return 'marked'", peek: "return context.marked ?? null" }, { executionTimeoutMs: 10_000, reuse: false });
    const holding = agent.hold();
    const controller = new AbortController();
    const waiting = Agent.call(agent, "mark", [], { signal: controller.signal });
    await waitFor(() => provider.calls.some((call) => call.method === "mark"));
    const began = performance.now();
    controller.abort();
    const outcome = await waiting;
    // Long before the running program's 4 s end, however slow the machine.
    expect(performance.now() - began).toBeLessThan(2_500);
    expect(outcome.errorType).toBe("cancelled");
    expect(outcome.errorMessage).toMatch(/^The call was cancelled after waiting \d+ ms for this agent's earlier calls to end; its program did not run\.$/);
    expect((await holding).value).toBe("held");
    expect((await agent.peek()).value).toBeNull();
  });

  test("a durable agent's calls that end waiting are answered at once; closing right after still commits their records, after the running call's, with the time they took", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "improv-queue-")), "agents.db");
    const store = new SqliteStore(file);
    const scripted = new ScriptedProvider({ programs: { hold: `${spin(4_000)} return 'held'`, mark: "context.marked = true; return 'marked'", peek: "return context.marked ?? null" } });
    const agent = await Agent.open("durable-busy", { provider: scripted, store, executionTimeoutMs: 10_000, reuse: false });
    const holding = agent.hold();
    const began = performance.now();
    const waiting = await Promise.all([1, 2, 3].map(() => Agent.call(agent, "mark", [], { callTimeoutMs: 300 })));
    expect(performance.now() - began).toBeLessThan(2_500);
    expect(waiting.map((outcome) => outcome.errorType)).toEqual(["timeout", "timeout", "timeout"]);
    // Closed as soon as the callers have their answers: closing waits for the records still to be written.
    await Agent.close(agent);
    await store.close();
    expect((await holding).value).toBe("held");
    const reopenedStore = new SqliteStore(file);
    const reopened = await Agent.open("durable-busy", { provider: scripted, store: reopenedStore });
    const records = Agent.history(reopened);
    expect(records.map((record) => [record.method_name, record.outcome_summary.status])).toEqual([["hold", "ok"], ["mark", "error"], ["mark", "error"], ["mark", "error"]]);
    // Each record's duration is the time until its caller was answered, not until it was written.
    for (const record of records.slice(1)) expect(record.duration_ms).toBeLessThan(2_500);
    expect((await reopened.peek()).value).toBeNull();
    await Agent.close(reopened);
    await reopenedStore.close();
  });

  test("a durable agent's call whose provider outlasts its callTimeoutMs while another program runs is answered at its limit", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "improv-queue-")), "agents.db");
    const store = new SqliteStore(file);
    const scripted = new ScriptedProvider({ programs: { hold: `${spin(4_000)} return 'held'`, slow: { delayMs: 3_000, code: "return 1" } } });
    const agent = await Agent.open("durable-slow", { provider: scripted, store, executionTimeoutMs: 10_000, reuse: false });
    const holding = agent.hold();
    const began = performance.now();
    const outcome = await Agent.call(agent, "slow", [], { callTimeoutMs: 300 });
    expect(performance.now() - began).toBeLessThan(2_500);
    expect(outcome.errorType).toBe("timeout");
    expect((await holding).value).toBe("held");
    await Agent.close(agent);
    await store.close();
    const reopenedStore = new SqliteStore(file);
    const reopened = await Agent.open("durable-slow", { provider: scripted, store: reopenedStore });
    expect(Agent.history(reopened).map((record) => [record.method_name, record.outcome_summary.error_type])).toEqual([["hold", null], ["slow", "timeout"]]);
    await Agent.close(reopened);
    await reopenedStore.close();
  });

  test("a delegated call ends with the program that made it", async () => {
    let helperAborted = false;
    const provider: Provider = {
      generate: async (request, signal) => {
        if (request.role !== "helper") return { code: "delegate('helper').slow(); await delegate('helper').fast(); return 'left'", model: "m" };
        if (request.method === "fast") return { code: "return 'fast'", model: "m" };
        return new Promise((_, reject) =>
          signal.addEventListener("abort", () => {
            helperAborted = true;
            reject(new Error("aborted"));
          }),
        );
      },
    };
    const agent = Agent.for("leaver", { provider, reuse: false });
    expect((await agent.leave()).value).toBe("left");
    await waitFor(() => helperAborted);
  });
});

describe.skipIf(postgresUnavailable() !== undefined)("callTimeoutMs and other processes' turns (PostgreSQL)", () => {
  test("a call waiting for another process's turn on the agent ends at its callTimeoutMs, saying where the time went", async () => {
    const server = await startPostgres();
    try {
      const url = await server.database("turn_wait");
      const [first, second] = [new PostgresStore(url), new PostgresStore(url)];
      const scripted = new ScriptedProvider({ programs: { hold: `${spin(3_000)} return 'held'`, mark: "context.marked = true; return 'marked'" } });
      const holder = await Agent.open("shared", { provider: scripted, store: first, executionTimeoutMs: 10_000, reuse: false });
      const waiter = await Agent.open("shared", { provider: scripted, store: second, executionTimeoutMs: 10_000, reuse: false });
      const holding = holder.hold();
      await waitFor(() => scripted.calls.some((call) => call.method === "hold"));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const began = performance.now();
      const outcome = await Agent.call(waiter, "mark", [], { callTimeoutMs: 800 });
      expect(performance.now() - began).toBeLessThan(2_000);
      expect(outcome.errorType).toBe("timeout");
      expect(outcome.errorMessage).toMatch(/, \d+ ms waiting for other processes' turns on this agent\.$/);
      expect((await holding).value).toBe("held");
      await Promise.all([Agent.close(holder), Agent.close(waiter)]);
      await Promise.all([first.close(), second.close()]);
    } finally {
      await server.stop();
    }
  }, 60_000);
});
