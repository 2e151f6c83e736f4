import { killGraceMs } from "../limits.ts";
import type { BridgeOutcome, BridgeRequest, RunReport, RunRequestMessage } from "../protocol.ts";
import type { SandboxProcess } from "./sandbox-process.ts";

/** What a run needs from the code that asked for it. */
export interface RunHooks {
  readonly onBridge: (request: BridgeRequest) => Promise<BridgeOutcome>;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Where a run is:
 * - `queued`: sent to a sandbox process that has not yet said its program started. No program
 *   code of it has run, so it may be sent again to another process if this one dies.
 * - `running`: the process said the program is about to start (the `S` signal).
 * - `cancelling`: its signal aborted while it ran; the process was told to stop it.
 * A run leaves these states exactly once, through `settle`.
 */
export type RunPhase = "queued" | "running" | "cancelling";

/**
 * How often a queued run checks that its process is not stuck: it waits as long as another
 * run holds the process (that run has a deadline of its own), and otherwise at most this long.
 */
export const QUEUED_CHECK_MS = 10_000;

/**
 * One run on its way through a sandbox process, with the host's deadline for it.
 *
 * The deadline rule, the only place deadlines are set ({@link PendingRun.arm}):
 * - queued: no deadline of its own; see {@link QUEUED_CHECK_MS}.
 * - running: `timeoutMs + killGraceMs(timeoutMs)` of the run's own time, counted from the
 *   `S` signal and paused while its process reports another run's synchronous part holding it
 *   (a program is never charged for time spent behind another). The sandbox process starts the
 *   program's own deadline (`timeoutMs`, inside the isolate and on its wall clock) after it
 *   writes `S`, so it fires first and the host's fires only when the isolate could not be
 *   stopped from inside.
 * - cancelling: `killGraceMs(timeoutMs)` from the cancel.
 * When the host's deadline fires, the process is killed and the run ends by its phase.
 */
export class PendingRun {
  phase: RunPhase = "queued";
  /** Times it was sent again after its process died before it started. */
  resends = 0;
  /** Sends it to a process (set by the pool; used again when its process dies before it starts). */
  sendTo: (target: SandboxProcess) => void = () => undefined;
  /** Its synchronous part held its process past the busy grace. */
  heldLong = false;
  /** Why its latest process could not run it, when that process died or never started. */
  lostBecause: string | undefined;
  /** Its host deadline passed: the process was killed to stop it. */
  overran = false;
  /** Cancelled by its signal: if the process has to be killed to stop it, it still ends as cancelled. */
  cancelled = false;
  readonly message: RunRequestMessage;
  readonly hooks: RunHooks;
  #settle: ((report: RunReport) => void) | undefined;
  #onDeadline: (run: PendingRun) => void;
  #timer: NodeJS.Timeout | undefined;
  /** When the current stretch of counted time began (running), or undefined while paused. */
  #armedAt: number | undefined;
  /** Time already counted against the running deadline before the current stretch. */
  #counted = 0;
  #paused = false;

  constructor(message: RunRequestMessage, hooks: RunHooks, settle: (report: RunReport) => void, onDeadline: (run: PendingRun) => void) {
    this.message = message;
    this.hooks = hooks;
    this.#settle = settle;
    this.#onDeadline = onDeadline;
  }

  get runId(): number {
    return this.message.runId;
  }

  get agentId(): string {
    return this.message.agentId;
  }

  get settled(): boolean {
    return this.#settle === undefined;
  }

  /** Moves to `phase` (or stays) and sets the deadline that phase has. */
  enter(phase: RunPhase): void {
    if (this.settled) return;
    if (phase === "running" && this.phase === "queued") this.#counted = 0;
    this.phase = phase;
    this.#paused = false;
    this.arm();
  }

  /** Sets the deadline of the current phase from now, with time already counted taken off. */
  arm(): void {
    clearTimeout(this.#timer);
    this.#armedAt = undefined;
    if (this.settled || this.#paused) return;
    const { timeoutMs } = this.message;
    let ms: number;
    if (this.phase === "queued") ms = QUEUED_CHECK_MS;
    else if (this.phase === "cancelling") ms = killGraceMs(timeoutMs);
    else {
      ms = Math.max(0, timeoutMs + killGraceMs(timeoutMs) - this.#counted);
      this.#armedAt = performance.now();
    }
    this.#timer = setTimeout(() => this.#onDeadline(this), ms);
  }

  /**
   * Another run has held the process for `heldMs` already: stop counting this one's running
   * time, from when that hold began (as the sandbox process's own deadline does).
   */
  pause(heldMs: number): void {
    if (this.settled || this.phase !== "running" || this.#paused) return;
    if (this.#armedAt !== undefined) this.#counted += Math.max(0, performance.now() - this.#armedAt - heldMs);
    this.#paused = true;
    this.arm();
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.arm();
  }

  /** Ends the run with `report`; later calls do nothing. */
  settle(report: RunReport): void {
    const settle = this.#settle;
    if (settle === undefined) return;
    this.#settle = undefined;
    clearTimeout(this.#timer);
    settle(report);
  }
}
