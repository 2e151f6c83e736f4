import { availableParallelism, totalmem } from "node:os";
import { readEnv } from "../../shared/index.ts";
import { nextRunId, type RunReport, type RunRequestMessage, type SandboxStats, type SyncRequestMessage } from "../protocol.ts";
import { PendingRun, type RunHooks } from "./pending-run.ts";
import { SandboxProcess } from "./sandbox-process.ts";
import { poolTimings } from "./timings.ts";

export type { RunHooks } from "./pending-run.ts";

/** How many sandbox processes run programs, and how much memory they keep agents' isolates in. */
export interface SandboxConfig {
  /** Processes kept for the agents (started as agents need them). Default: available parallelism, at most 4. */
  readonly processes: number;
  /** Most processes at once: the pool grows past `processes` only while every process is busy. Default 8. */
  readonly maxProcesses: number;
  /**
   * Memory the sandbox processes keep the isolates of agents between calls in, shared equally
   * by the `processes` (each process beyond them gets a share too). Past its share, a process
   * disposes the least recently used idle isolates; a busy one never is. An agent whose isolate
   * was disposed gets a new one at its next call (its history sent again). An idle isolate holds
   * about 1.3 MiB once its process compacted it (when nothing ran for a second), 2.5 to 4 MiB while
   * in use, plus its history mirror. Default: a quarter of the machine's memory (of a
   * container's limit, when lower); at least 4 MiB for each of the `processes`, which a
   * `configureSandbox` that gives more processes and no `isolateCacheMb` raises it to.
   * @unit MiB
   */
  readonly isolateCacheMb: number;
  /**
   * Whether the isolate of an agent that is gone (closed, collected, or dropped from the cache)
   * may serve a new agent, reset first: the runtime forgets the agent (calls, compiled programs,
   * history mirror), the globals programs added are removed, the last regular expression match is
   * cleared and `Math.random` is seeded anew; the rest of the realm is frozen. Only an isolate
   * whose runs all ended normally is reused. False gives every agent an isolate no agent had
   * before, at the cost of making one (about 4 ms here) for every new agent. Default: true.
   */
  readonly reuseIsolates: boolean;
}

/** Least memory for idle isolates in each process: about one isolate. @unit MiB */
export const MIN_ISOLATE_CACHE_MB_PER_PROCESS = 4;

/** A quarter of the memory this process may use: the machine's, or its container's limit where that is less. @unit MiB */
function defaultIsolateCacheMb(): number {
  return Math.max(64, Math.floor(usableMemory() / 2 ** 20 / 4));
}

/** The machine's memory, or the limit the OS sets this process (a cgroup's) when lower; 0 or more than the machine's means none. @unit bytes */
function usableMemory(): number {
  const machine = totalmem();
  const limit = process.constrainedMemory();
  return limit > 0 && limit < machine ? limit : machine;
}

/** A run sent again to a new process at most this often after its process died before it started. */
const MAX_RESENDS = 2;
const LIMIT = 64;

export function defaultSandboxConfig(): SandboxConfig {
  const fromEnv = readProcessesEnv();
  const processes = fromEnv ?? Math.max(1, Math.min(4, availableParallelism()));
  return { processes, maxProcesses: Math.max(8, processes), isolateCacheMb: Math.max(defaultIsolateCacheMb(), processes * MIN_ISOLATE_CACHE_MB_PER_PROCESS), reuseIsolates: true };
}

function readProcessesEnv(): number | undefined {
  const raw = readEnv("IMPROV_SANDBOX_PROCESSES");
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (Number.isInteger(value) && value >= 1 && value <= LIMIT) return value;
  process.emitWarning(`Ignoring IMPROV_SANDBOX_PROCESSES=${JSON.stringify(raw)}: use a whole number from 1 to ${LIMIT}.`, { code: "IMPROV_ENV" });
  return undefined;
}

/** Checks a `configureSandbox` argument and fills in what it leaves out. */
export function resolveSandboxConfig(options: Partial<SandboxConfig>, current: SandboxConfig): SandboxConfig {
  if (typeof options !== "object" || options === null) throw new TypeError("configureSandbox() takes an object: { processes?, maxProcesses?, isolateCacheMb?, reuseIsolates? }.");
  for (const name of Object.keys(options)) {
    if (name !== "processes" && name !== "maxProcesses" && name !== "isolateCacheMb" && name !== "reuseIsolates") {
      throw new TypeError(`Unknown sandbox option "${name}". Valid options: processes, maxProcesses, isolateCacheMb, reuseIsolates.`);
    }
  }
  const reuseIsolates = options.reuseIsolates ?? current.reuseIsolates;
  if (typeof reuseIsolates !== "boolean") throw new TypeError(`Sandbox option reuseIsolates must be true or false; got ${JSON.stringify(reuseIsolates)}.`);
  for (const name of ["processes", "maxProcesses"] as const) {
    const value = options[name];
    if (value !== undefined && !(Number.isInteger(value) && value >= 1 && value <= LIMIT)) {
      throw new TypeError(`Sandbox option ${name} must be a whole number from 1 to ${LIMIT}; got ${JSON.stringify(value)}.`);
    }
  }
  const processes = options.processes ?? current.processes;
  const maxProcesses = options.maxProcesses ?? Math.max(current.maxProcesses, processes);
  if (maxProcesses < processes) throw new TypeError(`Sandbox option maxProcesses (${maxProcesses}) must be at least processes (${processes}).`);
  const least = processes * MIN_ISOLATE_CACHE_MB_PER_PROCESS;
  // Left out, it grows with the processes: only a value given with them can be too small.
  const isolateCacheMb = options.isolateCacheMb ?? Math.max(current.isolateCacheMb, least);
  if (!Number.isSafeInteger(isolateCacheMb) || isolateCacheMb < 0) throw new TypeError(`Sandbox option isolateCacheMb must be a whole number of MiB; got ${JSON.stringify(isolateCacheMb)}.`);
  if (isolateCacheMb < least) {
    throw new RangeError(`Sandbox option isolateCacheMb (${isolateCacheMb} MiB) cannot hold one idle agent isolate in each of the ${processes} sandbox processes (about ${MIN_ISOLATE_CACHE_MB_PER_PROCESS} MiB each); give at least ${least}.`);
  }
  return { processes, maxProcesses, isolateCacheMb, reuseIsolates };
}

/**
 * The sandbox processes. Each agent's isolate lives in one process (its home), chosen once at
 * the start of each call ({@link SandboxPool.place}). An agent goes to a new home when its own
 * is held by another agent's program past the busy grace, or hosts another agent whose latest
 * program was that long and the agent has been there `poolTimings.minDwellMs` (its history
 * mirror is rebuilt in the new home on its first run). Agents that compute long thus end up
 * apart from those that do not, a short call does not queue behind a long program that had
 * not yet been seen to be long, and agents do not move back and forth. New agents go to the
 * process with the fewest agents; processes start as agents need them, up to `processes`, and
 * beyond that, up to `maxProcesses`, only while every process is busy; those extra processes
 * end when idle.
 */
export class SandboxPool {
  #config: SandboxConfig;
  readonly #processes: SandboxProcess[] = [];
  readonly #homes = new Map<string, SandboxProcess>();
  /** When each agent came to its home. */
  readonly #arrived = new Map<string, number>();
  #nextId = 1;
  /** How each run in flight is sent to a process (again, when its process died before it started). */
  readonly #senders = new WeakMap<PendingRun, (target: SandboxProcess) => void>();
  /** The wait after the last agent was closed (see {@link shutdownWhenIdle}). */
  #closing: NodeJS.Timeout | undefined;
  /** How many sandbox processes were started, for tests and diagnostics. */
  starts = 0;
  /** How many times an agent moved to another process because its own was busy. */
  moves = 0;
  /** How many runs were sent again because their process died (or was being ended) before they started. */
  resends = 0;

  constructor(config: SandboxConfig = defaultSandboxConfig()) {
    this.#config = config;
  }

  get config(): SandboxConfig {
    return this.#config;
  }

  configure(options: Partial<SandboxConfig>): SandboxConfig {
    this.#config = resolveSandboxConfig(options, this.#config);
    for (const process of this.#processes) {
      process.configure(this.#isolateCacheShareMb(), this.#config.reuseIsolates);
      this.#retireIfSpare(process);
    }
    return this.#config;
  }

  /** Each process's share of `isolateCacheMb`. @unit MiB */
  #isolateCacheShareMb(): number {
    return Math.floor(this.#config.isolateCacheMb / this.#config.processes);
  }

  /** Process ids of the live sandbox processes. */
  get pids(): number[] {
    return this.#processes.flatMap((process) => (process.alive && process.pid !== undefined ? [process.pid] : []));
  }

  /** The process id of the process that holds `agentId`'s isolate, if it has one. */
  pidOf(agentId: string): number | undefined {
    const home = this.#homes.get(agentId);
    return home?.alive ? home.pid : undefined;
  }

  /** Processes whose main thread a program's synchronous part holds past the busy grace. */
  get busyProcesses(): number {
    return this.#processes.filter((process) => process.alive && process.busyRun !== undefined).length;
  }

  /** Runs sent and not yet answered. */
  get activeRuns(): number {
    return this.#processes.reduce((sum, process) => sum + process.activeRuns, 0);
  }

  /** Runs whose program a sandbox process has begun to run, and not yet answered. */
  get startedRuns(): number {
    return this.#processes.reduce((sum, process) => sum + process.startedRuns, 0);
  }

  /** A fresh run or sync id (they wrap at `MAX_RUN_ID`). */
  #takeId(): number {
    const id = this.#nextId;
    this.#nextId = nextRunId(id);
    return id;
  }

  /** Runs one program; always resolves with a report, never rejects. */
  execute(request: Omit<RunRequestMessage, "type" | "runId">, hooks: RunHooks): Promise<RunReport> {
    const message: RunRequestMessage = { type: "run", runId: this.#takeId(), ...request };
    return new Promise<RunReport>((resolve) => {
      let home: SandboxProcess | undefined;
      const onAbort = () => {
        if (home !== undefined) home.cancel(run);
        else run.settle({ kind: "failed", errorType: "cancelled", message: "The call was cancelled before its program ran." });
      };
      const run = new PendingRun(
        message,
        hooks,
        (report) => {
          hooks.signal?.removeEventListener("abort", onAbort);
          resolve(report);
        },
        (pending) => home?.onDeadline(pending),
      );
      if (hooks.signal?.aborted) {
        run.settle({ kind: "failed", errorType: "cancelled", message: "The call was cancelled before its program ran." });
        return;
      }
      hooks.signal?.addEventListener("abort", onAbort, { once: true });
      const sendTo = (target: SandboxProcess) => {
        home = target;
        void target.take(run);
      };
      this.#senders.set(run, sendTo);
      sendTo(this.#homeOf(message.agentId));
    });
  }

  /**
   * Chooses the process for an agent's next call: its syncs and its run go there (unless it
   * dies meanwhile). Called once at the start of each call, so an agent never moves part-way.
   */
  place(agentId: string): void {
    this.#homeFor(agentId);
  }

  /** Sends one chunk of a history sync to the agent's process; false when it must start again from 0. */
  sync(request: Omit<SyncRequestMessage, "type" | "syncId">): Promise<boolean> {
    return this.#homeOf(request.agentId).sync(this.#takeId(), request);
  }

  /** What each live sandbox process holds now (see {@link SandboxStats}). */
  async stats(): Promise<SandboxStats[]> {
    const stats = await Promise.all(this.#processes.filter((process) => process.alive).map((process) => process.stats()));
    return stats.filter((entry): entry is SandboxStats => entry !== undefined);
  }

  /** Tells the agent's process it may free the agent's isolate. */
  forget(agentId: string): void {
    const home = this.#homes.get(agentId);
    this.#homes.delete(agentId);
    this.#arrived.delete(agentId);
    home?.forget(agentId);
  }

  /** Ends every sandbox process (new ones start with the next run). */
  shutdown(): void {
    clearTimeout(this.#closing);
    this.#closing = undefined;
    for (const process of this.#processes) process.kill();
  }

  /**
   * Ends every sandbox process once they have had nothing to run for `poolTimings.closedIdleMs`
   * and `stillUnused()` says so (no agent was opened meanwhile). The wait is unref'd, and idle
   * processes do not hold the application either, so it may exit at any time.
   */
  shutdownWhenIdle(stillUnused: () => boolean): void {
    clearTimeout(this.#closing);
    this.#closing = setTimeout(() => {
      this.#closing = undefined;
      if (!stillUnused()) return;
      if (this.activeRuns > 0) this.shutdownWhenIdle(stillUnused);
      else this.shutdown();
    }, poolTimings.closedIdleMs);
    this.#closing.unref();
  }

  /** The agent's home as it is, unless it is gone (then a new one). */
  #homeOf(agentId: string): SandboxProcess {
    const home = this.#homes.get(agentId);
    return home?.alive ? home : this.#homeFor(agentId);
  }

  /**
   * The process for an agent's next call: its home, unless that is gone, held by another
   * agent's program, or hosting an agent seen computing long while this one has been there a
   * while; then a process that is not busy (started if the pool may grow), the one with the
   * fewest runs in flight; when every process is busy and the pool is full, its home.
   */
  #homeFor(agentId: string): SandboxProcess {
    const home = this.#homes.get(agentId);
    if (home?.alive && !this.#shouldLeave(home, agentId)) return home;
    const live = this.#processes.filter((process) => process.alive);
    const free = live.filter((process) => !process.busyFor(agentId));
    let target: SandboxProcess | undefined;
    if (home === undefined || !home.alive) {
      // A new agent (or one whose process died): a process of its own while the pool is below
      // `processes`, else the free one with the fewest agents.
      target = live.length < this.#config.processes ? this.#start() : leastBy(free, (process) => process.agents.size);
    } else {
      target = leastBy(free, (process) => process.activeRuns);
    }
    target ??= live.length < this.#config.maxProcesses ? this.#start() : (home?.alive ? home : leastBy(live, (process) => process.activeRuns));
    if (target === undefined) target = this.#start();
    if (home !== undefined && home !== target) {
      if (home.alive) {
        this.moves += 1;
        home.forget(agentId);
      }
      home.agents.delete(agentId);
      home.heavy.delete(agentId);
    }
    target.agents.add(agentId);
    if (this.#homes.get(agentId) !== target) this.#arrived.set(agentId, performance.now());
    this.#homes.set(agentId, target);
    return target;
  }

  #shouldLeave(home: SandboxProcess, agentId: string): boolean {
    if (home.heldFor(agentId)) return true;
    return home.heavyBesides(agentId) && performance.now() - (this.#arrived.get(agentId) ?? 0) >= poolTimings.minDwellMs;
  }

  #start(): SandboxProcess {
    const process = new SandboxProcess({
      onLost: (lost, queued) => this.#onLost(lost, queued),
      onIdle: (idle) => this.#retireIfSpare(idle),
      onRunEnd: (home, agentId, heldLong) => {
        if (heldLong) home.heavy.set(agentId, performance.now());
        else home.heavy.delete(agentId);
      },
    });
    this.starts += 1;
    this.#processes.push(process);
    // Before any run: runs wait for the process to be ready, and go after this.
    void process.ready.then(() => process.configure(this.#isolateCacheShareMb(), this.#config.reuseIsolates), () => undefined);
    return process;
  }

  /** A process ended: its queued runs go to other processes (no program code of theirs ran). */
  #onLost(lost: SandboxProcess, queued: PendingRun[]): void {
    const index = this.#processes.indexOf(lost);
    if (index !== -1) this.#processes.splice(index, 1);
    for (const agentId of lost.agents) if (this.#homes.get(agentId) === lost) this.#homes.delete(agentId);
    for (const run of queued) {
      if (run.settled) continue;
      if (run.resends >= MAX_RESENDS) {
        const message = `The program could not be run: ${run.lostBecause ?? "the sandbox process stopped"}, ${run.resends + 1} times in a row. Call again.`;
        run.settle({ kind: "failed", errorType: "execution", message, retriable: true });
        continue;
      }
      run.resends += 1;
      this.resends += 1;
      run.lostBecause = undefined;
      this.#senders.get(run)?.(this.#homeFor(run.agentId));
    }
  }

  /** Ends a process beyond `processes` once it has been idle a while. */
  #retireIfSpare(process: SandboxProcess): void {
    if (this.#processes.length <= this.#config.processes || process.retiring || !process.alive || !process.idle) return;
    process.retiring = setTimeout(() => {
      process.retiring = undefined;
      const live = this.#processes.filter((candidate) => candidate.alive);
      if (live.length <= this.#config.processes || !process.alive || !process.idle) return;
      if (performance.now() - process.idleSince < poolTimings.retireIdleMs) {
        this.#retireIfSpare(process);
        return;
      }
      for (const agentId of process.agents) if (this.#homes.get(agentId) === process) this.#homes.delete(agentId);
      process.kill();
    }, poolTimings.retireIdleMs);
    process.retiring.unref();
  }
}

function leastBy<T>(items: readonly T[], measure: (item: T) => number): T | undefined {
  let best: T | undefined;
  let bestValue = Infinity;
  for (const item of items) {
    const value = measure(item);
    if (value < bestValue) {
      best = item;
      bestValue = value;
    }
  }
  return best;
}

let shared: SandboxPool | undefined;

/** The process-wide pool, created on first use. */
export function sandboxPool(): SandboxPool {
  shared ??= new SandboxPool();
  return shared;
}

/**
 * Sets how many sandbox processes run programs, for this process: `processes` (default: the
 * machine's available parallelism, at most 4, or `IMPROV_SANDBOX_PROCESSES`), `maxProcesses`
 * (default 8), the most while every process is busy, `isolateCacheMb` (default a quarter of
 * the machine's memory), the memory they keep idle agents' isolates in, and `reuseIsolates`
 * (default true), whether a gone agent's isolate, reset, may serve a new agent. Returns the settings now
 * in force. A bad value is a `TypeError`; an `isolateCacheMb` too small for one isolate in each
 * process, a `RangeError`.
 */
export function configureSandbox(options: Partial<SandboxConfig> = {}): SandboxConfig {
  return sandboxPool().configure(options);
}
