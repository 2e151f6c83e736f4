/**
 * Figure 9: the sandbox pool. Each figure runs in a fresh process (`pool-child.ts`), so no
 * agent of another figure holds a home in the pool it measures.
 */
import { Agent, configureSandbox, type AgentProxy, type Provider } from "../src/index.ts";
import { sandboxPool } from "../src/sandbox/host/pool.ts";
import { rssOf } from "./memory.ts";
import { figureInChild, percentile } from "./stats.ts";

/** A provider that keeps nothing (ScriptedProvider keeps every request, which a soak would count). */
const provider: Provider = {
  generate: async (request) => ({ code: request.method === "spin" ? "const end = Date.now() + 2000; while (Date.now() < end) {} return 'spun'" : "context.n = (context.n ?? 0) + 1; return args[0] + args[1]", model: "bench" }),
};

export interface LoadFigure {
  readonly calls: number;
  readonly seconds: number;
  readonly callsPerSecond: number;
  /** @unit ms */
  readonly p50: number;
  /** @unit ms */
  readonly p99: number;
  readonly failed: number;
  readonly processes: number;
}

/** `agents` agents making `callsEach` short calls at once, each agent's calls one after another. */
async function shortCalls(agents: AgentProxy[], callsEach: number): Promise<Omit<LoadFigure, "processes">> {
  for (const agent of agents) await agent.add(1, 2);
  const latencies: number[] = [];
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    agents.map(async (agent) => {
      for (let call = 0; call < callsEach; call += 1) {
        const begun = performance.now();
        const outcome = await agent.add(call, 1);
        latencies.push(performance.now() - begun);
        if (!outcome.ok) failed += 1;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { calls: latencies.length, seconds, callsPerSecond: latencies.length / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), failed };
}

/** Fairness: 32 agents' short calls, with or without 2 agents computing 2 s at a time throughout. */
export async function fairness(spinners: number, callsEach: number): Promise<LoadFigure & { spins: number }> {
  const agents = Array.from({ length: 32 }, (_, index) => Agent.for(`short-${index}`, { provider, log: false }));
  const spinning = Array.from({ length: spinners }, (_, index) => Agent.for(`spinner-${index}`, { provider, log: false, executionTimeoutMs: 5_000 }));
  let running = true;
  let spins = 0;
  const loops = spinning.map(async (agent) => {
    while (running) {
      await agent.spin();
      spins += 1;
    }
  });
  // Let the spinners take hold of their processes first.
  if (spinners > 0) await new Promise((resolve) => setTimeout(resolve, 200));
  const figure = await shortCalls(agents, callsEach);
  running = false;
  await Promise.all(loops);
  return { ...figure, spins, processes: sandboxPool().starts };
}

/** Scaling: 8 agents calling at once. */
export async function scaling(callsEach: number): Promise<LoadFigure> {
  const agents = Array.from({ length: 8 }, (_, index) => Agent.for(`scale-${index}`, { provider, log: false }));
  return { ...(await shortCalls(agents, callsEach)), processes: sandboxPool().starts };
}

export interface SoakFigure {
  readonly calls: number;
  /**
   * Growth per record from a fifth of the way to the end: the slope of a least-squares line
   * through resident sizes sampled every fiftieth of the soak, so that no single reading (one
   * taken just before or after a heap grows, say) decides the figure.
   */
  readonly hostBytesPerRecord: number;
  readonly sandboxBytesPerRecord: number;
  /** The same over the second half of the soak: the steady state. */
  readonly steadyHostBytesPerRecord: number;
  readonly steadySandboxBytesPerRecord: number;
  /** Every fifth sample (each tenth of the soak). */
  readonly checkpoints: Sample[];
}

interface Sample {
  readonly calls: number;
  readonly hostBytes: number;
  readonly sandboxBytes: number;
}

/** Slope of the least-squares line through the samples' `key` against their call counts. */
function slope(samples: readonly Sample[], key: "hostBytes" | "sandboxBytes"): number {
  const meanX = samples.reduce((sum, sample) => sum + sample.calls, 0) / samples.length;
  const meanY = samples.reduce((sum, sample) => sum + sample[key], 0) / samples.length;
  let covariance = 0;
  let variance = 0;
  for (const sample of samples) {
    covariance += (sample.calls - meanX) * (sample[key] - meanY);
    variance += (sample.calls - meanX) ** 2;
  }
  return Math.round(covariance / variance);
}

/** Memory over a soak of calls on one agent, with a provider that keeps nothing. */
export async function soak(calls: number): Promise<SoakFigure> {
  const agent = Agent.for("soak", { provider, log: false });
  const samples: Sample[] = [];
  const every = calls / 50;
  for (let call = 1; call <= calls; call += 1) {
    await agent.add(call, 1);
    if (call % every === 0) {
      for (let i = 0; i < 3; i += 1) {
        (globalThis as { gc?: () => void }).gc?.();
        await new Promise((resolve) => setImmediate(resolve));
      }
      samples.push({ calls: call, hostBytes: process.memoryUsage.rss(), sandboxBytes: sandboxPool().pids.reduce((sum, pid) => sum + rssOf(pid), 0) });
    }
  }
  const from = (fraction: number) => samples.filter((sample) => sample.calls >= calls * fraction);
  return {
    calls,
    hostBytesPerRecord: slope(from(1 / 5), "hostBytes"),
    sandboxBytesPerRecord: slope(from(1 / 5), "sandboxBytes"),
    steadyHostBytesPerRecord: slope(from(1 / 2), "hostBytes"),
    steadySandboxBytesPerRecord: slope(from(1 / 2), "sandboxBytes"),
    checkpoints: samples.filter((_, index) => index % 5 === 4),
  };
}

export interface PoolFigures {
  readonly fairness: { readonly without: LoadFigure; readonly withSpinners: LoadFigure & { spins: number } };
  readonly scaling: { readonly oneProcess: LoadFigure; readonly pool: LoadFigure };
  readonly soak: SoakFigure;
  readonly defaultProcesses: number;
}

/** Runs one figure in a fresh process with the bench's flags. */
function inChild<T>(flags: readonly string[], ...args: string[]): T {
  return figureInChild<T>("pool-child.ts", flags, args);
}

export function poolFigures(flags: readonly string[], options: { callsEach: number; scalingCalls: number; soakCalls: number }): PoolFigures {
  return {
    fairness: {
      without: inChild(flags, "fairness", "0", String(options.callsEach)),
      withSpinners: inChild(flags, "fairness", "2", String(options.callsEach)),
    },
    scaling: { oneProcess: inChild(flags, "scaling", String(options.scalingCalls), "1"), pool: inChild(flags, "scaling", String(options.scalingCalls)) },
    soak: inChild(flags, "soak", String(options.soakCalls)),
    defaultProcesses: inChild<{ processes: number }>(flags, "config").processes,
  };
}

/** The entry of `pool-child.ts`. */
export async function runPoolFigure(args: readonly string[]): Promise<unknown> {
  const [figure, first, second] = args;
  switch (figure) {
    case "fairness":
      return fairness(Number(first), Number(second));
    case "scaling":
      if (second !== undefined) configureSandbox({ processes: Number(second), maxProcesses: Number(second) });
      return scaling(Number(first));
    case "soak":
      return soak(Number(first));
    default:
      return sandboxPool().config;
  }
}
