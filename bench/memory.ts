/** Resident memory of the host and its sandbox process together. */
import { readFileSync } from "node:fs";
import { Agent, type AgentProxy, type HistoryRecord, type Provider } from "../src/index.ts";
import { sandboxPool } from "../src/sandbox/host/pool.ts";

/** Resident set of a process, from /proc (0 when it is gone). */
export function rssOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Host RSS and sandbox RSS, after full garbage collections in the host. */
export async function residentBytes(): Promise<{ host: number; sandbox: number; total: number }> {
  for (let i = 0; i < 3; i += 1) {
    (globalThis as { gc?: () => void }).gc?.();
    await new Promise((resolve) => setImmediate(resolve));
  }
  const host = process.memoryUsage.rss();
  const sandbox = sandboxPool().pids.reduce((sum, pid) => sum + rssOf(pid), 0);
  return { host, sandbox, total: host + sandbox };
}

/**
 * A provider that keeps nothing: ScriptedProvider records every request in `calls` (by design,
 * for tests), which would be counted here as if it were improv's own memory.
 */
const provider = (): Provider => ({ generate: async () => ({ code: "return args[0] + args[1]", model: "bench" }) });

/**
 * Bytes per live agent that made one call, beyond the process baseline (sandbox warm): in all,
 * in the host, and in the sandbox processes, which keep agents' isolates between calls within
 * `configureSandbox({ isolateCacheMb })` (figure 15 measures an idle isolate on its own).
 */
export async function perLiveAgent(count: number): Promise<{ agents: number; bytesPerAgent: number; hostBytesPerAgent: number; sandboxBytesPerAgent: number }> {
  // One warm agent per sandbox process the pool keeps, so every process has started before the baseline.
  for (let index = 0; index < sandboxPool().config.processes; index += 1) await Agent.for(`warm-${index}`, { provider: provider() }).add(1, 2);
  const before = await residentBytes();
  const agents: AgentProxy[] = [];
  for (let i = 0; i < count; i += 1) {
    const agent = Agent.for(`agent-${i}`, { provider: provider() });
    await agent.add(i, 1);
    agents.push(agent);
  }
  const after = await residentBytes();
  if (agents.length !== count) throw new Error("agents were lost");
  const per = (key: "host" | "sandbox" | "total") => Math.round((after[key] - before[key]) / count);
  return { agents: count, bytesPerAgent: per("total"), hostBytesPerAgent: per("host"), sandboxBytesPerAgent: per("sandbox") };
}

export interface RecordMemory {
  readonly records: number;
  readonly bytesPerRecord: number;
  readonly hostBytesPerRecord: number;
  readonly sandboxBytesPerRecord: number;
}

/** Bytes per history record held by one agent (host copy and sandbox mirror), after a call synced it. */
export async function perRecord(count: number, makeRecord: (index: number) => HistoryRecord): Promise<RecordMemory> {
  const agent = Agent.for("holder", { provider: provider() });
  await agent.add(1, 2);
  // The application's own copy of the records is built before the baseline and kept alive
  // until after the last reading, so only improv's cost is counted.
  const input = Array.from({ length: count }, (_, i) => makeRecord(i));
  const before = await residentBytes();
  agent.remember({ conversation_history: input });
  await agent.add(1, 2);
  const after = await residentBytes();
  if (Agent.history(agent).length !== count + 1 || input.length !== count) throw new Error("records were lost");
  const per = (key: "host" | "sandbox" | "total") => Math.round((after[key] - before[key]) / count);
  return { records: count, bytesPerRecord: per("total"), hostBytesPerRecord: per("host"), sandboxBytesPerRecord: per("sandbox") };
}

