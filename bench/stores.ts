/** Figure 7: what a store costs a call, reopening a long history, several processes on one agent, and many agents over many processes. */
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Agent, PostgresStore, ScriptedProvider, SqliteStore, type Store } from "../src/index.ts";
import { postgresUnavailable, startPostgres, type PostgresServer } from "../test-support/postgres.ts";
import pg from "pg";
import { checkFleet, runFleet, runOnOneAgent, type FleetRun } from "../test-support/fleet.ts";
import { syntheticRecord } from "../test-support/records.ts";
import { measureInterleaved, type Subject, type Summary } from "./stats.ts";

const COUNTER = fileURLToPath(new URL("../test-support/fixtures/counter.ts", import.meta.url));
const freshFile = () => join(mkdtempSync(join(tmpdir(), "improv-bench-store-")), "improv.db");
const provider = () => new ScriptedProvider({ programs: { add: "return args[0] + args[1]", inc: "context.n = (context.n ?? 0) + 1; return context.n" } });

export interface StoreFigures {
  /** Per-call p50 by store, measured round-robin against the memory-only call. */
  readonly calls: Record<string, Summary>;
  /** Opening an agent that holds `records` records, then its first call, by store. */
  readonly reopen: { readonly records: number; readonly byStore: Record<string, { openMs: number; firstCallMs: number }> };
  /** Calls per second on one agent from one process, and from two at once, by store. */
  readonly throughput: Record<string, { readonly oneProcess: number; readonly twoProcesses: number; readonly callsEach: number }>;
  /** Statements a reused call on an up-to-date PostgreSQL agent sends, averaged over `calls` calls (absent without a server). */
  readonly postgresStatements?: { readonly calls: number; readonly perCall: number };
  /** 64 agents called at once from one process and spread over four, by store; `problems` lists lost or duplicated records (none expected). */
  readonly fleet: Record<string, { readonly one: FleetRun; readonly four: FleetRun; readonly problems: readonly string[] }>;
  /** {@link ONE_AGENT_PROCESSES} processes calling one agent at once, by store; `problems` lists failed calls and lost or duplicated records (none expected). */
  readonly oneAgent: Record<string, { readonly run: FleetRun; readonly problems: readonly string[] }>;
  /** Why PostgreSQL was left out, if it was. */
  readonly postgres: string;
}

/** Every store figure; PostgreSQL's only where a server can be started. */
export async function storeFigures(options: { count: number; warmup: number; records: number; callsEach: number; fleetCalls: number; oneAgentCalls: number }): Promise<StoreFigures> {
  const unavailable = postgresUnavailable();
  const server: PostgresServer | undefined = unavailable === undefined ? await startPostgres() : undefined;
  const stores: Store[] = [];
  const keep = <T extends Store>(store: T): T => {
    stores.push(store);
    return store;
  };
  try {
    const locations: Record<string, () => Promise<string>> = { sqlite: async () => freshFile() };
    if (server !== undefined) locations.postgres = () => server.database(`bench_${Math.random().toString(36).slice(2)}`);
    const open = (name: string, location: string): Store => keep(name === "postgres" ? new PostgresStore(location) : new SqliteStore(location, name === "sqlite-full" ? { durability: "full" } : {}));

    const subjects: Record<string, Subject> = {};
    const memoryAgent = Agent.for("bench", { provider: provider(), log: false });
    subjects.memory = { task: () => memoryAgent.add(1, 2) };
    for (const name of ["sqlite", "sqlite-full", ...(server ? ["postgres"] : [])]) {
      const agent = await Agent.open("bench", { provider: provider(), log: false, store: open(name, await (locations[name === "sqlite-full" ? "sqlite" : name] as () => Promise<string>)()) });
      subjects[name] = { task: () => agent.add(1, 2) };
    }
    const calls = await measureInterleaved(subjects, options.count, options.warmup);
    const postgresStatements = subjects.postgres === undefined ? undefined : await statementsPerCall(subjects.postgres, 200);

    const reopenBy: Record<string, { openMs: number; firstCallMs: number }> = {};
    for (const name of Object.keys(locations)) {
      const location = await (locations[name] as () => Promise<string>)();
      const writer = open(name, location);
      await writer.open("long", "bench");
      await writer.write("long", { replaceHistory: Array.from({ length: options.records }, (_, index) => JSON.stringify(syntheticRecord(index))) });
      const started = performance.now();
      const agent = await Agent.open("bench", { provider: provider(), log: false, store: open(name, location), id: "long" });
      const opened = performance.now();
      await agent.add(1, 2);
      reopenBy[name] = { openMs: opened - started, firstCallMs: performance.now() - opened };
    }

    const throughput: StoreFigures["throughput"] = {};
    for (const name of Object.keys(locations)) {
      const location = await (locations[name] as () => Promise<string>)();
      await open(name, location).open("shared", "counter");
      // Process start-up measured apart and taken off, so the figure is the calls' own rate.
      const one = (await timeProcesses(location, 1, options.callsEach * 2)) - (await timeProcesses(location, 1, 0));
      const two = (await timeProcesses(location, 2, options.callsEach)) - (await timeProcesses(location, 2, 0));
      throughput[name] = { oneProcess: (options.callsEach * 2) / one, twoProcesses: (options.callsEach * 2) / two, callsEach: options.callsEach };
    }
    const fleet: StoreFigures["fleet"] = {};
    for (const name of Object.keys(locations)) {
      const runs = [];
      for (const processes of [1, 4]) {
        const location = await (locations[name] as () => Promise<string>)();
        const run = await runFleet(location, processes, FLEET_AGENTS, options.fleetCalls);
        runs.push({ run, problems: await checkFleet(open(name, location), FLEET_AGENTS, options.fleetCalls) });
      }
      const [one, four] = runs as [(typeof runs)[number], (typeof runs)[number]];
      fleet[name] = { one: one.run, four: four.run, problems: [...one.problems, ...four.problems, ...[one.run, four.run].flatMap((run) => run.firstErrors)] };
    }
    const oneAgent: StoreFigures["oneAgent"] = {};
    for (const name of Object.keys(locations)) {
      const location = await (locations[name] as () => Promise<string>)();
      const run = await runOnOneAgent(location, ONE_AGENT_PROCESSES, options.oneAgentCalls);
      oneAgent[name] = { run, problems: [...run.firstErrors, ...(await checkFleet(open(name, location), 1, ONE_AGENT_PROCESSES * options.oneAgentCalls))] };
    }
    return {
      calls,
      reopen: { records: options.records, byStore: reopenBy },
      throughput,
      ...(postgresStatements === undefined ? {} : { postgresStatements }),
      fleet,
      oneAgent,
      postgres: unavailable ?? "measured on a throwaway local server (loopback)",
    };
  } finally {
    await Promise.all(stores.map((store) => store.close().catch(() => undefined)));
    server?.stop();
  }
}

/** Agents in the many-agents figure. */
const FLEET_AGENTS = 64;
/** Processes calling one agent at once in the contention figure. */
export const ONE_AGENT_PROCESSES = 8;

/** Statements the `pg` client sends per call of `subject`, counted at the client over `calls` calls. */
async function statementsPerCall(subject: Subject, calls: number): Promise<{ calls: number; perCall: number }> {
  let sent = 0;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    sent += 1;
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  try {
    for (let call = 0; call < calls; call += 1) await subject.task();
  } finally {
    pg.Client.prototype.query = query;
  }
  return { calls, perCall: sent / calls };
}

/** Seconds for `processes` counter processes, started together, making `calls` calls each on one agent. */
async function timeProcesses(location: string, processes: number, calls: number): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: processes }, () => {
      const child = spawn(process.execPath, [COUNTER, location, "shared", String(calls)], { stdio: ["ignore", "pipe", "inherit"] });
      return new Promise<void>((resolve, reject) => child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`counter process exited ${code}`)))));
    }),
  );
  return (performance.now() - started) / 1000;
}
