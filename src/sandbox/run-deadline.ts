/**
 * The held rule (see `RunSignal` in `./protocol.ts`), written once and used by both processes:
 * a run's deadline counts the run's own time only. Time another run's synchronous part held the
 * sandbox process is not counted: the count stops while such a hold is reported ({@link
 * RunDeadline.pause}; only the host needs this, since the sandbox process's own timers cannot
 * fire during a hold), and exactly the hold's length is taken off ({@link RunDeadline.excuse}).
 * The sandbox process keeps the program's deadline (`timeoutMs`, from just before the program
 * starts), the host a longer one for the same run (see `host/pending-run.ts`), so the sandbox
 * process's fires first and the host's only when the isolate could not be stopped from inside.
 */
export class RunDeadline {
  readonly #budgetMs: number;
  readonly #since: number;
  readonly #onExpire: () => void;
  /** Time holds of other runs took, not counted. */
  #excusedMs = 0;
  #paused = false;
  #over = false;
  #timer: NodeJS.Timeout | undefined;

  /** A deadline `budgetMs` of the run's own time after `since`; `onExpire` is called once when it passes. */
  constructor(budgetMs: number, onExpire: () => void, since = performance.now()) {
    this.#budgetMs = budgetMs;
    this.#since = since;
    this.#onExpire = onExpire;
    this.#arm();
  }

  /** What is left of the run's own time. @unit ms */
  remainingMs(): number {
    return Math.max(0, this.#budgetMs - (performance.now() - this.#since - this.#excusedMs));
  }

  /** Another run's synchronous part holds the process: stop counting until it lets go. */
  pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    clearTimeout(this.#timer);
  }

  /** Another run's synchronous part let go after holding the process `heldMs`: that time is not this run's. */
  excuse(heldMs: number): void {
    this.#excusedMs += heldMs;
    this.#paused = false;
    this.#arm();
  }

  /** No deadline any more (the run ended, or moved on to another deadline). */
  stop(): void {
    this.#over = true;
    clearTimeout(this.#timer);
  }

  #arm(): void {
    clearTimeout(this.#timer);
    if (this.#over || this.#paused) return;
    this.#timer = setTimeout(() => {
      // Timers may fire a little early; the deadline is the count, not the timer.
      if (this.remainingMs() > 0) return this.#arm();
      this.#over = true;
      this.#onExpire();
    }, this.remainingMs());
  }
}
