/**
 * Many durable agents over many processes sharing one store: `runFleet` starts the processes
 * (test-support/fixtures/fleet.ts), each calling its own share of the agents, and gathers their
 * calls; `runOnOneAgent` has every process call the same agent; `checkFleet` reads the store
 * afterwards and says what is wrong with it (lost or duplicated records, a count the agents'
 * context does not match), if anything.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Store } from "../src/index.ts";

const FLEET = fileURLToPath(new URL("./fixtures/fleet.ts", import.meta.url));

export interface FleetRun {
  readonly processes: number;
  readonly agents: number;
  readonly calls: number;
  readonly errors: number;
  readonly firstErrors: readonly string[];
  /** From the first process's first call to the last process's last outcome (each process's own span; the longest). @unit s */
  readonly seconds: number;
  readonly callsPerSecond: number;
  /** Call durations. @unit ms */
  readonly p50: number;
  readonly p99: number;
}

/** Runs `agents` counter agents (ids `fleet-0` …), split evenly over `processes` processes, `calls` calls each. */
export async function runFleet(location: string, processes: number, agents: number, calls: number): Promise<FleetRun> {
  const share = Math.ceil(agents / processes);
  const running = Array.from({ length: processes }, (_, index) => {
    const first = index * share;
    return fleetProcess(location, first, Math.max(0, Math.min(share, agents - first)), calls);
  });
  return gather(processes, agents, running);
}

/**
 * Has `processes` processes call one counter agent (`fleet-0`) at once, `calls` calls each, one
 * after another. Each process's first call (which starts its sandbox process and the agent's
 * isolate, and asks the provider) counts in calls/s but not in p50 and p99.
 */
export async function runOnOneAgent(location: string, processes: number, calls: number): Promise<FleetRun> {
  return gather(processes, 1, Array.from({ length: processes }, () => fleetProcess(location, 0, 1, calls)), 1);
}

interface ProcessRun {
  readonly calls: number;
  readonly errors: number;
  readonly firstErrors: readonly string[];
  readonly seconds: number;
  readonly durations: readonly number[];
}

/** One fleet process, calling agents `fleet-<first>` … (`count` of them) `calls` times each. */
function fleetProcess(location: string, first: number, count: number, calls: number): Promise<ProcessRun> {
  const child = spawn(process.execPath, ["--no-node-snapshot", FLEET, location, String(first), String(count), String(calls)], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise<ProcessRun>((resolve, reject) =>
    child.on("close", (code) => (code === 0 ? resolve(JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as ProcessRun) : reject(new Error(`fleet process exited ${code}: ${stderr}`)))),
  );
}

/** The processes' calls, taken together; the first `untimed` of each process's calls are left out of p50 and p99. */
async function gather(processes: number, agents: number, running: readonly Promise<ProcessRun>[], untimed = 0): Promise<FleetRun> {
  const results = await Promise.all(running);
  const durations = results.flatMap((result) => result.durations.slice(untimed)).sort((a, b) => a - b);
  const seconds = Math.max(...results.map((result) => result.seconds));
  const total = results.reduce((sum, result) => sum + result.calls, 0);
  const at = (q: number) => durations[Math.min(durations.length - 1, Math.floor(q * durations.length))] ?? Number.NaN;
  return {
    processes,
    agents,
    calls: total,
    errors: results.reduce((sum, result) => sum + result.errors, 0),
    firstErrors: results.flatMap((result) => result.firstErrors).slice(0, 3),
    seconds,
    callsPerSecond: total / seconds,
    p50: at(0.5),
    p99: at(0.99),
  };
}

/** What is wrong with the fleet's agents in `store` after `calls` calls each (empty: nothing). */
export async function checkFleet(store: Store, agents: number, calls: number): Promise<string[]> {
  const problems: string[] = [];
  for (let index = 0; index < agents; index += 1) {
    const id = `fleet-${index}`;
    const records = (await store.records(id)).map((text) => JSON.parse(text) as { call_id: string; outcome_summary: { ok: boolean } });
    const opened = await store.open(id, "counter");
    if (records.length !== calls) problems.push(`${id}: ${records.length} records, not ${calls}`);
    if (new Set(records.map((record) => record.call_id)).size !== records.length) problems.push(`${id}: a call id is recorded twice`);
    if (opened.length !== records.length) problems.push(`${id}: the agent says ${opened.length} records, the store holds ${records.length}`);
    if (opened.context?.values.n !== calls) problems.push(`${id}: context.n is ${String(opened.context?.values.n)}, not ${calls}`);
  }
  return problems;
}
