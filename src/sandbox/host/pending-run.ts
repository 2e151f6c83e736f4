import { killGraceMs } from "../limits.ts";
import type { BridgeAnswer, BridgeRequest, RunReport, RunRequestMessage } from "../protocol.ts";
import { RunDeadline } from "../run-deadline.ts";
import { poolTimings } from "./timings.ts";

/**
 * The reason a run's signal gives when the run ends. Made once: an abort without a reason makes
 * a DOMException, whose stack costs more than the rest of a short bridge request.
 */
const RUN_ENDED: Error = Object.freeze(Object.assign(new Error("The program's run has ended."), { name: "AbortError" }));

/** What a bridge handler knows of the run whose program asked. */
export interface AskingRun {
  /** Aborts when the run ends: its outcome, its deadline, a cancel, or its sandbox process lost. */
  readonly signal: AbortSignal;
  /** The time the run has left: its call's (its waits for the host do not count against its own time). @unit ms */
  timeLeftMs(): number;
}

/** What a run needs from the code that asked for it. */
export interface RunHooks {
  /** Answers one of the program's bridge requests; may reject (the program then gets a failure). */
  readonly onBridge: (request: BridgeRequest, run: AskingRun) => Promise<BridgeAnswer>;
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
 * The deadline rule, the only place deadlines are set ({@link PendingRun.enter}):
 * - queued: no deadline of its own; its process counts as stuck once the run has waited
 *   `poolTimings.stuckAfterMs` while none of the process's programs runs (it waits as long as
 *   another run holds the process: that run has a deadline of its own). The process checks
 *   its queued runs now and then ({@link PendingRun.queuedMs}) rather than each run keeping a
 *   timer: most runs are answered within a millisecond of being sent.
 * - running: `timeoutMs + killGraceMs(timeoutMs)` of the run's own time, counted from the
 *   first sign that it started (`S`, `B` or a bridge request; a run that answers first needs
 *   none), by the held rule (`../run-deadline.ts`, shared with the sandbox process, which
 *   counts the program's own `timeoutMs` the same way from just before the program starts),
 *   its waits for the host's answers not counted; and in any case `killGraceMs(timeoutMs)`
 *   after the end of its call's time (`callTimeLeftMs` from when it was sent).
 * - cancelling: `killGraceMs(timeoutMs)` from the cancel, counted the same way.
 * When the host's deadline fires, the process is killed and the run ends by its phase.
 */
export class PendingRun {
  phase: RunPhase = "queued";
  /** Times it was sent again after its process died before it started. */
  resends = 0;
  /** It held its process past the busy grace (its synchronous part, or an entry of an answer to one of its requests). */
  heldLong = false;
  /** Why its latest process could not run it, when that process died or never started. */
  lostBecause: string | undefined;
  /** Its host deadline passed: the process was killed to stop it. */
  overran = false;
  /** The deadline that passed was its call's (`callTimeoutMs`), not its own time's. */
  pastCallTime = false;
  /** Cancelled by its signal: if the process has to be killed to stop it, it still ends as cancelled. */
  cancelled = false;
  readonly message: RunRequestMessage;
  readonly hooks: RunHooks;
  #settle: ((report: RunReport) => void) | undefined;
  #onDeadline: (run: PendingRun) => void;
  #deadline: RunDeadline | undefined;
  #closed = false;
  /** When it was sent (or sent again) while queued. */
  #queuedSince = performance.now();
  /** Another run's synchronous part holds the process. */
  #paused = false;
  /** Its program's requests whose answers have not gone back yet. */
  #waits = 0;
  /** Made when its program first asks the host for something; aborted when it ends. */
  #ended: AbortController | undefined;
  /** When its call's time ends (on `performance.now()`'s clock), and the timer that kills past it. */
  readonly #callEndsAt: number;
  #callTimer: NodeJS.Timeout | undefined;

  constructor(message: RunRequestMessage, hooks: RunHooks, settle: (report: RunReport) => void, onDeadline: (run: PendingRun) => void) {
    this.message = message;
    this.hooks = hooks;
    this.#settle = settle;
    this.#onDeadline = onDeadline;
    this.#callEndsAt = performance.now() + message.callTimeLeftMs;
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

  /** What the handler of one of its program's bridge requests knows of it. */
  get asking(): AskingRun {
    this.#ended ??= new AbortController();
    if (this.settled || this.#closed) this.#ended.abort(RUN_ENDED);
    return { signal: this.#ended.signal, timeLeftMs: () => this.#timeLeftMs() };
  }

  /** Moves to `phase` and sets the deadline that phase has, counted from now. */
  enter(phase: RunPhase): void {
    if (this.#closed || phase === this.phase) return;
    this.phase = phase;
    this.#deadline?.stop();
    if (phase === "queued") {
      this.#deadline = undefined;
      this.restartWait();
      return;
    }
    const { timeoutMs } = this.message;
    // A cancelled run's grace is not extended by its waits: it must stop now.
    const waits = phase === "running" ? this.#waits : 0;
    this.#deadline = new RunDeadline(phase === "running" ? timeoutMs + killGraceMs(timeoutMs) : killGraceMs(timeoutMs), () => this.#onDeadline(this), performance.now(), waits);
    if (this.#paused) this.#deadline.pause();
    this.#callTimer ??= setTimeout(() => {
      this.pastCallTime = true;
      this.#onDeadline(this);
    }, Math.max(0, this.#callEndsAt - performance.now()) + killGraceMs(timeoutMs));
  }

  /** Its program sent the host a request: until its program has the answer (`R`), the wait is not its own time. */
  waitBegan(): void {
    this.#waits += 1;
    if (this.phase === "running") this.#deadline?.waitBegan();
  }

  /** Its program has the answer to one of its requests and runs on. */
  waitEnded(): void {
    if (this.#waits === 0) return;
    this.#waits -= 1;
    if (this.phase === "running") this.#deadline?.waitEnded();
  }

  /** A queued run's wait starts over (it was sent again, or waited behind a run that holds its process). */
  restartWait(): void {
    this.#queuedSince = performance.now();
  }

  /** How long it has waited unstarted (0 once started). @unit ms */
  queuedMs(): number {
    return this.phase === "queued" && !this.#closed ? performance.now() - this.#queuedSince : 0;
  }

  /** What is left of its call's time (`callTimeoutMs`). @unit ms */
  callTimeLeftMs(): number {
    return Math.max(0, this.#callEndsAt - performance.now());
  }

  /** The time the run has left: its waits for the host do not count against its own time, so what bounds them is its call's time. @unit ms */
  #timeLeftMs(): number {
    return this.#closed ? 0 : this.callTimeLeftMs();
  }

  /** Another run's synchronous part holds the process: stop counting until it lets go. */
  pause(): void {
    this.#paused = true;
    this.#deadline?.pause();
  }

  /** Another run's synchronous part let go after holding the process `heldMs`: that time is not this run's. */
  excuse(heldMs: number): void {
    this.#paused = false;
    if (this.#deadline === undefined) this.restartWait();
    else this.#deadline.excuse(heldMs);
  }

  /** Answers the caller with `report`; later calls do nothing. */
  settle(report: RunReport): void {
    const settle = this.#settle;
    if (settle === undefined) return;
    this.#settle = undefined;
    this.#ended?.abort(RUN_ENDED);
    settle(report);
  }

  /** Takes it off its process's books (answered for, or lost with the process). */
  close(): void {
    this.#closed = true;
    this.#deadline?.stop();
    clearTimeout(this.#callTimer);
    this.#ended?.abort(RUN_ENDED);
  }
}
