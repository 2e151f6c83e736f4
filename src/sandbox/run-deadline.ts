/**
 * The held rule (see `RunSignal` in `./protocol.ts`), written once and used by both processes:
 * a run's deadline counts the run's own time only. Time another run's synchronous part held the
 * sandbox process is not counted: the count stops while such a hold is reported ({@link
 * RunDeadline.pause}; only the host needs this, since the sandbox process's own timers cannot
 * fire during a hold), and exactly the hold's length is taken off ({@link RunDeadline.excuse}).
 * The sandbox process keeps the program's deadline (`timeoutMs`, from just before the program
 * starts), the host a longer one for the same run (see `host/pending-run.ts`), so the sandbox
 * process's fires first and the host's only when the isolate could not be stopped from inside.
 *
 * Time the program waits for the host (a bridge request in flight: a delegated call, `content`)
 * is not its own either: the deadline cannot pass during such a wait ({@link
 * RunDeadline.waitBegan}), and when the last one ends ({@link RunDeadline.waitEnded}) the wait
 * is taken off, less what the program itself ran meanwhile (a continuation running beside a
 * request still in flight), which the sandbox process measures and watches during the wait.
 */
export class RunDeadline {
  readonly #budgetMs: number;
  readonly #since: number;
  readonly #onExpire: () => void;
  /** Time holds of other runs took, not counted. */
  #excusedMs = 0;
  #paused = false;
  #over = false;
  /** Bridge requests in flight; the first began at `#waitSince`, when `#excusedMs` was `#excusedAtWait`. */
  #waits = 0;
  #waitSince = 0;
  #excusedAtWait = 0;
  #timer: NodeJS.Timeout | undefined;

  /**
   * A deadline `budgetMs` of the run's own time after `since`; `onExpire` is called once when it
   * passes. `waits`: requests of the program's already in flight, the first sent now.
   */
  constructor(budgetMs: number, onExpire: () => void, since = performance.now(), waits = 0) {
    this.#budgetMs = budgetMs;
    this.#since = since;
    this.#onExpire = onExpire;
    if (waits > 0) {
      this.#waits = waits;
      this.#waitSince = performance.now();
    }
    this.arm();
  }

  /** What is left of the run's own time (while it waits for the host: what was left when the wait began). @unit ms */
  remainingMs(): number {
    const counted = this.#waits > 0 ? this.#waitSince - this.#since - this.#excusedAtWait : performance.now() - this.#since - this.#excusedMs;
    return Math.max(0, this.#budgetMs - counted);
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
    this.arm();
  }

  /** Whether the program waits for the host now. */
  get waiting(): boolean {
    return this.#waits > 0;
  }

  /** A request of the program's went to the host: until the last such ends, the deadline does not pass. */
  waitBegan(): void {
    this.#waits += 1;
    if (this.#waits > 1) return;
    this.#waitSince = performance.now();
    this.#excusedAtWait = this.#excusedMs;
    clearTimeout(this.#timer);
  }

  /**
   * A request's answer came. When it was the last in flight, the wait is taken off, less
   * `ranMs` (what the program ran during it, which is its own time) and less the holds already
   * taken off during it. `arm: false` when the program now runs in an entry bounded by its own
   * time limit: the caller arms the deadline again (see {@link arm}) if the program goes on.
   */
  waitEnded(ranMs = 0, arm = true): void {
    if (this.#waits === 0) return;
    this.#waits -= 1;
    if (this.#waits > 0) return;
    const held = this.#excusedMs - this.#excusedAtWait;
    this.#excusedMs += Math.max(0, performance.now() - this.#waitSince - ranMs - held);
    if (arm) this.arm();
  }

  /** No deadline any more (the run ended, or moved on to another deadline). */
  stop(): void {
    this.#over = true;
    clearTimeout(this.#timer);
  }

  /** Sets the timer for what is left, unless the deadline waits, is paused or is over. */
  arm(): void {
    clearTimeout(this.#timer);
    if (this.#over || this.#paused || this.#waits > 0) return;
    this.#timer = setTimeout(() => {
      // Timers may fire a little early; the deadline is the count, not the timer.
      if (this.remainingMs() > 0) return this.arm();
      this.#over = true;
      this.#onExpire();
    }, this.remainingMs());
  }
}
