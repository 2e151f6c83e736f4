import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { killGraceMs } from "../limits.ts";
import type { Readable } from "node:stream";
import { REPORT_FD, startedRun, type BridgeOutcome, type BridgeRequest, type CeilingReport, type ChildMessage, type HostMessage, type RunReport, type RunRequestMessage, type SyncRequestMessage } from "../protocol.ts";

/** Time allowed for starting the sandbox process and building an isolate, on top of a run's own limit. */
const STARTUP_ALLOWANCE_MS = 10_000;

/** What a run needs from the code that asked for it. */
export interface RunHooks {
  readonly onBridge: (request: BridgeRequest) => Promise<BridgeOutcome>;
  readonly signal?: AbortSignal | undefined;
}

interface PendingRun {
  child: ChildProcess;
  readonly message: RunRequestMessage;
  /** The sandbox process said the program is about to run; before that, a run can be resent safely. */
  started: boolean;
  resends: number;
  readonly timeoutMs: number;
  readonly hooks: RunHooks;
  readonly resolve: (report: RunReport) => void;
  timer: NodeJS.Timeout;
  overran: boolean;
  /** Cancelled by its signal: if the process has to be killed to stop it, it still ends as cancelled. */
  cancelled: boolean;
}

/** The sandbox entry point beside this module: `.ts` when running from source, `.js` from `dist/`. */
function childEntry(): { path: string; fromSource: boolean } {
  const fromSource = import.meta.url.endsWith(".ts");
  const url = new URL(`../child/main.${fromSource ? "ts" : "js"}`, import.meta.url);
  return { path: fileURLToPath(url), fromSource };
}

/**
 * Owns the sandbox child process: starts it on demand, sends runs, routes bridge calls,
 * enforces each run's deadline from outside (killing the process when an isolate could not
 * be stopped from inside), and starts a new process after a crash.
 */
export class SandboxSupervisor {
  #child: ChildProcess | undefined;
  #ready: Promise<ChildProcess> | undefined;
  readonly #runs = new Map<number, PendingRun>();
  #nextRunId = 1;
  readonly #syncs = new Map<number, { child: ChildProcess; resolve: (ok: boolean) => void }>();
  /** Sandbox processes that reported passing their memory ceiling, and were ended for it. */
  readonly #ceilingReports = new WeakMap<ChildProcess, CeilingReport>();
  /** How many sandbox processes were started, for tests and diagnostics. */
  starts = 0;

  /** The sandbox process id, while one runs. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Runs sent and not yet answered. */
  get activeRuns(): number {
    return this.#runs.size;
  }

  /** Runs whose program the sandbox process has begun to run, and not yet answered. */
  get startedRuns(): number {
    let started = 0;
    for (const pending of this.#runs.values()) if (pending.started) started += 1;
    return started;
  }

  /** Runs one program; always resolves with a report, never rejects. */
  async execute(request: Omit<RunRequestMessage, "type" | "runId">, hooks: RunHooks): Promise<RunReport> {
    let child: ChildProcess;
    try {
      child = await this.#start();
    } catch (error) {
      return { kind: "failed", errorType: "execution", message: (error as Error).message };
    }
    const runId = this.#nextRunId++;
    const message: RunRequestMessage = { type: "run", runId, ...request };
    return new Promise<RunReport>((resolve) => {
      const pending: PendingRun = {
        child,
        message,
        started: false,
        resends: 0,
        timeoutMs: request.timeoutMs,
        hooks,
        resolve: (report) => {
          clearTimeout(pending.timer);
          hooks.signal?.removeEventListener("abort", onAbort);
          this.#runs.delete(runId);
          this.#updateRef();
          resolve(report);
        },
        timer: setTimeout(() => this.#overrun(runId), request.timeoutMs + killGraceMs(request.timeoutMs) + STARTUP_ALLOWANCE_MS),
        overran: false,
        cancelled: false,
      };
      const onAbort = () => {
        pending.cancelled = true;
        this.#send(pending.child, { type: "cancel", runId });
        clearTimeout(pending.timer);
        pending.timer = setTimeout(() => this.#overrun(runId), killGraceMs(request.timeoutMs));
      };
      this.#runs.set(runId, pending);
      this.#updateRef();
      if (hooks.signal?.aborted) {
        pending.resolve({ kind: "failed", errorType: "cancelled", message: "The call was cancelled before its program ran." });
        return;
      }
      hooks.signal?.addEventListener("abort", onAbort, { once: true });
      try {
        child.send(message satisfies HostMessage);
      } catch (error) {
        pending.resolve({ kind: "failed", errorType: "invalid_input", message: `The call's data could not be sent to the sandbox: ${(error as Error).message}` });
      }
    });
  }

  /**
   * Sends one chunk of a large history sync; resolves true when the sandbox mirror took it,
   * false when it must start again from the first record (or the process went away).
   */
  async sync(request: Omit<SyncRequestMessage, "type" | "syncId">): Promise<boolean> {
    let child: ChildProcess;
    try {
      child = await this.#start();
    } catch {
      return false;
    }
    const syncId = this.#nextRunId++;
    return new Promise<boolean>((resolve) => {
      this.#syncs.set(syncId, { child, resolve });
      child.ref();
      this.#send(child, { type: "sync", syncId, ...request });
    }).finally(() => {
      this.#syncs.delete(syncId);
      this.#updateRef();
    });
  }

  /** Tells the sandbox it may free an agent's isolate. */
  forget(agentId: string): void {
    if (this.#child?.connected) this.#send(this.#child, { type: "forget", agentId });
  }

  /** Stops the sandbox process (a new one starts with the next run). */
  shutdown(): void {
    this.#child?.kill("SIGKILL");
  }

  #start(): Promise<ChildProcess> {
    if (this.#ready) return this.#ready;
    const { path, fromSource } = childEntry();
    const child = fork(path, [], {
      execArgv: ["--no-node-snapshot", ...(fromSource ? ["--disable-warning=ExperimentalWarning"] : [])],
      serialization: "advanced",
      // A pipe, not the host's own stderr: a sandbox process must never hold the host's streams open.
      // The last pipe is the report pipe (REPORT_FD), written by the process's memory watch.
      stdio: ["ignore", "ignore", "pipe", "ipc", "pipe"],
    });
    child.stderr?.on("data", (chunk: Buffer) => process.stderr.write(chunk));
    (child.stderr as { unref?: () => void } | null)?.unref?.();
    this.#readReports(child);
    this.starts += 1;
    this.#child = child;
    this.#ready = new Promise<ChildProcess>((resolve, reject) => {
      const onEarlyExit = (code: number | null, signal: NodeJS.Signals | null) => {
        reject(new Error(`The sandbox process exited before it was ready (${signal ?? `exit code ${code}`}). improv needs Node.js 24 or newer for isolated-vm 7.`));
      };
      child.once("exit", onEarlyExit);
      child.once("error", (error) => reject(new Error(`The sandbox process could not start: ${error.message}`)));
      child.on("message", (message: ChildMessage) => {
        if (message.type === "ready") {
          child.off("exit", onEarlyExit);
          resolve(child);
          this.#updateRef();
        } else this.#onMessage(child, message);
      });
    });
    child.on("exit", () => this.#detach(child));
    // Runs are settled once the pipes are closed too, so a report written just before the end is read first.
    child.on("close", (code, signal) => this.#onExit(child, code, signal));
    this.#ready.catch(() => {
      if (this.#child === child) {
        this.#child = undefined;
        this.#ready = undefined;
      }
    });
    // Stay referenced until ready: a caller awaiting the first run must keep the host alive.
    return this.#ready;
  }

  #onMessage(child: ChildProcess, message: ChildMessage): void {
    switch (message.type) {
      case "result":
        this.#runs.get(message.runId)?.resolve(message.report);
        return;
      case "synced":
        this.#syncs.get(message.syncId)?.resolve(message.ok);
        return;
      case "bridge": {
        const pending = this.#runs.get(message.runId);
        const answer = (outcome: BridgeOutcome) => {
          if (child.connected) this.#send(child, { type: "bridge-result", requestId: message.requestId, outcome });
        };
        if (!pending) {
          answer({ status: "error", ok: false, error_type: "cancelled", error_message: "The calling program has ended.", retriable: false });
          return;
        }
        pending.hooks.onBridge(message.request).then(answer, (error: unknown) =>
          answer({ status: "error", ok: false, error_type: "execution", error_message: `The delegated call failed: ${String((error as Error)?.message ?? error)}`, retriable: false }),
        );
        return;
      }
      default:
        return;
    }
  }

  /** The sandbox process is about to run the program: it cannot be resent now, and its own deadline starts. */
  #started(runId: number): void {
    const pending = this.#runs.get(runId);
    if (!pending || pending.started) return;
    pending.started = true;
    clearTimeout(pending.timer);
    pending.timer = setTimeout(() => this.#overrun(runId), pending.timeoutMs + killGraceMs(pending.timeoutMs));
  }

  /** A run outlived its deadline plus grace: its isolate could not be stopped, so the process goes. */
  #overrun(runId: number): void {
    const pending = this.#runs.get(runId);
    if (!pending) return;
    pending.overran = true;
    pending.child.kill("SIGKILL");
  }

  /** Reads the report pipe: one JSON line per report. Nothing on it is trusted beyond its shape. */
  #readReports(child: ChildProcess): void {
    const pipe = child.stdio[REPORT_FD] as Readable | null | undefined;
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
        const started = startedRun(line);
        if (started !== undefined) {
          this.#started(started);
          continue;
        }
        const report = parseCeilingReport(line);
        if (report && !this.#ceilingReports.has(child)) {
          this.#ceilingReports.set(child, report);
          child.kill("SIGKILL");
        }
      }
    });
  }

  /** A process that exited takes no new work; its runs are settled when it has closed. */
  #detach(child: ChildProcess): void {
    if (this.#child === child) {
      this.#child = undefined;
      this.#ready = undefined;
    }
  }

  #onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    this.#detach(child);
    for (const pending of this.#syncs.values()) if (pending.child === child) pending.resolve(false);
    const ceiling = this.#ceilingReports.get(child);
    for (const pending of [...this.#runs.values()]) {
      if (pending.child !== child) continue;
      if (!pending.started && !pending.overran && pending.resends < 2) {
        pending.resends += 1;
        void this.#resend(pending);
        continue;
      }
      pending.resolve(lostRunReport(pending, ceiling, signal ?? `exit code ${code}`));
    }
  }

  /** Sends a run that never started to a new sandbox process: no program code ran, so this is safe. */
  async #resend(pending: PendingRun): Promise<void> {
    try {
      pending.child = await this.#start();
    } catch (error) {
      pending.resolve({ kind: "failed", errorType: "execution", message: (error as Error).message });
      return;
    }
    clearTimeout(pending.timer);
    pending.timer = setTimeout(() => this.#overrun(pending.message.runId), pending.timeoutMs + killGraceMs(pending.timeoutMs) + STARTUP_ALLOWANCE_MS);
    this.#updateRef();
    this.#send(pending.child, pending.message);
  }

  #send(child: ChildProcess, message: HostMessage): void {
    try {
      child.send(message);
    } catch {
      // The process is going away; its exit handler settles every run.
    }
  }

  /** Keep the host alive only while runs are pending, so applications can exit when idle. */
  #updateRef(): void {
    const child = this.#child;
    if (!child) return;
    const channel = child.channel as { ref?: () => void; unref?: () => void } | null | undefined;
    if (this.#runs.size > 0 || this.#syncs.size > 0) {
      child.ref();
      channel?.ref?.();
    } else {
      child.unref();
      channel?.unref?.();
    }
  }
}

/** How a started run ends when its sandbox process is gone, by what ended the process. */
function lostRunReport(pending: PendingRun, ceiling: CeilingReport | undefined, exit: string): RunReport {
  if (pending.cancelled) {
    return { kind: "failed", errorType: "cancelled", message: "The call was cancelled while its program ran; the sandbox process was restarted to stop it." };
  }
  const grew = ceiling && `The sandbox process grew to ${ceiling.rssMb} MiB, past its ${ceiling.ceilingMb} MiB memory ceiling, while this program ran`;
  if (ceiling && ceiling.runId === pending.message.runId) {
    return { kind: "failed", errorType: "memory_limit", message: `${grew}; the program was stopped and the process restarted.` };
  }
  if (ceiling && ceiling.runId === 0) {
    // No program held the process at that moment, so which one grew it is not known.
    return { kind: "failed", errorType: "memory_limit", message: `${grew}, which may not have been this program's doing; the process was restarted. Call again.`, retriable: true };
  }
  if (pending.overran) {
    return {
      kind: "failed",
      errorType: "timeout",
      message: `The program ran longer than executionTimeoutMs (${pending.timeoutMs} ms) and could not be stopped inside the sandbox; the sandbox process was restarted.`,
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

let shared: SandboxSupervisor | undefined;

/** The process-wide supervisor, created on first use. */
export function sandboxSupervisor(): SandboxSupervisor {
  shared ??= new SandboxSupervisor();
  return shared;
}
