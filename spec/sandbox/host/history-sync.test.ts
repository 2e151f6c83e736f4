/**
 * A large history goes to the sandbox process in several sync chunks ahead of the run. The
 * agent's isolate is kept from its first chunk until its run arrives, whatever other agents
 * need meanwhile; the host starts a sync again at most once, and never past the call's time.
 */
import { afterEach, describe, expect, test, vi } from "vitest";
import { Agent, ScriptedProvider, configureSandbox, type AgentProxy } from "../../../src/index.ts";
import { sandboxPool } from "../../../src/sandbox/host/pool.ts";
import { poolTimings } from "../../../src/sandbox/host/timings.ts";
import { MIRROR_CHUNK_RECORDS } from "../../../src/sandbox/protocol.ts";
import { syntheticRecord } from "../../../test-support/records.ts";
import { waitFor } from "../../../test-support/wait-for.ts";

const programs = {
  warm: "return 1",
  remembered: "return context.conversation_history.length",
  count: "context.n = (context.n ?? 0) + 1; return context.n",
};

function agent(role: string, options: Record<string, unknown> = {}): AgentProxy {
  return Agent.for(role, { provider: new ScriptedProvider({ programs }), reuse: false, ...options });
}

function longHistory(records: number): unknown[] {
  return Array.from({ length: records }, (_, index) => syntheticRecord(index));
}

afterEach(() => {
  vi.restoreAllMocks();
  sandboxPool().shutdown();
});

describe("large history syncs", () => {
  test("under isolate-cache pressure from many agents, a chunked sync is never dropped part-way: each chunk goes once", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1, isolateCacheMb: 8 });
    const records = 4 * MIRROR_CHUNK_RECORDS + 500;
    // Chunks at 0, 1000, 2000 and 3000; the run carries the last 500 records.
    const chunksNeeded = Math.ceil((records - MIRROR_CHUNK_RECORDS) / MIRROR_CHUNK_RECORDS);
    const big = agent("long-memory");
    await big.warm();
    big.remember({ conversation_history: longHistory(records) });
    const pressing = Array.from({ length: 30 }, (_, index) => agent(`pressing-${index}`));
    await Promise.all(pressing.map((each) => each.warm()));
    const pool = sandboxPool();
    const syncs = vi.spyOn(pool, "sync");

    let settled = false;
    const calling = big.remembered().finally(() => {
      settled = true;
    });
    // Other agents keep making isolates (each one checks the small budget) until the call is
    // answered, or the sync has plainly started over and over (then the pressure stops, so the
    // test ends either way).
    while (!settled && syncs.mock.calls.length <= 3 * chunksNeeded) {
      await Promise.all(pressing.map((each) => each.count()));
    }
    const outcome = await calling;
    expect(outcome.errorMessage).toBeUndefined();
    expect(outcome.value).toBe(records);
    expect(syncs.mock.calls.map(([request]) => request.historyStart)).toEqual(Array.from({ length: chunksNeeded }, (_, index) => index * MIRROR_CHUNK_RECORDS));
  });

  test("a sync that cannot finish within the call's time ends the call timeout, saying why", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1 });
    const big = agent("long-memory", { callTimeoutMs: 2_000 });
    await big.warm();
    big.remember({ conversation_history: longHistory(2_500) });
    // The process stops answering: only the call's deadline (or, much later, the stuck check) ends the wait.
    process.kill(sandboxPool().pids[0]!, "SIGSTOP");
    const outcome = await big.remembered();
    expect(outcome.errorType).toBe("timeout");
    expect(outcome.errorMessage).toMatch(/^The call ran past its callTimeoutMs while the agent's history \(2500 records\) was sent to the sandbox; the program did not run: /);
  });

  test("a sync lost twice is not started a third time: the call ends retriable, saying why", async () => {
    configureSandbox({ processes: 1, maxProcesses: 1 });
    const saved = poolTimings.stuckAfterMs;
    poolTimings.stuckAfterMs = 1_000;
    try {
      const big = agent("long-memory");
      await big.warm();
      big.remember({ conversation_history: longHistory(2_500) });
      const first = sandboxPool().pids[0]!;
      process.kill(first, "SIGSTOP");
      const calling = big.remembered();
      // The stopped process is replaced once it leaves the first chunk unanswered; its
      // replacement is stopped too, before it can take the history.
      await waitFor(() => sandboxPool().pids.some((pid) => pid !== first), 10_000);
      process.kill(sandboxPool().pids.find((pid) => pid !== first)!, "SIGSTOP");
      const outcome = await calling;
      expect(outcome).toMatchObject({ errorType: "execution", retriable: true });
      expect(outcome.errorMessage).toBe("The sandbox lost the agent's history (2500 records) twice while it was being sent, and it was not sent again. Call again.");
    } finally {
      poolTimings.stuckAfterMs = saved;
    }
  });
});
