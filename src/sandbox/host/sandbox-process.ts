import { fork, type ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { bridgeFailure, packRun, REPORT_FD, readSignal, unpackSuccess, type BridgeAnswer, type CeilingReport, type ChildMessage, type ChildWireMessage, type HostMessage, type RunReport, type RunSignal, type SandboxStats, type SyncRequestMessage } from "../protocol.ts";
import { boundAnswer, isSmallAnswer } from "./outbound.ts";
import { PendingRun } from "./pending-run.ts";
import { parseCeilingReport, ReportLines } from "./report-pipe.ts";
import { poolTimings } from "./timings.ts";

/** What a sandbox process tells the pool that owns it. */
export interface ProcessEvents {
  /** The process ended; `queued` are its runs that never started, to be sent elsewhere. */
  readonly onLost: (process: SandboxProcess, queued: PendingRun[]) => void;
  /** It has no runs or syncs left. */
  readonly onIdle: (process: SandboxProcess) => void;
  /** A run ended here; `heldLong` when its synchronous part held the process past the busy grace. */
  readonly onRunEnd: (process: SandboxProcess, agentId: string, heldLong: boolean) => void;
}

/**
 * How long the host waits for a busy run's `F` line after its answer came (the two travel on
 * different channels); past this, it counts the process free without it. @unit ms
 */
const LET_GO_WAIT_MS = 1_000;

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
   * seen (kept by the pool); an agent not seen so for `poolTimings.heavyForMs` counts no more.
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
  readonly #statsWaiters = new Map<number, (stats: SandboxStats) => void>();
  #nextStatsId = 1;
  readonly #events: ProcessEvents;
  #exited = false;
  #isReady = false;
  #queuedWatch: NodeJS.Timeout | undefined;
  /** The holds whose `F` was read (the latest few, as `runId/hold`), so a `B` of theirs read later is known stale. */
  readonly #letGoHolds: string[] = [];
  /** Whether the process (and its channel) keeps the host alive now. */
  #refed = true;
  /** Killed, and not yet gone: it takes no new work. */
  #dying = false;
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
    // First: a spawn that failed (too many open files, say) is an 'error' event, which unheard
    // would end the host. A send to a process that just died fails with EPIPE here too; the
    // close handler settles its runs.
    child.on("error", () => undefined);
    child.stderr?.on("data", (chunk: Buffer) => process.stderr.write(chunk));
    (child.stderr as { unref?: () => void } | null)?.unref?.();
    this.#readReports();
    this.ready = new Promise<void>((resolve, reject) => {
      let tooSlow = false;
      const startup = setTimeout(() => {
        tooSlow = true;
        this.kill();
      }, poolTimings.stuckAfterMs);
      const onEarlyExit = (code: number | null, signal: NodeJS.Signals | null) => {
        clearTimeout(startup);
        const cause = tooSlow
          ? `it was not ready after ${poolTimings.stuckAfterMs} ms`
          : signal === "SIGKILL"
            ? "it was killed"
            : `${signal ?? `exit code ${code}`}; improv needs Node.js 24 or newer for isolated-vm 7`;
        reject(new Error(`the sandbox process exited before it was ready (${cause})`));
      };
      child.once("exit", onEarlyExit);
      child.once("error", (error) => reject(new Error(`the sandbox process could not start (${error.message})${startHint(error)}`)));
      child.on("message", (wire: ChildWireMessage) => {
        const message = Array.isArray(wire) ? unpackSuccess(wire) : wire;
        if (message.type === "ready") {
          this.#isReady = true;
          clearTimeout(startup);
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
    // Runs are settled once the pipes are closed too, so a report written just before the end is read first.
    child.on("close", (code, signal) => this.#onClose(code, signal));
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Still running and taking work. */
  get alive(): boolean {
    return !this.#dying && !this.#exited && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** No runs or syncs on its books. */
  get idle(): boolean {
    return this.#runs.size === 0 && this.#syncs.size === 0;
  }

  get activeRuns(): number {
    return this.#runs.size;
  }

  get startedRuns(): number {
    let started = 0;
    for (const run of this.#runs.values()) if (run.phase !== "queued") started += 1;
    return started;
  }

  /** Another agent's program holds it past the grace now, or is likely to soon. */
  busyFor(agentId: string): boolean {
    return this.heldFor(agentId) || this.heavyBesides(agentId);
  }

  /** Another agent's program holds it past the grace now. */
  heldFor(agentId: string): boolean {
    return this.busyRun !== undefined && this.#runs.get(this.busyRun)?.agentId !== agentId;
  }

  /** Another agent homed here held it past the grace in its latest run. */
  heavyBesides(agentId: string): boolean {
    if (this.heavy.size === 0) return false;
    const now = performance.now();
    for (const [other, seen] of this.heavy) {
      if (now - seen > poolTimings.heavyForMs) this.heavy.delete(other);
      else if (other !== agentId) return true;
    }
    return false;
  }

  /** Sends a run here (once the process is ready); its report reaches `run.settle`. */
  async take(run: PendingRun): Promise<void> {
    // Once ready, a run goes at once, not a turn later.
    if (!this.#isReady) {
      try {
        await this.ready;
      } catch (error) {
        run.lostBecause = (error as Error).message;
      }
    }
    if (run.settled) return;
    if (!this.alive || run.lostBecause !== undefined) {
      // Nothing of it ran: it goes to another process.
      this.#events.onLost(this, [run]);
      return;
    }
    this.#runs.set(run.runId, run);
    this.#updateRef();
    run.restartWait();
    this.#watchQueued();
    try {
      this.child.send(packRun(run.message, run.callTimeLeftMs()) satisfies HostMessage);
    } catch (error) {
      this.#forgetRun(run);
      run.settle({ kind: "failed", errorType: "invalid_input", message: `The call's data could not be sent to the sandbox: ${(error as Error).message}` });
    }
  }

  /**
   * Asks the process to stop a run (its signal aborted). A run not yet started is answered at
   * once, and stays on the books until the process answers for it, which it does without
   * running it (or, should it have just started, by stopping it).
   */
  cancel(run: PendingRun): void {
    run.cancelled = true;
    this.#send({ type: "cancel", runId: run.runId });
    if (run.phase === "queued") run.settle({ kind: "failed", errorType: "cancelled", message: "The call was cancelled before its program ran." });
    else run.enter("cancelling");
  }

  /**
   * Sends one chunk of a history sync; resolves false when it was refused or the process went
   * away. A process that leaves it unanswered for `poolTimings.stuckAfterMs` while none of
   * its programs runs counts as stuck and is killed.
   */
  async sync(syncId: number, request: Omit<SyncRequestMessage, "type" | "syncId">): Promise<boolean> {
    try {
      await this.ready;
    } catch {
      return false;
    }
    if (!this.alive) return false;
    let stuckCheck: NodeJS.Timeout | undefined;
    const check = () => {
      stuckCheck = setTimeout(() => (this.startedRuns > 0 ? check() : this.kill()), poolTimings.stuckAfterMs);
    };
    return new Promise<boolean>((resolve) => {
      this.#syncs.set(syncId, resolve);
      this.#updateRef();
      check();
      this.#send({ type: "sync", syncId, ...request });
    }).finally(() => {
      clearTimeout(stuckCheck);
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

  /** What the process holds now (undefined when it is gone or does not answer within a second). */
  async stats(): Promise<SandboxStats | undefined> {
    if (!this.alive) return undefined;
    await this.ready.catch(() => undefined);
    const statsId = this.#nextStatsId++;
    return new Promise((resolve) => {
      const late = setTimeout(() => {
        this.#statsWaiters.delete(statsId);
        resolve(undefined);
      }, 1_000);
      this.#statsWaiters.set(statsId, (stats) => {
        clearTimeout(late);
        resolve(stats);
      });
      if (!this.#trySend({ type: "stats", statsId })) {
        clearTimeout(late);
        this.#statsWaiters.delete(statsId);
        resolve(undefined);
      }
    });
  }

  /** Tells the process how much memory it may keep idle isolates in (MiB) and whether it may reuse them (see `configureSandbox`). */
  configure(isolateCacheMb: number, reuseIsolates: boolean): void {
    if (this.alive) this.#send({ type: "configure", isolateCacheMb, reuseIsolates });
  }

  kill(): void {
    this.#dying = true;
    this.child.kill("SIGKILL");
  }

  #forgetRun(run: PendingRun): void {
    run.close();
    if (this.#runs.get(run.runId) === run) this.#runs.delete(run.runId);
    this.#afterWork();
  }

  /** Settles a run that ended here, and takes it off the books. */
  #finish(run: PendingRun, report: RunReport): void {
    this.#forgetRun(run);
    if (this.busyRun === run.runId) {
      // Its F line is on its way on the report pipe; should it never come, go on without it.
      setTimeout(() => this.#letGo(run.runId, 0), LET_GO_WAIT_MS).unref();
    }
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
      case "stats": {
        const { type: _type, statsId, ...stats } = message;
        this.#statsWaiters.get(statsId)?.(stats);
        this.#statsWaiters.delete(statsId);
        return;
      }
      case "bridge": {
        const { request, requestId } = message;
        const run = this.#runs.get(message.runId);
        // The wait it began ends as a small answer is sent, or with the sandbox process's `R`
        // line once the program has a large one (see `RunSignal`).
        const answer = (reply: BridgeAnswer) => {
          const { answer: travelling, sent } = withoutHook(reply);
          if (!this.alive) return sent?.();
          const bounded = boundAnswer(request.kind, travelling);
          const tell = !isSmallAnswer(bounded);
          // An answer that cannot travel (a value the channel cannot copy) is answered with a failure, never left unsent.
          if (!this.#trySend({ type: "bridge-result", requestId, answer: bounded, tell }, sent)) {
            sent?.();
            this.#send({ type: "bridge-result", requestId, answer: bridgeFailure("execution", `The answer to this ${request.kind} request could not be sent to the sandbox.`), tell: false });
            run?.waitEnded();
          } else if (!tell) run?.waitEnded();
        };
        if (!run || run.settled) {
          answer(bridgeFailure("cancelled", "The calling program has ended."));
          return;
        }
        run.waitBegan();
        this.#started(run);
        run.hooks.onBridge(request, run.asking).then(answer, (error: unknown) =>
          answer(bridgeFailure("execution", `The host could not answer this ${request.kind} request: ${String((error as Error)?.message ?? error)}`)),
        );
        return;
      }
      default:
        return;
    }
  }

  /**
   * While runs wait here unstarted, checks every quarter of `poolTimings.stuckAfterMs` whether
   * one has waited that long (the queued rule in {@link PendingRun}).
   */
  #watchQueued(): void {
    if (this.#queuedWatch !== undefined) return;
    this.#queuedWatch = setTimeout(() => {
      this.#queuedWatch = undefined;
      let waiting = false;
      for (const run of [...this.#runs.values()]) {
        if (run.phase !== "queued" || run.closed) continue;
        waiting = true;
        if (run.queuedMs() >= poolTimings.stuckAfterMs) this.onDeadline(run);
      }
      if (waiting && this.alive) this.#watchQueued();
    }, poolTimings.stuckAfterMs / 4);
    this.#queuedWatch.unref();
  }

  /** A run's host deadline passed: its isolate could not be stopped, so the process goes. */
  onDeadline(run: PendingRun): void {
    if (run.closed || this.#runs.get(run.runId) !== run) return;
    if (run.phase === "queued") {
      // Waiting behind a run that holds the process is not being stuck: that run has its own deadline.
      if (this.startedRuns > 0) {
        run.restartWait();
        return;
      }
    }
    run.overran = run.phase !== "queued";
    this.kill();
  }

  /** Reads the report pipe: one line per report. Nothing on it is trusted beyond its shape. */
  #readReports(): void {
    // A process that could not be spawned has no pipes at all.
    const pipe = this.child.stdio?.[REPORT_FD] as Readable | null | undefined;
    if (!pipe) return;
    (pipe as { unref?: () => void }).unref?.();
    pipe.setEncoding("utf8");
    const lines = new ReportLines();
    pipe.on("data", (chunk: string) => {
      for (const line of lines.push(chunk)) {
        const signal = readSignal(line);
        if (signal !== undefined) {
          this.#onSignal(signal);
          continue;
        }
        const report = parseCeilingReport(line);
        if (report && this.#ceiling === undefined) {
          this.#ceiling = report;
          // The run it names was in its synchronous part: it started, whatever the host had heard.
          const culprit = this.#runs.get(report.runId);
          if (culprit !== undefined) this.#started(culprit);
          this.kill();
        }
      }
    });
  }

  #onSignal(signal: RunSignal): void {
    const run = this.#runs.get(signal.runId);
    switch (signal.kind) {
      case "started":
        if (run) this.#started(run);
        return;
      case "busy":
        if (this.#letGoHolds.includes(`${signal.runId}/${signal.hold}`)) return;
        if (!run) {
          this.#heldAfterEnd(signal.runId);
          return;
        }
        this.#started(run);
        run.heldLong = true;
        this.heavy.set(run.agentId, performance.now());
        this.busyRun = run.runId;
        for (const other of this.#runs.values()) if (other !== run) other.pause();
        return;
      case "resumed":
        run?.waitEnded();
        return;
      case "free":
        this.#letGoHolds.push(`${signal.runId}/${signal.hold}`);
        if (this.#letGoHolds.length > 16) this.#letGoHolds.shift();
        this.#letGo(signal.runId, signal.heldMs);
    }
  }

  /**
   * A run already answered holds the process still: its isolate's tidying after the answer
   * (see the runtime's `tidy`). Other runs wait for it uncharged, as behind a synchronous part,
   * until its `F`.
   */
  #heldAfterEnd(runId: number): void {
    this.busyRun = runId;
    for (const other of this.#runs.values()) other.pause();
  }

  /** The process said, one way or another, that a run's program started: its deadline runs from now. */
  #started(run: PendingRun): void {
    if (run.phase === "queued") run.enter(run.cancelled ? "cancelling" : "running");
  }

  /** A run's synchronous part let go after holding the process `heldMs`: the other runs' deadlines go on without that time. */
  #letGo(runId: number, heldMs: number): void {
    if (this.busyRun === runId) this.busyRun = undefined;
    else if (heldMs === 0) return;
    for (const run of this.#runs.values()) if (run.runId !== runId) run.excuse(heldMs);
  }

  #onClose(code: number | null, signal: NodeJS.Signals | null): void {
    this.#exited = true;
    clearTimeout(this.#queuedWatch);
    this.busyRun = undefined;
    for (const resolve of this.#syncs.values()) resolve(false);
    const queued: PendingRun[] = [];
    for (const run of [...this.#runs.values()]) {
      run.close();
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
    // The process is going away when this fails; its close handler settles every run.
    this.#trySend(message);
  }

  /**
   * Sends a message; false when it could not be sent (the process is going away, or the message
   * cannot be copied). `written` is called once it is written to the process, or could not be.
   */
  #trySend(message: HostMessage, written?: () => void): boolean {
    try {
      if (written === undefined) this.child.send(message);
      else this.child.send(message, () => written());
      return true;
    } catch {
      return false;
    }
  }

  /** Keep the host alive only while work is pending, so applications can exit when idle. */
  #updateRef(): void {
    const busy = this.#runs.size > 0 || this.#syncs.size > 0;
    if (busy === this.#refed) return;
    this.#refed = busy;
    const channel = this.child.channel as { ref?: () => void; unref?: () => void } | null | undefined;
    if (busy) {
      this.child.ref();
      channel?.ref?.();
    } else {
      this.child.unref();
      channel?.unref?.();
    }
  }
}

/** What to do about a spawn that failed for want of resources the host can free. */
function startHint(error: Error): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EMFILE" || code === "ENFILE") return ": the host has too many files open; raise its limit (ulimit -n) or close files it holds";
  if (code === "EAGAIN") return ": the host may start no more processes now; raise its limit (ulimit -u) or wait";
  return "";
}

/** The answer as it travels, and its `sent` hook apart (a function, which the channel cannot copy). */
function withoutHook(reply: BridgeAnswer): { readonly answer: BridgeAnswer; readonly sent: (() => void) | undefined } {
  if (!reply.ok || reply.sent === undefined) return { answer: reply, sent: undefined };
  const { sent, ...answer } = reply;
  return { answer, sent };
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
      message: run.pastCallTime
        ? "The call ran past its callTimeoutMs and its program could not be stopped inside the sandbox; the sandbox process was restarted."
        : `The program ran longer than executionTimeoutMs (${run.message.timeoutMs} ms) and could not be stopped inside the sandbox; the sandbox process was restarted.`,
    };
  }
  const message = ceiling
    ? "The sandbox process was restarted because another program took it past its memory ceiling while this program ran. Call again."
    : `The sandbox process stopped (${exit}) while this program ran, and was restarted. Call again.`;
  return { kind: "failed", errorType: "execution", message, retriable: true };
}
