import { killGraceMs } from "../limits.ts";
import type { BridgeOutcome, BridgeRequest, RunReport, RunRequestMessage } from "../protocol.ts";
import type { SandboxProcess } from "./sandbox-process.ts";
import { poolTimings } from "./timings.ts";

/** What a run needs from the code that asked for it. */
export interface RunHooks {
  readonly onBridge: (request: BridgeRequest) => Promise<BridgeOutcome>;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Where a run is:
 * - `queued`: sent to a sandbox process that has not yet said its program started. No program
 *   code of it has run, so it may be sent again to another process if this one dies.
 * - `running`: the process said the program started (its first message or signal of it: see
 *   `RunSignal` in `../protocol.ts`).
 * - `cancelling`: its signal aborted once it was running; the process was told to stop it.
 * A run stays on its process's books until the process answers for it or dies ({@link PendingRun.close}),
 * even when its caller was answered earlier (a run cancelled while queued is answered at once).
 */
export type RunPhase = "queued" | "running" | "cancelling";

/**
 * One run on its way through a sandbox process, with the host's deadline for it.
 *
 * The deadline rule, the only place deadlines are set ({@link PendingRun.arm}):
 * - queued: no deadline of its own; its process counts as stuck once the run has waited
 *   `poolTimings.stuckAfterMs` while none of the process's programs runs (it waits as long as
 *   another run holds the process: that run has a deadline of its own). The process checks
 *   its queued runs now and then ({@link PendingRun.queuedMs}) rather than each run keeping a
 *   timer: most runs are answered within a millisecond of being sent.
 * - running: `timeoutMs + killGraceMs(timeoutMs)` of the run's own time, counted from the
 *   first sign that it started (`S`, `B` or a bridge request; a run that answers first needs
 *   none). Time another run's synchronous part held the process is not the run's own (the
 *   held rule in `../protocol.ts`): the count stops while the process reports such a hold
 *   (`B`) and takes off exactly the time the hold lasted (`F`). The sandbox process counts the
 *   same way for the program's own deadline (`timeoutMs`), starting just before the program
 *   does, so its deadline fires first and the host's only when the isolate could not be
 *   stopped from inside.
 * - cancelling: `killGraceMs(timeoutMs)` from the cancel, counted the same way.
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
  /** Its synchronous part has let go of its process (`F`); a busy signal read after that is stale. */
  letGo = false;
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
  #closed = false;
  /** When the current phase began. */
  #since = performance.now();
  /** Time in the current phase that was another run's hold. */
  #excused = 0;
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

  /** Its caller has its answer. */
  get settled(): boolean {
    return this.#settle === undefined;
  }

  /** Off its process's books: no deadline of its applies any more. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Moves to `phase` and sets the deadline that phase has, counted from now. */
  enter(phase: RunPhase): void {
    if (this.#closed || phase === this.phase) return;
    this.phase = phase;
    this.#since = performance.now();
    this.#excused = 0;
    this.arm();
  }

  /** Sets the deadline of the current phase, with the time already counted taken off; a queued run's wait starts over. */
  arm(): void {
    clearTimeout(this.#timer);
    if (this.#closed || this.#paused) return;
    if (this.phase === "queued") {
      this.#since = performance.now();
      return;
    }
    this.#timer = setTimeout(() => {
      // Timers may fire a little early; the deadline is the count, not the timer.
      if (this.remainingMs() > 0) this.arm();
      else this.#onDeadline(this);
    }, this.remainingMs());
  }

  /** How long it has waited unstarted (0 once started). @unit ms */
  queuedMs(): number {
    return this.phase === "queued" && !this.#closed ? performance.now() - this.#since : 0;
  }

  /** What is left of the current phase's deadline (queued runs have none). @unit ms */
  remainingMs(): number {
    const { timeoutMs } = this.message;
    const budget = this.phase === "running" ? timeoutMs + killGraceMs(timeoutMs) : killGraceMs(timeoutMs);
    return Math.max(0, budget - (performance.now() - this.#since - this.#excused));
  }

  /** Another run's synchronous part holds the process: stop counting until it lets go. */
  pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    clearTimeout(this.#timer);
  }

  /** Another run's synchronous part let go after holding the process `heldMs`: that time is not this run's. */
  excuse(heldMs: number): void {
    if (this.phase !== "queued") this.#excused += heldMs;
    this.#paused = false;
    this.arm();
  }

  /** Answers the caller with `report`; later calls do nothing. */
  settle(report: RunReport): void {
    const settle = this.#settle;
    if (settle === undefined) return;
    this.#settle = undefined;
    settle(report);
  }

  /** Takes it off its process's books (answered for, or lost with the process). */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }
}
