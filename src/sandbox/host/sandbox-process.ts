import { fork, type ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { BUSY_GRACE_MS, REPORT_FD, readSignal, type BridgeOutcome, type CeilingReport, type ChildMessage, type HostMessage, type RunReport, type SyncRequestMessage } from "../protocol.ts";
import { PendingRun } from "./pending-run.ts";

/** What a sandbox process tells the pool that owns it. */
export interface ProcessEvents {
  /** The process ended; `queued` are its runs that never started, to be sent elsewhere. */
  readonly onLost: (process: SandboxProcess, queued: PendingRun[]) => void;
  /** It has no runs or syncs left. */
  readonly onIdle: (process: SandboxProcess) => void;
  /** A run ended here; `heldLong` when its synchronous part held the process past the busy grace. */
  readonly onRunEnd: (process: SandboxProcess, agentId: string, heldLong: boolean) => void;
}

/** How long an agent whose program held its process past the busy grace keeps other agents away from that process. @unit ms */
const HEAVY_FOR_MS = 10_000;

/** The sandbox entry point beside this module: `.ts` when running from source, `.js` from `dist/`. */
function childEntry(): { path: string; fromSource: boolean } {
  const fromSource = import.meta.url.endsWith(".ts");
  const url = new URL(`../child/main.${fromSource ? "ts" : "js"}`, import.meta.url);
  return { path: fileURLToPath(url), fromSource };
}

/**
 * One sandbox child process: starts it, sends it runs and syncs, routes its bridge calls,
 * keeps each run's host deadline (see {@link PendingRun}) and kills the process when a run
 * overran it, and, when the process ends, settles the runs it took with it.
 */
export class SandboxProcess {
  readonly child: ChildProcess;
  /** Resolves once the process is ready for work; rejects when it could not start. */
  readonly ready: Promise<void>;
  /** Agents whose isolate lives here (kept by the pool). */
  readonly agents = new Set<string>();
  /**
   * Those of them whose latest run held the process past the busy grace, with when that was
   * seen (kept by the pool); an agent not seen so for {@link HEAVY_FOR_MS} counts no more.
   */
  readonly heavy = new Map<string, number>();
  /** The run whose synchronous part holds this process past the busy grace, if any. */
  busyRun: number | undefined;
  /** When it last became idle. */
  idleSince = performance.now();
  /** Set while the pool waits to see whether this spare process stays idle. */
  retiring: NodeJS.Timeout | undefined;
  readonly #runs = new Map<number, PendingRun>();
  readonly #syncs = new Map<number, (ok: boolean) => void>();
  readonly #events: ProcessEvents;
  #exited = false;
  #ceiling: CeilingReport | undefined;

  constructor(events: ProcessEvents) {
    this.#events = events;
    const { path, fromSource } = childEntry();
    const child = fork(path, [], {
      // A small young generation: under the steady stream of run messages V8 otherwise grows this
      // process's to 64 MiB, and keeps it.
      execArgv: ["--no-node-snapshot", "--max-semi-space-size=2", ...(fromSource ? ["--disable-warning=ExperimentalWarning"] : [])],
      serialization: "advanced",
      // A pipe, not the host's own stderr: a sandbox process must never hold the host's streams open.
      // The last pipe is the report pipe (REPORT_FD), written by its main thread and its watch thread.
      stdio: ["ignore", "ignore", "pipe", "ipc", "pipe"],
    });
    this.child = child;
    child.stderr?.on("data", (chunk: Buffer) => process.stderr.write(chunk));
    (child.stderr as { unref?: () => void } | null)?.unref?.();
    this.#readReports();
    this.ready = new Promise<void>((resolve, reject) => {
      const onEarlyExit = (code: number | null, signal: NodeJS.Signals | null) => {
        const cause = signal === "SIGKILL" ? "it was killed" : `${signal ?? `exit code ${code}`}; improv needs Node.js 24 or newer for isolated-vm 7`;
        reject(new Error(`the sandbox process exited before it was ready (${cause})`));
      };
      child.once("exit", onEarlyExit);
      child.once("error", (error) => reject(new Error(`the sandbox process could not start (${error.message})`)));
      child.on("message", (message: ChildMessage) => {
        if (message.type === "ready") {
          child.off("exit", onEarlyExit);
          resolve();
          this.#updateRef();
        } else this.#onMessage(message);
      });
    });
    this.ready.catch(() => undefined);
    child.on("exit", () => {
      this.#exited = true;
    });
    // A send to a process that just died fails with EPIPE here; its close handler settles its runs.
    child.on("error", () => undefined);
    // Runs are settled once the pipes are closed too, so a report written just before the end is read first.
    child.on("close", (code, signal) => this.#onClose(code, signal));
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Still running and taking work. */
  get alive(): boolean {
    return !this.#exited && this.child.exitCode === null && this.child.signalCode === null;
  }

  get activeRuns(): number {
    return this.#runs.size;
  }

  get startedRuns(): number {
    let started = 0;
    for (const run of this.#runs.values()) if (run.phase !== "queued") started += 1;
    return started;
  }

  /**
   * Another agent's program holds it past the grace now, or is likely to soon: another agent
   * homed here held it past the grace in its latest run.
   */
  busyFor(agentId: string): boolean {
    if (this.busyRun !== undefined && this.#runs.get(this.busyRun)?.agentId !== agentId) return true;
    if (this.heavy.size === 0) return false;
    const now = performance.now();
    for (const [other, seen] of this.heavy) {
      if (now - seen > HEAVY_FOR_MS) this.heavy.delete(other);
      else if (other !== agentId) return true;
    }
    return false;
  }

  /** Sends a run here (once the process is ready); its report reaches `run.settle`. */
  async take(run: PendingRun): Promise<void> {
    try {
      await this.ready;
    } catch (error) {
      run.lostBecause = (error as Error).message;
    }
    if (run.settled) return;
    if (!this.alive || run.lostBecause !== undefined) {
      // Nothing of it ran: it goes to another process.
      this.#events.onLost(this, [run]);
      return;
    }
    this.#runs.set(run.runId, run);
    this.#updateRef();
    run.enter("queued");
    try {
      this.child.send(run.message satisfies HostMessage);
    } catch (error) {
      this.#forgetRun(run);
      run.settle({ kind: "failed", errorType: "invalid_input", message: `The call's data could not be sent to the sandbox: ${(error as Error).message}` });
    }
  }

  /** Asks the process to stop a run (its signal aborted). */
  cancel(run: PendingRun): void {
    run.cancelled = true;
    if (run.phase === "queued") {
      // Never started here: nothing to stop; the process's answer for it is ignored.
      this.#forgetRun(run);
      run.settle({ kind: "failed", errorType: "cancelled", message: "The call was cancelled before its program ran." });
      this.#send({ type: "cancel", runId: run.runId });
      return;
    }
    run.enter("cancelling");
    this.#send({ type: "cancel", runId: run.runId });
  }

  /** Sends one chunk of a history sync; resolves false when it was refused or the process went away. */
  async sync(syncId: number, request: Omit<SyncRequestMessage, "type" | "syncId">): Promise<boolean> {
    try {
      await this.ready;
    } catch {
      return false;
    }
    if (!this.alive) return false;
    return new Promise<boolean>((resolve) => {
      this.#syncs.set(syncId, resolve);
      this.#updateRef();
      this.#send({ type: "sync", syncId, ...request });
    }).finally(() => {
      this.#syncs.delete(syncId);
      this.#afterWork();
    });
  }

  /** Frees an agent's isolate here, if it is not running. */
  forget(agentId: string): void {
    this.agents.delete(agentId);
    this.heavy.delete(agentId);
    if (this.alive) this.#send({ type: "forget", agentId });
  }

  kill(): void {
    this.child.kill("SIGKILL");
  }

  #forgetRun(run: PendingRun): void {
    if (this.#runs.get(run.runId) === run) this.#runs.delete(run.runId);
    this.#afterWork();
  }

  /** Settles a run that ended here, and takes it off the books. */
  #finish(run: PendingRun, report: RunReport): void {
    this.#forgetRun(run);
    if (this.busyRun === run.runId) this.#free(run.runId);
    this.#events.onRunEnd(this, run.agentId, run.heldLong);
    run.settle(report);
  }

  #onMessage(message: ChildMessage): void {
    switch (message.type) {
      case "result": {
        const run = this.#runs.get(message.runId);
        if (run) this.#finish(run, message.report);
        return;
      }
      case "synced":
        this.#syncs.get(message.syncId)?.(message.ok);
        return;
      case "bridge": {
        const run = this.#runs.get(message.runId);
        const answer = (outcome: BridgeOutcome) => {
          if (this.alive) this.#send({ type: "bridge-result", requestId: message.requestId, outcome });
        };
        if (!run) {
          answer({ status: "error", ok: false, error_type: "cancelled", error_message: "The calling program has ended.", retriable: false });
          return;
        }
        run.hooks.onBridge(message.request).then(answer, (error: unknown) =>
          answer({ status: "error", ok: false, error_type: "execution", error_message: `The delegated call failed: ${String((error as Error)?.message ?? error)}`, retriable: false }),
        );
        return;
      }
      default:
        return;
    }
  }

  /** A run's host deadline passed: its isolate could not be stopped, so the process goes. */
  onDeadline(run: PendingRun): void {
    if (run.settled || this.#runs.get(run.runId) !== run) return;
    if (run.phase === "queued") {
      // Waiting behind a run that holds the process is not being stuck: that run has its own deadline.
      if (this.startedRuns > 0) {
        run.arm();
        return;
      }
    }
    run.overran = run.phase !== "queued";
    this.kill();
  }

  /** Reads the report pipe: one line per report. Nothing on it is trusted beyond its shape. */
  #readReports(): void {
    const pipe = this.child.stdio[REPORT_FD] as Readable | null | undefined;
    if (!pipe) return;
    (pipe as { unref?: () => void }).unref?.();
    pipe.setEncoding("utf8");
    let pending = "";
    pipe.on("data", (chunk: string) => {
      pending = (pending + chunk).slice(-4096);
      let newline: number;
      while ((newline = pending.indexOf("\n")) !== -1) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        const signal = readSignal(line);
        if (signal !== undefined) {
          this.#onSignal(signal.kind, signal.runId);
          continue;
        }
        const report = parseCeilingReport(line);
        if (report && this.#ceiling === undefined) {
          this.#ceiling = report;
          this.kill();
        }
      }
    });
  }

  #onSignal(kind: "started" | "busy" | "free", runId: number): void {
    const run = this.#runs.get(runId);
    if (kind === "started") {
      if (run?.phase === "queued") run.enter("running");
      return;
    }
    if (kind === "free") {
      if (this.busyRun === runId) this.#free(runId);
      return;
    }
    if (!run) return;
    run.heldLong = true;
    this.heavy.set(run.agentId, performance.now());
    this.busyRun = runId;
    for (const other of this.#runs.values()) if (other !== run) other.pause(BUSY_GRACE_MS);
  }

  #free(runId: number): void {
    if (this.busyRun !== runId) return;
    this.busyRun = undefined;
    for (const run of this.#runs.values()) run.resume();
  }

  #onClose(code: number | null, signal: NodeJS.Signals | null): void {
    this.#exited = true;
    this.busyRun = undefined;
    for (const resolve of this.#syncs.values()) resolve(false);
    const queued: PendingRun[] = [];
    for (const run of [...this.#runs.values()]) {
      this.#runs.delete(run.runId);
      if (run.phase === "queued" && !run.overran) {
        run.lostBecause = `the sandbox process stopped (${signal ?? `exit code ${code}`})`;
        queued.push(run);
      }
      else run.settle(lostRunReport(run, this.#ceiling, signal ?? `exit code ${code}`));
    }
    this.#events.onLost(this, queued);
  }

  #afterWork(): void {
    this.#updateRef();
    if (this.#runs.size === 0 && this.#syncs.size === 0) {
      this.idleSince = performance.now();
      this.#events.onIdle(this);
    }
  }

  #send(message: HostMessage): void {
    try {
      this.child.send(message);
    } catch {
      // The process is going away; its close handler settles every run.
    }
  }

  /** Keep the host alive only while work is pending, so applications can exit when idle. */
  #updateRef(): void {
    const channel = this.child.channel as { ref?: () => void; unref?: () => void } | null | undefined;
    if (this.#runs.size > 0 || this.#syncs.size > 0) {
      this.child.ref();
      channel?.ref?.();
    } else {
      this.child.unref();
      channel?.unref?.();
    }
  }
}

/** How a started run ends when its sandbox process is gone, by what ended the process. */
function lostRunReport(run: PendingRun, ceiling: CeilingReport | undefined, exit: string): RunReport {
  if (run.cancelled) {
    return { kind: "failed", errorType: "cancelled", message: "The call was cancelled while its program ran; the sandbox process was restarted to stop it." };
  }
  const grew = ceiling && `The sandbox process grew to ${ceiling.rssMb} MiB, past its ${ceiling.ceilingMb} MiB memory ceiling, while this program ran`;
  if (ceiling && ceiling.runId === run.runId) {
    return { kind: "failed", errorType: "memory_limit", message: `${grew}; the program was stopped and the process restarted.` };
  }
  if (ceiling && ceiling.runId === 0) {
    // No program held the process at that moment, so which one grew it is not known.
    return { kind: "failed", errorType: "memory_limit", message: `${grew}, which may not have been this program's doing; the process was restarted. Call again.`, retriable: true };
  }
  if (run.overran) {
    return {
      kind: "failed",
      errorType: "timeout",
      message: `The program ran longer than executionTimeoutMs (${run.message.timeoutMs} ms) and could not be stopped inside the sandbox; the sandbox process was restarted.`,
    };
  }
  const message = ceiling
    ? "The sandbox process was restarted because another program took it past its memory ceiling while this program ran. Call again."
    : `The sandbox process stopped (${exit}) while this program ran, and was restarted. Call again.`;
  return { kind: "failed", errorType: "execution", message, retriable: true };
}

function parseCeilingReport(line: string): CeilingReport | undefined {
  try {
    const value = JSON.parse(line) as Partial<CeilingReport>;
    if (value.type !== "memory-ceiling") return undefined;
    const { rssMb, ceilingMb, runId } = value;
    if (![rssMb, ceilingMb, runId].every((n) => typeof n === "number" && Number.isSafeInteger(n) && n >= 0)) return undefined;
    return { type: "memory-ceiling", rssMb: rssMb as number, ceilingMb: ceilingMb as number, runId: runId as number };
  } catch {
    return undefined;
  }
}
