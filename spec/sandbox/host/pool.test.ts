import { totalmem } from "node:os";
import { afterEach, describe, expect, test, vi } from "vitest";
import { Agent, ScriptedProvider, configureSandbox, type AgentProxy } from "../../../src/index.ts";
import { defaultSandboxConfig, sandboxPool } from "../../../src/sandbox/host/pool.ts";
import { poolTimings } from "../../../src/sandbox/host/timings.ts";
import type { BridgeAnswer, RunReport, RunRequestMessage } from "../../../src/sandbox/protocol.ts";
import { prepareProgram } from "../../../src/programs/index.ts";
import { syntheticRecord } from "../../../test-support/records.ts";
import { waitFor } from "../../../test-support/wait-for.ts";

const SPIN = (ms: number) => `const end = Date.now() + ${ms}; while (Date.now() < end) {} return 'spun'`;

function agents(count: number, role: string, program: string, options: Record<string, unknown> = {}): AgentProxy[] {
  const provider = new ScriptedProvider({ programs: { work: program, warm: "return 1" } });
  return Array.from({ length: count }, () => Agent.for(role, { provider, reuse: false, ...options }));
}

/**
 * A provider for agents of role `waiter`, whose program awaits a helper answering after
 * `helperDelayMs`, beside agents of any other role running `program`; `helper.asked` is set
 * once a waiter's program has asked.
 */
function waitingOnHelper(waiter: string, helperDelayMs: number, program: string): { provider: ScriptedProvider; helper: { asked: boolean } } {
  const helper = { asked: false };
  const provider = new ScriptedProvider({
    programs: (request) => {
      if (request.method === "warm") return "return 1";
      if (request.role === "helper") {
        helper.asked = true;
        return { delayMs: helperDelayMs, code: "return 'pong'" };
      }
      return request.role === waiter ? "const r = await delegate('helper').ping(); return r.value" : program;
    },
  });
  return { provider, helper };
}

afterEach(() => {
  sandboxPool().shutdown();
});

describe("configureSandbox", () => {
  test("takes processes, maxProcesses, isolateCacheMb and reuseIsolates, and says what is wrong with anything else", () => {
    const cache = sandboxPool().config.isolateCacheMb;
    expect(configureSandbox({ processes: 3, maxProcesses: 5 })).toEqual({ processes: 3, maxProcesses: 5, isolateCacheMb: cache, reuseIsolates: true });
    expect(configureSandbox({ processes: 2 })).toEqual({ processes: 2, maxProcesses: 5, isolateCacheMb: cache, reuseIsolates: true });
    expect(() => configureSandbox({ processes: 0 })).toThrow("Sandbox option processes must be a whole number from 1 to 64; got 0.");
    expect(() => configureSandbox({ maxProcesses: 1.5 })).toThrow("Sandbox option maxProcesses must be a whole number from 1 to 64; got 1.5.");
    expect(() => configureSandbox({ processes: 4, maxProcesses: 2 })).toThrow("Sandbox option maxProcesses (2) must be at least processes (4).");
    expect(() => configureSandbox({ threads: 2 } as never)).toThrow('Unknown sandbox option "threads". Valid options: processes, maxProcesses, isolateCacheMb, reuseIsolates.');
    expect(() => configureSandbox({ reuseIsolates: "no" } as never)).toThrow('Sandbox option reuseIsolates must be true or false; got "no".');
    expect(() => configureSandbox({ isolateCacheMb: -1 })).toThrow(TypeError);
    expect(() => configureSandbox({ isolateCacheMb: 2.5 })).toThrow("Sandbox option isolateCacheMb must be a whole number of MiB; got 2.5.");
    expect(() => configureSandbox({ isolateCacheMb: 7 })).toThrow(
      new RangeError("Sandbox option isolateCacheMb (7 MiB) cannot hold one idle agent isolate in each of the 2 sandbox processes (about 4 MiB each); give at least 8."),
    );
    expect(configureSandbox({ isolateCacheMb: 8 }).isolateCacheMb).toBe(8);
    expect(configureSandbox({ reuseIsolates: false }).reuseIsolates).toBe(false);
    expect(sandboxPool().config).toEqual({ processes: 2, maxProcesses: 5, isolateCacheMb: 8, reuseIsolates: false });
    // More processes without isolateCacheMb raise it to what they need; given with them, too little is refused.
    expect(configureSandbox({ processes: 3 })).toMatchObject({ processes: 3, isolateCacheMb: 12 });
    expect(() => configureSandbox({ processes: 4, isolateCacheMb: 12 })).toThrow(RangeError);
    expect(sandboxPool().config.processes).toBe(3);
    configureSandbox({ processes: 2, isolateCacheMb: cache, reuseIsolates: true });
  });

  test("the default keeps idle isolates in a quarter of the machine's memory", () => {
    expect(defaultSandboxConfig().isolateCacheMb).toBe(Math.max(64, Math.floor(totalmem() / 2 ** 20 / 4)));
  });

  test("or of a container's memory limit, when that is lower (none: 0, or more than the machine has)", () => {
    const limit = vi.spyOn(process, "constrainedMemory");
    try {
      limit.mockReturnValue(1024 * 2 ** 20);
      expect(defaultSandboxConfig().isolateCacheMb).toBe(256);
      for (const none of [0, 2 ** 64]) {
        limit.mockReturnValue(none);
        expect(defaultSandboxConfig().isolateCacheMb).toBe(Math.max(64, Math.floor(totalmem() / 2 ** 20 / 4)));
      }
    } finally {
      limit.mockRestore();
    }
  });
});

describe("IMPROV_SANDBOX_PROCESSES", () => {
  test("sets the default number of processes; a bad value is ignored with a warning naming it", () => {
    const saved = process.env.IMPROV_SANDBOX_PROCESSES;
    // The warning this test provokes is caught here, not printed among the run's output.
    const warnings: string[] = [];
    const emitted = vi.spyOn(process, "emitWarning").mockImplementation(((warning: string | Error) => void warnings.push(typeof warning === "string" ? warning : warning.message)) as typeof process.emitWarning);
    try {
      process.env.IMPROV_SANDBOX_PROCESSES = " 3 ";
      expect(defaultSandboxConfig()).toMatchObject({ processes: 3, maxProcesses: 8 });
      process.env.IMPROV_SANDBOX_PROCESSES = "12";
      expect(defaultSandboxConfig()).toMatchObject({ processes: 12, maxProcesses: 12 });
      process.env.IMPROV_SANDBOX_PROCESSES = "lots";
      expect(defaultSandboxConfig().processes).toBeLessThanOrEqual(4);
    } finally {
      emitted.mockRestore();
      if (saved === undefined) delete process.env.IMPROV_SANDBOX_PROCESSES;
      else process.env.IMPROV_SANDBOX_PROCESSES = saved;
    }
    expect(warnings).toContain('Ignoring IMPROV_SANDBOX_PROCESSES="lots": use a whole number from 1 to 64.');
  });
});

describe("the sandbox pool", () => {
  test("while one agent's program computes, other agents move to a free process and are served before it ends", async () => {
    configureSandbox({ processes: 2, maxProcesses: 2 });
    const [spinner] = agents(1, "spinner", SPIN(3_000), { executionTimeoutMs: 10_000 });
    const others = agents(6, "quick", "context.n = (context.n ?? 0) + 1; return context.n");
    // Every agent has a home process before the spin starts; some share the spinner's.
    await Promise.all([...others.map((agent) => agent.work()), Promise.resolve()]);
    const homes = new Set(sandboxPool().pids);
    expect(homes.size).toBe(2);
    let spun = false;
    const spinning = spinner!.work().then((outcome) => {
      spun = true;
      return outcome;
    });
    await waitFor(() => sandboxPool().busyProcesses === 1);
    const results = await Promise.all(others.map(async (agent) => [await agent.work(), await agent.work(), await agent.work()]));
    expect(spun).toBe(false);
    for (const outcome of results.flat()) expect(outcome.ok).toBe(true);
    for (const agent of others) expect(agent.runtimeContext.n).toBe(4);
    expect((await spinning).value).toBe("spun");
    expect(sandboxPool().starts).toBe(2);
  });

  test("when every process is busy, the pool grows to maxProcesses, and the extra process ends once idle", async () => {
    configureSandbox({ processes: 1, maxProcesses: 2 });
    const [spinner] = agents(1, "spinner", SPIN(4_000), { executionTimeoutMs: 10_000 });
    const [quick] = agents(1, "quick", "return 'pong'");
    await quick!.work();
    const startsBefore = sandboxPool().starts;
    let spun = false;
    const spinning = spinner!.work().then((outcome) => {
      spun = true;
      return outcome;
    });
    await waitFor(() => sandboxPool().busyProcesses === 1);
    expect((await quick!.work()).value).toBe("pong");
    expect(spun).toBe(false);
    expect(sandboxPool().starts).toBe(startsBefore + 1);
    expect(sandboxPool().pids).toHaveLength(2);
    expect((await spinning).ok).toBe(true);
    await waitFor(() => sandboxPool().pids.length === 1, 15_000);
    expect((await quick!.work()).value).toBe("pong");
  });

  test("runs that arrive together behind another program are not charged for the wait (one process)", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1 });
    const [third] = agents(1, "third", SPIN(500), { executionTimeoutMs: 3_000 });
    const pair = agents(2, "pair", SPIN(2_000), { executionTimeoutMs: 3_000 });
    await Promise.all([third!.warm(), ...pair.map((agent) => agent.warm())]);
    let firstEnded = false;
    const first = third!.work().finally(() => (firstEnded = true));
    // A loaded machine can start and end the first run between two looks; then the pair simply runs after it.
    await waitFor(() => sandboxPool().startedRuns > 0 || firstEnded);
    const outcomes = await Promise.all([first, ...pair.map((agent) => agent.work())]);
    for (const outcome of outcomes) expect(outcome.errorMessage).toBeUndefined();
    expect(outcomes.map((outcome) => outcome.value)).toEqual(["spun", "spun", "spun"]);
  });

  test("a program awaiting a delegate is not timed out while another program holds its process", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1 });
    const { provider, helper } = waitingOnHelper("asker", 300, SPIN(1_500));
    const asker = Agent.for("asker", { provider, executionTimeoutMs: 1_000, reuse: false });
    const hog = Agent.for("hog", { provider, executionTimeoutMs: 5_000, reuse: false });
    await Promise.all([asker.work(), hog.work()]);
    helper.asked = false;
    // The asker's program waits for its delegate's answer while the hog holds the one process
    // for longer than the asker's whole time limit.
    const asking = asker.work();
    await waitFor(() => helper.asked);
    const [asked, hogged] = await Promise.all([asking, hog.work()]);
    expect(asked.errorMessage).toBeUndefined();
    expect(asked.value).toBe("pong");
    expect(hogged.ok).toBe(true);
  });
});

describe("cancellation", () => {
  test("a call cancelled while its run waits behind another program ends at once, and nothing its program asks for is done", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1 });
    const provider = new ScriptedProvider({
      programs: { "hog.work": SPIN(1_500), "caller.work": "const r = await delegate('witness').saw(); return r.value", "witness.saw": "return 'ran'", warm: "return 1" },
    });
    const hog = Agent.for("hog", { provider, executionTimeoutMs: 5_000, reuse: false });
    const controller = new AbortController();
    const caller = Agent.for("caller", { provider, signal: controller.signal, reuse: false });
    await Promise.all([hog.warm(), caller.warm()]);
    const hogging = hog.work();
    await waitFor(() => sandboxPool().busyProcesses === 1);
    const calling = caller.work();
    await waitFor(() => sandboxPool().activeRuns === 2);
    const started = Date.now();
    controller.abort();
    const outcome = await calling;
    expect(outcome).toMatchObject({ errorType: "cancelled", errorMessage: "The call was cancelled before its program ran." });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect((await hogging).ok).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(provider.calls.filter((call) => call.role === "witness")).toEqual([]);
  });
});

describe("fault containment", () => {
  test("sandbox processes killed again and again under load: every call ends typed, no record lost or doubled, context matches the ok records", async () => {
    configureSandbox({ processes: 2, maxProcesses: 2 });
    const provider = new ScriptedProvider({ programs: { bump: "context.n = (context.n ?? 0) + 1; await null; return context.n" } });
    const team = Array.from({ length: 6 }, () => Agent.for<{ n: number }>("counter", { provider, reuse: false }));
    const calls = 30;
    let kills = 0;
    let running = true;
    const killer = (async () => {
      while (running) {
        await new Promise((resolve) => setTimeout(resolve, 40 + Math.random() * 60));
        const pids = sandboxPool().pids;
        const pid = pids[Math.floor(Math.random() * pids.length)];
        if (pid === undefined) continue;
        try {
          process.kill(pid, "SIGKILL");
          kills += 1;
        } catch {
          // Already gone.
        }
      }
    })();
    const outcomes = await Promise.all(
      team.map(async (agent) => {
        const mine = [];
        for (let call = 0; call < calls; call += 1) mine.push(await agent.bump());
        return mine;
      }),
    );
    running = false;
    await killer;
    expect(kills).toBeGreaterThan(3);
    let failed = 0;
    team.forEach((agent, index) => {
      const mine = outcomes[index]!;
      for (const outcome of mine) {
        if (!outcome.ok) {
          failed += 1;
          expect(outcome, outcome.errorMessage).toMatchObject({ errorType: "execution", retriable: true });
        }
      }
      const history = Agent.history(agent);
      expect(history).toHaveLength(calls);
      expect(new Set(history.map((record) => record.call_id)).size).toBe(calls);
      const oks = mine.filter((outcome) => outcome.ok);
      // Each ok call saw the context the ok calls before it left, and nothing else.
      expect(oks.map((outcome) => outcome.value)).toEqual(oks.map((_, position) => position + 1));
      expect(agent.runtimeContext.n ?? 0).toBe(oks.length);
      expect(history.filter((record) => record.outcome_summary.ok)).toHaveLength(oks.length);
    });
    expect(failed).toBeGreaterThan(0);
    // The pool is whole again afterwards.
    expect((await team[0]!.bump()).ok).toBe(true);
  });

  test("uninterruptible work after an await ends as a timeout, its process replaced; the pool goes on", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1 });
    const provider = new ScriptedProvider({ programs: { fill: "await null; new Array(2e8).fill(0); return 'filled'", ping: "return 'pong'" } });
    const agent = Agent.for("filler", { provider, executionTimeoutMs: 300, memoryLimitMb: 32 });
    await agent.ping();
    const [pid] = sandboxPool().pids;
    const startsBefore = sandboxPool().starts;
    const filled = await agent.fill();
    expect(filled).toMatchObject({ errorType: "timeout", retriable: true });
    expect(filled.errorMessage).toBe("The program ran longer than executionTimeoutMs (300 ms) and could not be stopped inside the sandbox; the sandbox process was restarted.");
    expect((await agent.ping()).value).toBe("pong");
    expect(sandboxPool().starts).toBe(startsBefore + 1);
    expect(sandboxPool().pids).not.toContain(pid);
  });
});

describe("deadlines of programs beside another agent's program", () => {
  test("cancelling one program does not kill its process while another agent's program holds it", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1 });
    const { provider, helper } = waitingOnHelper("waiter", 3_000, SPIN(1_500));
    const controller = new AbortController();
    const waiter = Agent.for("waiter", { provider, signal: controller.signal, executionTimeoutMs: 1_000, reuse: false });
    const spinner = Agent.for("spinner", { provider, executionTimeoutMs: 5_000, reuse: false });
    await Promise.all([waiter.warm(), spinner.warm()]);
    const waiting = waiter.work();
    await waitFor(() => helper.asked);
    const spinning = spinner.work();
    await waitFor(() => sandboxPool().busyProcesses === 1);
    controller.abort();
    const [waited, spun] = await Promise.all([waiting, spinning]);
    expect(waited.errorType).toBe("cancelled");
    expect(spun.errorMessage).toBeUndefined();
    expect(spun.value).toBe("spun");
  });

  test("a program that computes after an answer came holds its process like a synchronous part: other agents move, each of its holds seen", async () => {
    configureSandbox({ processes: 2, maxProcesses: 2 });
    // Past the grace before its request (a hold the host sees end), then again after the answer.
    // Long enough that the host, polling every 10 ms on a loaded machine, sees the first hold.
    const before = `{ ${SPIN(400).replace(" return 'spun'", "")} }`;
    const helper = { asked: false };
    const provider = new ScriptedProvider({
      programs: (request) => {
        if (request.method === "warm") return "return 1";
        if (request.role === "helper") {
          helper.asked = true;
          return { delayMs: 400, code: "return 'pong'" };
        }
        return request.role === "late-spinner" ? `${before}; await delegate('helper').ping(); ${SPIN(2_000)}` : "context.n = (context.n ?? 0) + 1; return context.n";
      },
    });
    const spinner = Agent.for("late-spinner", { provider, executionTimeoutMs: 10_000, reuse: false });
    const others = Array.from({ length: 6 }, () => Agent.for("quick", { provider, reuse: false }));
    await Promise.all([spinner.warm(), ...others.map((agent) => agent.work())]);
    let spun = false;
    const spinning = spinner.work().then((outcome) => {
      spun = true;
      return outcome;
    });
    await waitFor(() => sandboxPool().busyProcesses === 1);
    await waitFor(() => helper.asked && sandboxPool().busyProcesses === 0);
    await waitFor(() => sandboxPool().busyProcesses === 1);
    const results = await Promise.all(others.map(async (agent) => [await agent.work(), await agent.work()]));
    expect(spun).toBe(false);
    for (const outcome of results.flat()) expect(outcome.ok).toBe(true);
    expect((await spinning).value).toBe("spun");
  });

  test("a program whose answer comes while another program computes after its own answer is not timed out", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1 });
    let asked = false;
    const slow = {
      description: "Answers after 300 ms.",
      inputSchema: { type: "object" },
      annotations: { readOnlyHint: true },
      execute: async () => {
        asked = true;
        await new Promise((resolve) => setTimeout(resolve, 300));
        return "pong";
      },
    };
    const provider = new ScriptedProvider({ programs: { "asker.work": "return await tools.slow({})", "hog.work": `await content("none"); ${SPIN(2_500)}`, warm: "return 1" } });
    const asker = Agent.for("asker", { provider, tools: { slow }, executionTimeoutMs: 1_000, reuse: false });
    const hog = Agent.for("hog", { provider, executionTimeoutMs: 5_000, reuse: false });
    await Promise.all([asker.warm(), hog.warm()]);
    // The asker's answer comes while the hog's continuation holds the one process for longer
    // than the asker's whole time limit (and its host deadline's grace).
    const asking = asker.work();
    await waitFor(() => asked);
    const [answered, hogged] = await Promise.all([asking, hog.work()]);
    expect(answered.errorMessage).toBeUndefined();
    expect(answered.value).toBe("pong");
    expect(hogged.errorMessage).toBeUndefined();
    expect(hogged.value).toBe("spun");
  });

  test("holds just past the busy grace, back to back, are not charged to a program waiting for its delegate", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1 });
    const { provider } = waitingOnHelper("victim", 100, SPIN(52));
    const victim = Agent.for("victim", { provider, executionTimeoutMs: 300, reuse: false });
    // Fewer agents than the sandbox process keeps isolates for, so no run waits for an isolate to be made.
    const hogs = Array.from({ length: 20 }, () => Agent.for("hog", { provider, executionTimeoutMs: 5_000, reuse: false }));
    await Promise.all([victim.warm(), ...hogs.map((hog) => hog.warm())]);
    const [asked, hogged] = await Promise.all([victim.work(), Promise.all(hogs.map(async (hog) => [await hog.work(), await hog.work()]))]);
    expect(asked!.errorMessage).toBeUndefined();
    expect(asked!.value).toBe("pong");
    for (const outcome of hogged.flat()) expect(outcome.errorMessage).toBeUndefined();
  });

  test("an isolate tidied at length after its program answered does not cost a program waiting for its delegate its deadline", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1 });
    // The hog's globals take most of its own time limit to make, and as long again to remove once it answered.
    const litter = "const g = globalThis; for (let i = 0; i < 450000; i++) g['v' + i] = i; return 'littered'";
    const { provider, helper } = waitingOnHelper("asker", 600, litter);
    const asker = Agent.for("asker", { provider, executionTimeoutMs: 1_000, reuse: false });
    const hog = Agent.for("hog", { provider, executionTimeoutMs: 5_000, reuse: false });
    await Promise.all([asker.warm(), hog.warm()]);
    const asking = asker.work();
    await waitFor(() => helper.asked);
    await new Promise((resolve) => setTimeout(resolve, 350));
    const [asked, hogged] = await Promise.all([asking, hog.work()]);
    expect(hogged.errorMessage).toBeUndefined();
    expect(hogged.value).toBe("littered");
    expect(asked.errorMessage).toBeUndefined();
    expect(asked.value).toBe("pong");
  });
});

describe("placement", () => {
  test("agents whose programs are sometimes long do not move back and forth between processes", async () => {
    configureSandbox({ processes: 2, maxProcesses: 4 });
    const provider = new ScriptedProvider({ programs: { long: SPIN(80), short: SPIN(5), warm: "return 1" } });
    const team = Array.from({ length: 8 }, () => Agent.for("alternating", { provider, reuse: false }));
    await Promise.all(team.map((agent) => agent.warm()));
    const movesBefore = sandboxPool().moves;
    const started = performance.now();
    const outcomes = await Promise.all(
      team.map(async (agent) => {
        const mine = [];
        for (let call = 0; call < 12; call += 1) mine.push(await agent.long(), await agent.short());
        return mine;
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    for (const outcome of outcomes.flat()) expect(outcome.errorMessage).toBeUndefined();
    // Another agent's earlier long program moves an agent at most once per minDwellMs.
    expect(sandboxPool().moves - movesBefore).toBeLessThanOrEqual(team.length * (Math.ceil(seconds / (poolTimings.minDwellMs / 1000)) + 1));
  });

  test("a process being killed takes no new runs: a call right after shutdown goes to a new process at once", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1 });
    const [agent] = agents(1, "restarted", "return 'pong'");
    await agent!.work();
    sandboxPool().shutdown();
    expect(sandboxPool().pids).toEqual([]);
    const resendsBefore = sandboxPool().resends;
    expect((await agent!.work()).value).toBe("pong");
    expect(sandboxPool().resends).toBe(resendsBefore);
  });
});

describe("stuck sandbox processes", () => {
  const hang = <T>(work: Promise<T>) => Promise.race([work, new Promise<"hung">((resolve) => setTimeout(() => resolve("hung"), 8_000))]);

  test("a process that never becomes ready is replaced, and the call runs on the next one", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1 });
    const saved = poolTimings.stuckAfterMs;
    poolTimings.stuckAfterMs = 1_000;
    try {
      const [agent] = agents(1, "first", "return 'ran'");
      const calling = hang(agent!.work());
      await waitFor(() => sandboxPool().pids.length === 1, 5_000);
      process.kill(sandboxPool().pids[0]!, "SIGSTOP");
      const outcome = await calling;
      expect(outcome).not.toBe("hung");
      expect((outcome as Awaited<ReturnType<AgentProxy["work"]>>).value).toBe("ran");
    } finally {
      poolTimings.stuckAfterMs = saved;
    }
  });

  test("a history sync to a process that stopped answering is given up, and the call runs on a new process", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1 });
    const saved = poolTimings.stuckAfterMs;
    // Long enough for the next process to start on a loaded machine (the same time bounds its start).
    poolTimings.stuckAfterMs = 2_000;
    try {
      const [agent] = agents(1, "long-memory", "return context.conversation_history.length");
      await agent!.warm();
      agent!.remember({ conversation_history: Array.from({ length: 2_500 }, (_, index) => syntheticRecord(index)) });
      process.kill(sandboxPool().pids[0]!, "SIGSTOP");
      const outcome = await hang(agent!.work());
      expect(outcome).not.toBe("hung");
      const { value, errorMessage } = outcome as Awaited<ReturnType<AgentProxy["work"]>>;
      expect(value, errorMessage).toBe(2_500);
    } finally {
      poolTimings.stuckAfterMs = saved;
    }
  });
});

describe("two runs of one agent in a sandbox process at once (the host's queue sends one at a time; the process does not rely on it)", () => {
  /** A run of `agentId` whose history mirror the host estimates at `mirrorMb`. */
  function run(agentId: string, callId: string, code: string, mirrorMb: number): Omit<RunRequestMessage, "type" | "runId"> {
    const prepared = prepareProgram(code, "m");
    if (!prepared.ok) throw new Error(prepared.message);
    return {
      agentId,
      memoryLimitMb: 64,
      mirrorMb,
      timeoutMs: 20_000,
      callTimeLeftMs: 30_000,
      historyEpoch: 1,
      historyStart: 0,
      payload: { callId, code: prepared.source, args: [], kwargs: {}, context: {}, depth: 0, maxDelegationDepth: 3, tools: ["hold"], fetch: false, knowledge: "[]", history: { start: 0, reset: true, records: [] } },
    };
  }

  /** A run of `agentId` held in its isolate, waiting for a tool's answer, once it waits; `answer` lets it end. */
  async function heldRun(agentId: string, callId: string): Promise<{ readonly report: Promise<RunReport>; readonly answer: (value: string) => void }> {
    let answer!: (value: string) => void;
    const answered = new Promise<string>((resolve) => (answer = resolve));
    let asked!: () => void;
    const waiting = new Promise<void>((resolve) => (asked = resolve));
    const report = sandboxPool().execute(run(agentId, callId, "return await tools.hold({})", 1), {
      onBridge: async () => {
        asked();
        return { ok: true, value: await answered } as BridgeAnswer;
      },
    });
    await waiting;
    return { report, answer };
  }

  test("a run that needs a larger isolate leaves the one still running in the old isolate to finish, counted busy until then", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1 });
    const pool = sandboxPool();
    const { report: first, answer } = await heldRun("same-agent", "c1");
    // Past the first isolate's mirror reserve: the second run gets an isolate of its own.
    const second = await pool.execute(run("same-agent", "c2", "return 2", 100), { onBridge: async () => ({ ok: true, value: null }) as BridgeAnswer });
    expect(second).toMatchObject({ kind: "settled", result: { status: "ok" } });
    expect((await pool.stats())[0]).toMatchObject({ isolates: 2, busyIsolates: 1 });
    answer("the first run's own answer");
    const firstReport = await first;
    expect(firstReport).toMatchObject({ kind: "settled", result: { status: "ok" } });
    expect(JSON.stringify(firstReport)).toContain("the first run's own answer");
    expect((await pool.stats())[0]).toMatchObject({ isolates: 1, busyIsolates: 0 });
  });

  test("a run cancelled while its isolate was being made leaves the isolate's count of runs as it was", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1 });
    const pool = sandboxPool();
    const noBridge = { onBridge: async () => ({ ok: true, value: null }) as BridgeAnswer };
    expect((await pool.execute(run("warm", "w", "return 1", 1), noBridge)).kind).toBe("settled");
    const controller = new AbortController();
    const cancelled = pool.execute(run("cold-agent", "c0", "return 0", 1), { ...noBridge, signal: controller.signal });
    controller.abort();
    expect(await cancelled).toMatchObject({ kind: "failed", errorType: "cancelled" });
    const { report: held, answer } = await heldRun("cold-agent", "c1");
    expect((await pool.stats())[0]).toMatchObject({ busyIsolates: 1 });
    answer("held");
    expect(JSON.stringify(await held)).toContain("held");
  });
});
