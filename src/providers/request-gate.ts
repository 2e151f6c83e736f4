/**
 * Requests to one provider, from every agent that uses it: at most so many at once, the rest
 * queued in improv in arrival order; and after a server asked to slow down (HTTP 429 with a
 * wait), none sent until that wait is over. 500 calls fired at once then draw a steady stream of
 * requests, not 500 requests and a wall of 429 answers.
 */
import { describeType, Slots } from "../shared/index.ts";
import type { Provider } from "./provider.ts";

/**
 * The longest a server's wait pauses a provider for every agent: a `Retry-After` of a year, taken
 * as given, would stop it for the process's life. @unit ms
 */
export const MAX_PAUSE_MS = 5 * 60_000;

/** Requests a provider sends at once unless its `maxConcurrentRequests` says otherwise. */
export const DEFAULT_MAX_CONCURRENT_REQUESTS = 16;

/** Checks a `maxConcurrentRequests` option: a whole number ≥ 1, or `Infinity` for no cap. */
export function checkMaxConcurrentRequests(value: unknown, owner: string): void {
  if (value === undefined || value === Number.POSITIVE_INFINITY) return;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`${owner} option "maxConcurrentRequests" must be a whole number of at least 1 (or Infinity for no cap), got ${describeType(value)}.`);
  }
}

/** The gate of one provider: its turns, shut while a server's wait lasts. */
export class RequestGate extends Slots {
  #pausedUntil = 0;
  #timer: NodeJS.Timeout | undefined;

  /**
   * Sends nothing more for `ms` milliseconds (a server's `Retry-After`), at most
   * {@link MAX_PAUSE_MS}: a wait that is no number is none.
   */
  pauseFor(ms: number): void {
    if (!(ms > 0)) return;
    this.#pausedUntil = Math.max(this.#pausedUntil, performance.now() + Math.min(ms, MAX_PAUSE_MS));
  }

  /** How long the gate stays shut by a pause from now; 0 when it is not paused. @unit ms */
  pausedForMs(): number {
    return Math.max(0, this.#pausedUntil - performance.now());
  }

  protected override isOpen(): boolean {
    return super.isOpen() && performance.now() >= this.#pausedUntil;
  }

  protected override pump(): void {
    super.pump();
    // Waiters left with a turn free are held by the pause alone: wake for its end. At least 1 ms
    // on, as the pause may have ended since the loop read the clock (none left would wake them).
    if (this.queued > 0 && this.active < this.limit && this.#timer === undefined) {
      this.#timer = setTimeout(
        () => {
          this.#timer = undefined;
          this.pump();
        },
        Math.min(MAX_PAUSE_MS, Math.max(1, Math.ceil(this.#pausedUntil - performance.now()))),
      );
    }
  }
}

const gates = new WeakMap<Provider, RequestGate>();

/** The gate of `provider`, made on first use from its `maxConcurrentRequests` (or the default). */
export function gateOf(provider: Provider): RequestGate {
  let gate = gates.get(provider);
  if (gate === undefined) {
    const given: unknown = provider.maxConcurrentRequests;
    const valid = given === Number.POSITIVE_INFINITY || (typeof given === "number" && Number.isSafeInteger(given) && given >= 1);
    gate = new RequestGate(valid ? (given as number) : DEFAULT_MAX_CONCURRENT_REQUESTS);
    gates.set(provider, gate);
  }
  return gate;
}
