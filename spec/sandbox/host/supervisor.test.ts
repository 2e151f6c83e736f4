import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider } from "../../../src/index.ts";
import { configureSandbox, sandboxPool } from "../../../src/sandbox/host/pool.ts";
import { waitFor } from "../../../test-support/wait-for.ts";

// One sandbox process, so the process these tests watch is the one every agent uses.
configureSandbox({ processes: 1, maxProcesses: 1 });

describe("the supervised sandbox process", () => {
  test("programs run in a separate process, never in the host", async () => {
    const agent = Agent.for("where", { provider: new ScriptedProvider({ programs: { ping: "return 1" } }) });
    await agent.ping();
    const pid = sandboxPool().pids[0];
    expect(pid).toBeTypeOf("number");
    expect(pid).not.toBe(process.pid);
  });

  test("a sandbox process that stops answering is killed and replaced; the call ends as a timeout", async () => {
    const agent = Agent.for<{ kept: string }>("frozen", {
      provider: new ScriptedProvider({ programs: { wait: "await new Promise(() => {})", ping: "return 'pong:' + context.kept" } }),
      executionTimeoutMs: 300,
    });
    agent.kept = "intact";
    await agent.ping();
    const supervisor = sandboxPool();
    const startsBefore = supervisor.starts;
    const frozenPid = supervisor.pids[0] as number;
    const pending = agent.wait();
    // Started, not just sent: a process stopped before it reads the run would leave it queued, and resent elsewhere.
    await waitFor(() => supervisor.startedRuns > 0);
    // A stopped process cannot dispose its isolate or answer: only the host's deadline helps.
    process.kill(frozenPid, "SIGSTOP");
    const r = await pending;
    expect(r.errorType).toBe("timeout");
    expect(r.errorMessage).toBe("The program ran longer than executionTimeoutMs (300 ms) and could not be stopped inside the sandbox; the sandbox process was restarted.");
    expect((await agent.ping()).value).toBe("pong:intact");
    expect(supervisor.starts).toBe(startsBefore + 1);
    expect(supervisor.pids[0]).not.toBe(frozenPid);
    expect(Agent.history(agent)).toHaveLength(3);
  });

  test("a sandbox process that dies mid-run gives a typed outcome and the agent goes on with its history", async () => {
    const agent = Agent.for("crash", {
      provider: new ScriptedProvider({ programs: { wait: "await new Promise(() => {})", count: "return context.conversation_history.length" } }),
      executionTimeoutMs: 5_000,
    });
    await agent.count();
    const pending = agent.wait();
    // Started: a run the process had not read yet would be sent to the next process instead.
    await waitFor(() => sandboxPool().startedRuns > 0);
    process.kill(sandboxPool().pids[0] as number, "SIGKILL");
    const r = await pending;
    expect(r).toMatchObject({ errorType: "execution", retriable: true, errorMessage: "The sandbox process stopped (SIGKILL) while this program ran, and was restarted. Call again." });
    expect(Agent.history(agent).at(-1)?.outcome_summary).toMatchObject({ error_type: "execution", retriable: true });
    expect(() => r.unwrap()).toThrow(expect.objectContaining({ errorType: "execution", retriable: true }));
    expect((await agent.count()).value).toBe(2);
  });

  test("a program that computes makes other agents wait, without the wait counting against their own limit", async () => {
    const busy = Agent.for("busy", {
      provider: new ScriptedProvider({ programs: { spin: "const end = Date.now() + 800; while (Date.now() < end) {} return 'spun'" } }),
      executionTimeoutMs: 2_000,
    });
    const quick = Agent.for("quick", { provider: new ScriptedProvider({ programs: { ping: "return 'pong'" } }), executionTimeoutMs: 200 });
    await Promise.all([busy.spin(), quick.ping()]); // both isolates exist before the race
    const spinning = busy.spin();
    await waitFor(() => sandboxPool().activeRuns > 0);
    const started = Date.now();
    const ping = await quick.ping();
    expect(ping.errorMessage).toBeUndefined();
    expect(ping.value).toBe("pong");
    expect(Date.now() - started).toBeGreaterThan(200); // it waited past its own 200 ms limit
    expect((await spinning).value).toBe("spun");
  });
});
