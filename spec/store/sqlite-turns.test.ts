/**
 * Processes taking turns on one SQLite agent through its lease: real processes
 * (test-support/fixtures/turns.ts) on a temporary file, killed or stalled while they hold the lease,
 * or closed mid-call. Eight processes calling one agent at once: the durable agents' contract.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, test } from "vitest";
import { Agent, ScriptedProvider, type Tool } from "../../src/index.ts";
import { SqliteStore } from "../../src/store/sqlite-store.ts";
import { checkCounter, moveVersionOn, turnsProcess as startTurns, type TurnsProcess } from "../../test-support/turns.ts";

const freshPath = () => join(mkdtempSync(join(tmpdir(), "improv-turns-")), "improv.db");

/** The processes a test started: those still running when it ends (it failed midway) are killed. */
const started: TurnsProcess[] = [];
const turnsProcess = (...args: Parameters<typeof startTurns>): TurnsProcess => {
  const turns = startTurns(...args);
  started.push(turns);
  return turns;
};
afterEach(() => {
  for (const { child } of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

/** A counter's call that spins `args[0]` ms first. */
const HOLD = "const end = Date.now() + args[0]; while (Date.now() < end) {} context.n = (context.n ?? 0) + 1; context.log = [...(context.log ?? []), context.n]; return context.n";

/** Agent `id`'s lease as the file holds it (its owner is null when none is held). */
function leaseOf(location: string, id: string): { owner: string | null; expires: number } {
  const db = new DatabaseSync(location, { readOnly: true });
  try {
    return db.prepare("SELECT lease_owner AS owner, lease_expires AS expires FROM improv_agents WHERE id = ?").get(id) as { owner: string | null; expires: number };
  } finally {
    db.close();
  }
}

/**
 * Makes the application change agent `id` (its `x`) from this process every 20 ms until `held`
 * holds, calling `start` after the first change: a program started then meets a conflict at its
 * commit, and takes the lease.
 */
async function conflictUntil(location: string, id: string, held: () => boolean, start: () => void): Promise<void> {
  const store = new SqliteStore(location);
  const here = await Agent.open<{ x: number }>("counter", { store, id, provider: new ScriptedProvider({ programs: {} }), log: false });
  try {
    for (let write = 1; !held(); write += 1) {
      here.x = write;
      if (write === 1) start();
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (write > 1_000) throw new Error(`no lease on agent "${id}" after 1,000 conflicting writes`);
    }
  } finally {
    await Agent.close(here);
    await store.close();
  }
}

/** Waits until `check` holds, polling every 5 ms, for at most `ms`. */
async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`waited ${ms} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("processes take turns on one SQLite agent", () => {
  test("a process SIGKILLed while it holds an agent's lease: the others go on once it lapses, and nothing is lost", async () => {
    const path = freshPath();
    // Its program spins 600 ms; the application's writes make its commit meet a conflict, so it
    // takes the lease for the re-run, and is killed holding it (leases last 2.1 s unless renewed).
    const holder = turnsProcess(path, "held", 1, "hold", { holdMs: 600, executionTimeoutMs: 700, go: true });
    await holder.opened;
    await conflictUntil(path, "held", () => leaseOf(path, "held").owner !== null, () => holder.child.stdin!.write("go\n"));
    holder.child.kill("SIGKILL");
    expect(await holder.done).toMatchObject({ signal: "SIGKILL", finished: false });
    expect(holder.calls).toEqual([]);
    const dead = leaseOf(path, "held");
    expect(dead.expires).toBeGreaterThan(Date.now());
    const writers = [0, 1, 2].map(() => turnsProcess(path, "held", 10, "inc"));
    const exits = await Promise.all(writers.map((writer) => writer.done));
    expect(exits.map(({ code, finished, stderr }) => ({ code, finished, stderr }))).toEqual(writers.map(() => ({ code: 0, finished: true, stderr: "" })));
    expect(writers.flatMap((writer) => writer.calls.filter((line) => !line.ok))).toEqual([]);
    expect(writers.flatMap((writer) => writer.calls.map((line) => line.value)).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(Array.from({ length: 30 }, (_, index) => index + 1));
    // The killed call left nothing; the others' are all there, and the dead lease is gone.
    expect(await checkCounter(new SqliteStore(path), "held", 30)).toEqual([]);
    expect(leaseOf(path, "held").owner).toBeNull();
  }, 120_000);

  test("an agent closed while its call runs under the lease: the call commits, releasing the lease, and nothing is lost", async () => {
    const path = freshPath();
    const store = new SqliteStore(path);
    const agent = await Agent.open("counter", { store, id: "closing", provider: new ScriptedProvider({ programs: { hold: HOLD } }), log: false, executionTimeoutMs: 5_000 });
    let running!: ReturnType<typeof agent.hold>;
    await conflictUntil(path, "closing", () => leaseOf(path, "closing").owner !== null, () => (running = agent.hold(1_500)));
    // The lease would last well past the call (three times its executionTimeoutMs, renewed).
    expect(leaseOf(path, "closing").expires - Date.now()).toBeGreaterThan(5_000);
    const closed = Agent.close(agent, { timeoutMs: 100 });
    expect(await running).toMatchObject({ ok: true, value: 1 });
    expect(await closed).toBe(false);
    expect(leaseOf(path, "closing").owner).toBeNull();
    const writer = turnsProcess(path, "closing", 5, "inc");
    expect(await writer.done).toMatchObject({ code: 0, finished: true, stderr: "" });
    expect(writer.calls.map((line) => line.value)).toEqual([2, 3, 4, 5, 6]);
    expect(await checkCounter(new SqliteStore(path), "closing", 6)).toEqual([]);
    await store.close();
  }, 120_000);

  test("a store closed while a call holds the lease releases it: other processes go on without waiting for it to lapse", async () => {
    const path = freshPath();
    const store = new SqliteStore(path, { closeTimeoutMs: 100 });
    const agent = await Agent.open("counter", { store, id: "shut", provider: new ScriptedProvider({ programs: { hold: HOLD } }), log: false, executionTimeoutMs: 5_000 });
    let running!: ReturnType<typeof agent.hold>;
    await conflictUntil(path, "shut", () => leaseOf(path, "shut").owner !== null, () => (running = agent.hold(1_500)));
    expect(leaseOf(path, "shut").expires - Date.now()).toBeGreaterThan(5_000);
    await store.close();
    expect(leaseOf(path, "shut").owner).toBeNull();
    // Its commit came after the close: nothing of it was kept.
    expect(await running).toMatchObject({ ok: false, errorType: "store", errorMessage: expect.stringContaining("the store was closed") });
    const writer = turnsProcess(path, "shut", 5, "inc");
    expect(await writer.done).toMatchObject({ code: 0, finished: true, stderr: "" });
    expect(writer.calls.map((line) => line.value)).toEqual([1, 2, 3, 4, 5]);
    expect(await checkCounter(new SqliteStore(path), "shut", 5)).toEqual([]);
  }, 120_000);

  test("a lease that lapses while its owner still runs: another process takes it and commits, and the owner's call, paid for, runs again and ends ok", async () => {
    const path = freshPath();
    const release = join(path, "..", "release");
    // The owner's re-run blocks its own event loop (a tool that does not return) until released,
    // so it cannot renew its lease, which lapses 2 s after it was last renewed.
    const owner = turnsProcess(path, "lapsed", 1, "stall", { holdMs: 600, executionTimeoutMs: 700, releaseFile: release, go: true });
    const other = turnsProcess(path, "lapsed", 3, "inc", { go: true });
    await Promise.all([owner.opened, other.opened]);
    await conflictUntil(path, "lapsed", () => leaseOf(path, "lapsed").owner !== null, () => owner.child.stdin!.write("go\n")).catch((error: Error) => {
      throw new Error(`${error.message}; the owner printed ${JSON.stringify(owner.calls)}`);
    });
    const held = leaseOf(path, "lapsed");
    other.child.stdin!.write("go\n");
    // The other process waits for the owner's lease to lapse, then takes turns and commits.
    await until(() => other.calls.length === 3, 60_000, "the other process's calls");
    expect(other.calls.map((line) => [line.ok, line.value])).toEqual([
      [true, 1],
      [true, 2],
      [true, 3],
    ]);
    expect(owner.calls).toEqual([]);
    expect(leaseOf(path, "lapsed").owner).not.toBe(held.owner);
    writeFileSync(release, "");
    expect(await owner.done).toMatchObject({ code: 0, finished: true, stderr: "" });
    // Its commit met the other's: it took the lease again and ran the same program on the new context.
    expect(owner.calls).toEqual([{ ok: true, value: 4, asked: 1 }]);
    expect(await other.done).toMatchObject({ code: 0, finished: true, stderr: "" });
    expect(await checkCounter(new SqliteStore(path), "lapsed", 4)).toEqual([]);
    expect(leaseOf(path, "lapsed").owner).toBeNull();
  }, 120_000);

  test("a call whose turn does not come back within its callTimeoutMs ends timeout saying so, its changes not kept", async () => {
    const path = freshPath();
    const here = new SqliteStore(path);
    const there = new SqliteStore(path);
    const holder = await there.turn("waiting", { waitMs: 0, leaseMs: 60_000 });
    // Mid-run, another process (a second connection) commits to the agent and holds its lease.
    let interrupted = false;
    const meanwhile: Tool = {
      description: "Lets another process commit and take the agent's turn.",
      inputSchema: { type: "object" },
      annotations: { readOnlyHint: true },
      execute: async () => {
        if (interrupted) return "again";
        interrupted = true;
        const { version } = await there.open("waiting", "counter");
        await there.write("waiting", { context: { values: { x: 1 }, appKeys: ["x"] }, baseVersion: version });
        await holder.take?.(0);
        return "done";
      },
    };
    const programs = { step: "await tools.meanwhile({}); context.n = (context.n ?? 0) + 1; return context.n" };
    const agent = await Agent.open("counter", { store: here, id: "waiting", provider: new ScriptedProvider({ programs }), log: false, tools: { meanwhile }, callTimeoutMs: 1_500 });
    const outcome = await agent.step();
    expect(outcome).toMatchObject({ ok: false, errorType: "timeout" });
    expect(outcome.ok ? "" : outcome.errorMessage).toMatch(/^The call took longer than callTimeoutMs \(1500 ms\) waiting for this agent's turn: another process committed to the agent while its program ran \(1 run\), and the process holding the agent's turn did not end it in time, so the program's changes were not kept: .* ms waiting for other processes' turns on this agent\. Call again, or give the call more time\.$/);
    expect(holder.locked).toBe(true);
    await holder.end();
    // Its record is kept, without its change; the next call, in its turn, counts from the other's context.
    const stored = await there.open("waiting", "counter");
    expect(stored.records.map((text) => (JSON.parse(text) as { outcome_summary: { error_type?: string } }).outcome_summary.error_type)).toEqual(["timeout"]);
    expect(stored.context?.values).toEqual({ x: 1 });
    expect(await agent.step()).toMatchObject({ ok: true, value: 1 });
    await here.close();
    await there.close();
  }, 60_000);
  test("an agent forgotten and made afresh by another process: the call's commit meets a conflict once, and its second run, on the new agent's context, is kept", async () => {
    const path = freshPath();
    const here = new SqliteStore(path);
    const there = new SqliteStore(path);
    let runs = 0;
    const seen: Tool = { description: "Counts runs.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: () => ++runs };
    const provider = new ScriptedProvider({ programs: { inc: "await tools.seen({}); context.n = (context.n ?? 0) + 1; return context.n" } });
    const agent = await Agent.open<{ n: number }>("counter", { store: here, id: "again", provider, log: false, tools: { seen } });
    await agent.inc();
    await agent.inc();
    const before = await Agent.open("counter", { store: there, id: "again", provider, log: false, tools: { seen } });
    await Agent.forget(before);
    const afresh = await Agent.open("counter", { store: there, id: "again", provider, log: false, tools: { seen } });
    await afresh.inc();
    runs = 0;
    const outcome = await agent.inc();
    expect(outcome).toMatchObject({ ok: true, value: 2 });
    expect(runs).toBe(2);
    expect(Agent.history(agent)).toHaveLength(2);
    await here.close();
    await there.close();
  }, 60_000);
  test("a context that changes under every run, even while this process holds the lease: the call ends store after a bounded number of runs", async () => {
    const path = freshPath();
    const store = new SqliteStore(path);
    let runs = 0;
    // Another writer that ignores the lease: every run, the agent's version moves on under it.
    const bump: Tool = {
      description: "Moves the agent's version on.",
      inputSchema: { type: "object" },
      annotations: { readOnlyHint: true },
      execute: () => {
        runs += 1;
        moveVersionOn(path, "moving");
        return runs;
      },
    };
    const provider = new ScriptedProvider({ programs: { inc: "await tools.bump({}); context.n = (context.n ?? 0) + 1; return context.n" } });
    const agent = await Agent.open("counter", { store, id: "moving", provider, log: false, tools: { bump } });
    const outcome = await agent.inc();
    expect(outcome).toMatchObject({ ok: false, errorType: "store" });
    expect(outcome.ok ? "" : outcome.errorMessage).toMatch(/^The agent's context kept changing in other processes while this program ran \(8 runs\)/);
    expect(runs).toBe(8);
    await store.close();
  }, 60_000);
});
