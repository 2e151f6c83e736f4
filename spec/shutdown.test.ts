import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test, vi } from "vitest";
import { Agent, PostgresStore, ScriptedProvider, SqliteStore, StoreError, configureSandbox } from "../src/index.ts";
import { sandboxPool } from "../src/sandbox/host/pool.ts";
import { poolTimings } from "../src/sandbox/host/timings.ts";
import { runToEnd } from "../test-support/run-to-end.ts";
import { waitFor } from "../test-support/wait-for.ts";

const provider = () =>
  new ScriptedProvider({ programs: { slow: [{ delayMs: 300, code: "context.n = (context.n ?? 0) + 1; return context.n" }], quick: "return 'quick'", long: [{ delayMs: 2_000, code: "return 1" }] } });

describe("Agent.close", () => {
  // First in this file, so no other open agent keeps the sandbox processes.
  test("lets calls in flight finish, then refuses new ones (not retriable, saying why), frees the agent, and ends the sandbox processes once none is open and they were idle a while", async () => {
    const idleMs = poolTimings.closedIdleMs;
    const config = sandboxPool().config;
    poolTimings.closedIdleMs = 500;
    // One process, so the next agent's home is the process that is there (not a second one the pool may start).
    configureSandbox({ processes: 1 });
    try {
      const agent = Agent.for("closing", { provider: provider() });
      await agent.quick();
      const pids = sandboxPool().pids;
      expect(pids.length).toBeGreaterThan(0);
      const inFlight = agent.slow();
      const closed = Agent.close(agent);
      const refused = await agent.quick();
      expect(refused).toMatchObject({ ok: false, errorType: "cancelled", retriable: false, errorMessage: "This agent was closed (Agent.close()): it takes no more calls. Make a new one with Agent.for() or Agent.open()." });
      expect((await inFlight).value).toBe(1);
      expect(await closed).toBe(true);
      // The refused call left no record: there is no agent to keep one.
      expect(Agent.history(agent).map((record) => record.method_name)).toEqual(["quick", "slow"]);
      // An agent made for the next request finds the processes still there: no process start.
      const starts = sandboxPool().starts;
      const next = Agent.for("per-request", { provider: provider() });
      expect((await next.quick()).value).toBe("quick");
      await Agent.close(next);
      expect(sandboxPool().starts).toBe(starts);
      expect(sandboxPool().pids).toEqual(pids);
      // Idle past the period with none open: they end.
      await waitFor(() => sandboxPool().pids.length === 0, 10_000);
      // A new agent starts them again.
      expect((await Agent.for("after", { provider: provider() }).quick()).value).toBe("quick");
      expect(sandboxPool().starts).toBeGreaterThan(starts);
    } finally {
      poolTimings.closedIdleMs = idleMs;
      configureSandbox(config);
    }
  });

  test("sandbox processes kept after the last Agent.close never keep the application alive", async () => {
    const script = `import { Agent, ScriptedProvider } from ${JSON.stringify(new URL("../src/index.ts", import.meta.url).href)};
const agent = Agent.for("exiting", { provider: new ScriptedProvider({ programs: { quick: "return 1" } }) });
const outcome = await agent.quick();
await Agent.close(agent);
console.log(JSON.stringify({ ok: outcome.ok, at: performance.now() }));`;
    const started = performance.now();
    const { code, stdout, stderr } = await runToEnd(process.execPath, ["--no-node-snapshot", "--input-type=module", "-e", script]);
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ ok: true });
    // It exited on its own, long before the processes' idle period (30 s) would have ended them.
    expect(performance.now() - started).toBeLessThan(poolTimings.closedIdleMs);
  }, 60_000);

  test("a closed agent refuses values: setting, remember() and delete throw a TypeError that says it was closed", async () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const agent = Agent.for("closing", { provider: provider() }) as any;
    agent.total = 1;
    await Agent.close(agent);
    const message = 'Cannot change "total" on agent "closing": it was closed (Agent.close()). Make a new one with Agent.for() or Agent.open().';
    expect(() => (agent.total = 2)).toThrow(new TypeError(message));
    expect(() => agent.remember({ total: 3 })).toThrow(new TypeError(message));
    expect(() => delete agent.total).toThrow(new TypeError(message));
    expect(agent.total).toBe(1);
  });

  test("waits at most timeoutMs for calls in flight, and closes the agent's children too", async () => {
    const agent = Agent.for("impatient", { provider: provider() });
    const child = agent.delegate("helper");
    const long = agent.long();
    expect(await Agent.close(agent, { timeoutMs: 50 })).toBe(false);
    expect((await child.quick()).errorType).toBe("cancelled");
    await long;
    await expect(Agent.close(agent, { timeout: 5 } as never)).rejects.toThrow('Unknown option "timeout" for Agent.close(). Did you mean "timeoutMs"? Valid options: timeoutMs.');
  });
});

describe("an agent per request", () => {
  test("a durable agent closed after one request and opened again for the next takes calls and carries on from the store", async () => {
    const store = new SqliteStore(join(mkdtempSync(join(tmpdir(), "improv-per-request-")), "agents.db"));
    const programs = { add: "context.value = (context.value ?? 0) + args[0]; return context.value" };
    const request = async (amount: number) => {
      const agent = await Agent.open("calculator", { provider: new ScriptedProvider({ programs }), store, id: "user-1" });
      try {
        return await agent.add(amount);
      } finally {
        await Agent.close(agent);
      }
    };
    expect((await request(2)).value).toBe(2);
    const again = await request(3);
    expect(again.errorMessage).toBeUndefined();
    expect(again.value).toBe(5);
    const reopened = await Agent.open("calculator", { provider: new ScriptedProvider({ programs }), store, id: "user-1" });
    expect(Agent.history(reopened).map((record) => record.method_name)).toEqual(["add", "add"]);
    await store.close();
  });
});

describe("store.close", () => {
  test("an agent whose store was closed refuses values: a StoreError that names the store and says what to do; the value stays as it was", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "improv-close-")), "improv.db");
    const store = new SqliteStore(path);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const agent = (await Agent.open("durable", { provider: provider(), store })) as any;
    agent.total = 1;
    await store.close();
    const message = `sqlite:${path}: cannot change "total" on agent "durable": the store was closed (store.close()). Open the store and the agent again (Agent.open()) to go on.`;
    expect(() => (agent.total = 2)).toThrow(new StoreError(`sqlite:${path}`, 'cannot change "total" on agent "durable": the store was closed (store.close()). Open the store and the agent again (Agent.open()) to go on.'));
    expect(() => agent.remember({ total: 3 })).toThrow(message);
    expect(() => delete agent.total).toThrow(message);
    expect(agent.total).toBe(1);
  });

  test("lets calls in flight finish and commit, then refuses its agents' new calls (not retriable, naming the store)", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "improv-close-")), "improv.db");
    const store = new SqliteStore(path);
    const agent = await Agent.open("durable", { provider: provider(), store });
    const inFlight = agent.slow();
    const closing = store.close();
    const refused = await Promise.all(Array.from({ length: 200 }, () => agent.quick()));
    for (const outcome of refused) expect(outcome).toMatchObject({ ok: false, errorType: "store", retriable: false, errorMessage: expect.stringContaining(`The store sqlite:${path} was closed (store.close())`) });
    expect((await inFlight).value).toBe(1);
    await closing;
    const reopened = new SqliteStore(path);
    try {
      const again = await Agent.open("durable", { provider: provider(), store: reopened });
      expect(Agent.history(again).map((record) => record.method_name)).toEqual(["slow"]);
      expect(again.runtimeContext.n).toBe(1);
    } finally {
      await reopened.close();
    }
  });
});

describe("store locations and options", () => {
  test("a URL of another kind is a TypeError naming the accepted forms, never a SQLite file of that name", () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-url-"));
    const cwd = process.cwd();
    process.chdir(directory);
    try {
      for (const location of ["postgress://app@db:5432/app", "pg://app@db/app", "mysql://root@db/app", "redis://cache:6379"]) {
        expect(() => new SqliteStore(location)).toThrow(/is not one improv opens\. Use a postgres:\/\/ or postgresql:\/\/ URL \(PostgresStore\), a sqlite: URL or a file path \(SqliteStore\)\./);
        expect(() => Agent.for("x", { store: location })).toThrow("is not one improv opens");
      }
      expect(readdirSync(directory)).toEqual([]);
    } finally {
      process.chdir(cwd);
    }
  });

  test("misspelled store options are a TypeError listing the valid ones", () => {
    expect(() => new SqliteStore(":memory:", { busyTimeout: 10 } as never)).toThrow('Unknown option "busyTimeout" for new SqliteStore(). Did you mean "busyTimeoutMs"? Valid options: durability, busyTimeoutMs, closeTimeoutMs.');
    expect(() => new SqliteStore(":memory:", { durabilty: "full" } as never)).toThrow('Unknown option "durabilty" for new SqliteStore().');
    expect(() => new PostgresStore("postgres://app@127.0.0.1:1/app", { maxConnection: 3 } as never)).toThrow('Unknown option "maxConnection" for new PostgresStore(). Did you mean "maxConnections"? Valid options: maxConnections, closeTimeoutMs.');
    expect(() => new SqliteStore(":memory:", { closeTimeoutMs: -1 })).toThrow('SqliteStore option "closeTimeoutMs" must be a whole number of milliseconds');
  });
});

describe("messages name the function that was called", () => {
  test("an unknown option given to delegate() or Agent.open() says so", async () => {
    const agent = Agent.for("namer", { provider: provider() });
    expect(() => agent.delegate("helper", { bogus: 1 } as never)).toThrow('Unknown option "bogus" for delegate(). Valid options:');
    await expect(Agent.open("namer", { bogus: 1 } as never)).rejects.toThrow('Unknown option "bogus" for Agent.open(). Valid options:');
    expect(() => Agent.for("namer", { bogus: 1 } as never)).toThrow('Unknown option "bogus" for Agent.for(). Valid options:');
  });
});

describe("verbose", () => {
  test("prints each program as it runs and each call's outcome to stderr", async () => {
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    try {
      const agent = Agent.for("talker", { provider: new ScriptedProvider({ programs: { add: ["return notDefined", "return args[0] + 1"] } }), verbose: true });
      const outcome = await agent.add(1);
      expect(outcome.value).toBe(2);
      const text = written.join("");
      expect(text).toContain(`improv ▸ talker.add #${outcome.callId.slice(0, 8)} runs a generated program (attempt 1):\n  │ return notDefined\n`);
      expect(text).toContain(`improv ▸ talker.add #${outcome.callId.slice(0, 8)} runs a repaired program (attempt 2):\n  │ return args[0] + 1\n`);
      expect(text).toMatch(new RegExp(`improv ◂ talker\\.add #${outcome.callId.slice(0, 8)} ok → 2 \\(\\d+ ms\\)\\n`));
    } finally {
      spy.mockRestore();
    }
  });
});
