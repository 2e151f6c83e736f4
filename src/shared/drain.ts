/**
 * Calls in flight on something that can be closed (an agent, a store): closing refuses new
 * calls at once, and waits for those in flight to finish, for at most a time limit.
 */
export class Drain {
  #inFlight = 0;
  #closing = false;
  readonly #idle = new Set<() => void>();

  /** Closing or closed: new calls are refused. */
  get closing(): boolean {
    return this.#closing;
  }

  /** A call begins: false (and nothing counted) when closing. */
  enter(): boolean {
    if (this.#closing) return false;
    this.#inFlight += 1;
    return true;
  }

  /** A call that entered has ended. */
  leave(): void {
    this.#inFlight -= 1;
    if (this.#inFlight === 0) for (const idle of this.#idle) idle();
  }

  /** Refuses new calls from now on, and resolves once those in flight ended or `timeoutMs` passed (true: they all ended). */
  async close(timeoutMs: number): Promise<boolean> {
    this.#closing = true;
    if (this.#inFlight === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    let idle: (() => void) | undefined;
    const ended = await new Promise<boolean>((resolve) => {
      idle = () => resolve(true);
      this.#idle.add(idle);
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    clearTimeout(timer);
    this.#idle.delete(idle!);
    return ended;
  }
}

/** How long closing waits for calls in flight by default. @unit ms */
export const DEFAULT_CLOSE_TIMEOUT_MS = 10_000;

/** Reads a close time-limit option (`closeTimeoutMs`, or `name`): a whole number of milliseconds, or the default. */
export function closeTimeout(given: unknown, caller: string, name = "closeTimeoutMs"): number {
  if (given === undefined) return DEFAULT_CLOSE_TIMEOUT_MS;
  if (!Number.isSafeInteger(given) || (given as number) < 0 || (given as number) > 2 ** 31 - 1) throw new TypeError(`${caller} option "${name}" must be a whole number of milliseconds from 0 to ${2 ** 31 - 1}.`);
  return given as number;
}
