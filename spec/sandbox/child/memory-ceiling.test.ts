import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider } from "../../../src/index.ts";
import { configureSandbox, sandboxPool } from "../../../src/sandbox/host/pool.ts";
import { waitFor } from "../../../test-support/wait-for.ts";

// `new Array(1e8).fill(0)` cannot be interrupted and grows the process far past the isolate's
// limit, outside its heap accounting; only the process's memory ceiling (512 MiB here) stops it.
// That takes about 3 s, and over 5 s on a machine running two test suites at once: the time
// limit is only there so that a ceiling that failed ends the call, so it is set well past that.
const FILL = "new Array(1e8).fill(0); return 'filled'";
const LIMIT_MS = 20_000;

// One sandbox process, so the process these tests watch is the one every agent uses.
configureSandbox({ processes: 1, maxProcesses: 1 });

describe("the sandbox process memory ceiling", () => {
  test("a program that takes the process past its ceiling ends memory_limit; the process is replaced and the next call is served", async () => {
    const agent = Agent.for<{ kept: string }>("filler", {
      provider: new ScriptedProvider({ programs: { fill: FILL, ping: "return 'pong:' + context.kept" } }),
      executionTimeoutMs: LIMIT_MS,
      memoryLimitMb: 32,
    });
    agent.kept = "intact";
    await agent.ping();
    const supervisor = sandboxPool();
    const pidBefore = supervisor.pids[0];
    const started = performance.now();
    const r = await agent.fill();
    expect(r).toMatchObject({ errorType: "memory_limit", retriable: false });
    expect(r.errorMessage).toMatch(/^The sandbox process grew to \d+ MiB, past its 512 MiB memory ceiling, while this program ran; the program was stopped and the process restarted\.$/);
    process.stdout.write(`memory ceiling: the backstop stopped the filling program after ${Math.round(performance.now() - started)} ms\n`);
    expect((await agent.ping()).value).toBe("pong:intact");
    expect(supervisor.pids[0]).not.toBe(pidBefore);
    expect(Agent.history(agent).map((record) => record.outcome_summary.error_type)).toEqual([null, "memory_limit", null]);
  });

  test("a program of another agent running in that process at the time ends retriable, and says so", async () => {
    const waiter = Agent.for("waiter", {
      provider: new ScriptedProvider({ programs: { wait: "await new Promise(() => {})", ping: "return 'pong'" } }),
      executionTimeoutMs: LIMIT_MS,
    });
    const filler = Agent.for("filler", { provider: new ScriptedProvider({ programs: { fill: FILL } }), executionTimeoutMs: LIMIT_MS, memoryLimitMb: 32 });
    await waiter.ping();
    const waiting = waiter.wait();
    await waitFor(() => sandboxPool().startedRuns > 0);
    const [filled, waited] = await Promise.all([filler.fill(), waiting]);
    expect(filled.errorType).toBe("memory_limit");
    expect(waited).toMatchObject({
      errorType: "execution",
      retriable: true,
      errorMessage: "The sandbox process was restarted because another program took it past its memory ceiling while this program ran. Call again.",
    });
    expect((await waiter.ping()).value).toBe("pong");
  });

  test("idle agents cached in the process do not lift its ceiling: it counts what running programs may use and what idle isolates hold", async () => {
    const saved = sandboxPool().config.isolateCacheMb;
    configureSandbox({ isolateCacheMb: 4_096 });
    try {
      const provider = new ScriptedProvider({ programs: { ping: "return 'pong'" } });
      const idle = Array.from({ length: 40 }, (_, index) => Agent.for(`idle-${index}`, { provider, memoryLimitMb: 128 }));
      for (const outcome of await Promise.all(idle.map((agent) => agent.ping()))) expect(outcome.value).toBe("pong");
      const [stats] = await sandboxPool().stats();
      expect(stats!.isolates - stats!.busyIsolates).toBeGreaterThanOrEqual(40);
      const filler = Agent.for("filler", { provider: new ScriptedProvider({ programs: { fill: FILL } }), executionTimeoutMs: LIMIT_MS, memoryLimitMb: 32 });
      const r = await filler.fill();
      expect(r.errorType).toBe("memory_limit");
      const ceilingMb = Number(/past its (\d+) MiB memory ceiling/.exec(r.errorMessage ?? "")?.[1]);
      process.stdout.write(`memory ceiling: ${ceilingMb} MiB with 40 idle agents cached\n`);
      // The idle isolates' limits alone would be 40 × 128 MiB = 5 GiB; what they hold is a few MiB each.
      expect(ceilingMb).toBeGreaterThanOrEqual(512);
      expect(ceilingMb).toBeLessThan(1_024);
    } finally {
      configureSandbox({ isolateCacheMb: saved });
    }
  });
});
