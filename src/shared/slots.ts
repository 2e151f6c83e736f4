/**
 * Turns shared by whoever asks: at most `limit` held at once, the others waiting in the order
 * they came; a wait ends when its signal aborts. A subclass may shut the way for a while
 * (`isOpen`) and must then `pump` once it opens again.
 */
interface Waiter {
  readonly resolve: (release: () => void) => void;
  readonly signal: AbortSignal;
  readonly onAbort: () => void;
}

export class Slots {
  readonly limit: number;
  #active = 0;
  /** In arrival order (a Set keeps it), so an aborted wait leaves at once however many wait. */
  readonly #waiting = new Set<Waiter>();

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Turns held. */
  get active(): number {
    return this.#active;
  }

  /** Turns waited for. */
  get queued(): number {
    return this.#waiting.size;
  }

  /**
   * Waits for a turn: resolves with the function that ends it (calling it again does nothing),
   * or rejects with the signal's reason if it aborts first.
   */
  acquire(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const now = this.tryAcquire();
    if (now !== undefined) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        signal,
        onAbort: () => {
          this.#waiting.delete(waiter);
          reject(signal.reason);
        },
      };
      signal.addEventListener("abort", waiter.onAbort, { once: true });
      this.#waiting.add(waiter);
      this.pump();
    });
  }

  /** A turn at once, when one is free and nobody waits; else undefined (then {@link acquire}). */
  tryAcquire(): (() => void) | undefined {
    return this.#waiting.size === 0 && this.isOpen() ? this.#enter() : undefined;
  }

  /** Whether a turn may be given now. */
  protected isOpen(): boolean {
    return this.#active < this.limit;
  }

  /** Gives free turns to those waiting longest. */
  protected pump(): void {
    for (const waiter of this.#waiting) {
      if (!this.isOpen()) return;
      this.#waiting.delete(waiter);
      waiter.signal.removeEventListener("abort", waiter.onAbort);
      waiter.resolve(this.#enter());
    }
  }

  #enter(): () => void {
    this.#active += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#active -= 1;
      this.pump();
    };
  }
}
