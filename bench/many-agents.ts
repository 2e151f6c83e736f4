/**
 * Figure 15: many agents (DESIGN 17). Each part runs in a fresh process (`many-agents-child.ts`),
 * so no agent of another part holds an isolate or a home in the pool it measures.
 */
import ivm from "isolated-vm";
import { Agent, configureSandbox, type AgentProxy, type Provider } from "../src/index.ts";
import { sandboxPool } from "../src/sandbox/host/pool.ts";
import { rssOf } from "./memory.ts";
import { expectOk, figureInChild, measureInterleaved, percentile, type Summary } from "./stats.ts";

/** One kept program for every call: the provider is asked once per role (a program that reads its arguments is kept). */
const provider: Provider = { generate: async () => ({ code: "context.n = (context.n ?? 0) + 1; return args[0] + args[1]", model: "bench" }) };

export interface RoundRobinFigure {
  readonly agents: number;
  readonly calls: number;
  /** Per call, batches of 50 at once: the batch's time over its calls. @unit ms */
  readonly perCallMs: number;
  /** @unit ms */
  readonly p99BatchMs: number;
  readonly failed: number;
  /** Isolates the sandbox processes held at the end, and the resident size of those processes. */
  readonly isolates: number;
  readonly sandboxRssMb: number;
}

const BATCH = 50;

/** `agents` agents, one kept program, calls spread round-robin in batches of 50 at once: a warm-up round, then `calls` timed. */
async function roundRobin(agentCount: number, calls: number): Promise<RoundRobinFigure> {
  const agents: AgentProxy[] = Array.from({ length: agentCount }, (_, index) => Agent.for("tenant", { provider, log: false, id: `tenant-${index}` }));
  // The role's program is generated and kept by the first call.
  await expectOk(agents[0]!.add(1, 2));
  let next = 0;
  let failed = 0;
  const batch = async (): Promise<number> => {
    const started = performance.now();
    const outcomes = await Promise.all(Array.from({ length: BATCH }, () => agents[next++ % agentCount]!.add(next, 1)));
    failed += outcomes.filter((outcome) => !outcome.ok).length;
    return performance.now() - started;
  };
  for (let done = 0; done < agentCount; done += BATCH) await batch();
  failed = 0;
  const batches: number[] = [];
  for (let done = 0; done < calls; done += BATCH) batches.push(await batch());
  const stats = await sandboxPool().stats();
  batches.sort((a, b) => a - b);
  return {
    agents: agentCount,
    calls: batches.length * BATCH,
    perCallMs: batches.reduce((sum, ms) => sum + ms, 0) / (batches.length * BATCH),
    p99BatchMs: percentile(batches, 0.99),
    failed,
    isolates: stats.reduce((sum, entry) => sum + entry.isolates, 0),
    sandboxRssMb: stats.reduce((sum, entry) => sum + entry.rssMb, 0),
  };
}

export interface ColdFigure {
  /** A new agent's first call, its role's program kept, when no isolate is free to reuse: a new isolate, the history sent, the program compiled and run. */
  readonly coldCall: Summary;
  /** A bare isolated-vm isolate and context, made in this process. */
  readonly bareIsolate: Summary;
  /** `Agent.for` + one call + `Agent.close` with a new isolate for each (`reuseIsolates: false`). */
  readonly perRequestNewIsolate: Summary;
  /**
   * `Agent.for` + one call + `Agent.close` (the default: each new agent's first call takes the
   * isolate the one before left), a call on an agent that stays open, and a bare isolate and
   * context made beside them.
   */
  readonly perRequest: Summary;
  readonly openAgent: Summary;
  readonly bareIsolateBesideReused: Summary;
}

/**
 * Cold agents and agents made per request, each against its baseline, alternating: first with
 * isolates never reused (a new agent makes one), then with the default.
 */
async function cold(count: number): Promise<ColdFigure> {
  await expectOk(Agent.for("cold", { provider, log: false, id: "cold-first" }).add(1, 2));
  const open = Agent.for("cold", { provider, log: false, id: "cold-open" });
  let made = 0;
  const perRequest = async () => {
    const agent = Agent.for("cold", { provider, log: false, id: `request-${made++}` });
    await expectOk(agent.add(1, 2));
    await Agent.close(agent);
  };
  const isolates: ivm.Isolate[] = [];
  const bareIsolate = {
    task: () => {
      const isolate = new ivm.Isolate({ memoryLimit: 64 });
      isolate.createContextSync();
      isolates.push(isolate);
    },
  };
  configureSandbox({ reuseIsolates: false });
  const fresh = await measureInterleaved(
    {
      coldCall: { task: () => expectOk(Agent.for("cold", { provider, log: false, id: `cold-${made++}` }).add(1, 2)) },
      bareIsolate,
      perRequestNewIsolate: { task: perRequest },
    },
    count,
    Math.min(10, count),
  );
  configureSandbox({ reuseIsolates: true });
  const reused = await measureInterleaved({ perRequest: { task: perRequest }, openAgent: { task: () => expectOk(open.add(1, 2)) }, bareIsolateBesideReused: bareIsolate }, count, Math.min(10, count));
  for (const isolate of isolates) isolate.dispose();
  return { ...fresh, ...reused };
}

export interface IdleFigure {
  readonly agents: number;
  /** What the sandbox processes grew by, per idle agent isolate, once compacted. @unit bytes */
  readonly sandboxBytesPerIsolate: number;
  /** The same right after the calls, before the processes compacted them. @unit bytes */
  readonly uncompactedBytesPerIsolate: number;
  /** The processes' own estimate of what their idle isolates hold, per isolate. @unit bytes */
  readonly estimatedBytesPerIsolate: number;
}

/** What an idle agent's isolate costs the sandbox processes: `count` agents, one call each, then idle. */
async function idle(count: number): Promise<IdleFigure> {
  await expectOk(Agent.for("idle", { provider, log: false, id: "idle-first" }).add(1, 2));
  const rss = () => sandboxPool().pids.reduce((sum, pid) => sum + rssOf(pid), 0);
  const before = rss();
  const agents = Array.from({ length: count }, (_, index) => Agent.for("idle", { provider, log: false, id: `idle-${index}` }));
  for (let start = 0; start < count; start += BATCH) await Promise.all(agents.slice(start, start + BATCH).map((agent) => expectOk(agent.add(1, 2))));
  const uncompacted = rss();
  // The processes compact idle isolates once nothing runs for a moment, one per turn.
  let settled = uncompacted;
  for (let wait = 0; wait < 120; wait += 1) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = rss();
    if (Math.abs(now - settled) < 256 * 1024 && wait > 4) break;
    settled = now;
  }
  const stats = await sandboxPool().stats();
  const idleMb = stats.reduce((sum, entry) => sum + entry.idleIsolatesMb, 0);
  const isolates = stats.reduce((sum, entry) => sum + entry.isolates, 0);
  return {
    agents: count,
    sandboxBytesPerIsolate: Math.round((settled - before) / count),
    uncompactedBytesPerIsolate: Math.round((uncompacted - before) / count),
    estimatedBytesPerIsolate: Math.round((idleMb * 2 ** 20) / Math.max(1, isolates)),
  };
}

export interface ManyAgentsFigures {
  readonly roundRobin: RoundRobinFigure[];
  readonly cold: ColdFigure;
  readonly idle: IdleFigure;
}

function inChild<T>(flags: readonly string[], ...args: string[]): T {
  return figureInChild<T>("many-agents-child.ts", flags, args);
}

export function manyAgentsFigures(flags: readonly string[], options: { agents: readonly number[]; calls: number; cold: number; idle: number }): ManyAgentsFigures {
  return {
    roundRobin: options.agents.map((agents) => inChild<RoundRobinFigure>(flags, "round-robin", String(agents), String(options.calls))),
    cold: inChild(flags, "cold", String(options.cold)),
    idle: inChild(flags, "idle", String(options.idle)),
  };
}

/** The entry of `many-agents-child.ts`. */
export async function runManyAgentsFigure(args: readonly string[]): Promise<unknown> {
  const [figure, first, second] = args;
  switch (figure) {
    case "round-robin":
      return roundRobin(Number(first), Number(second));
    case "cold":
      return cold(Number(first));
    default:
      return idle(Number(first));
  }
}
