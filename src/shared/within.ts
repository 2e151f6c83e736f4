/**
 * Waiting for code improv does not control (a provider, a tool, its schema, an approval): within
 * a time limit and a signal, answered as soon as either ends the wait. Code that ignores its
 * signal does not hold the caller: its late answer is ignored and its late rejection handled.
 */

/** The longest delay `setTimeout` keeps (about 24.8 days). @unit ms */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** How the wait ended: the work's value, or why not (its time was up, the signal aborted, or it threw). */
export type Within<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly why: "timeout" | "aborted" | "threw"; readonly error: unknown };

/**
 * Runs `work` with a signal that aborts when `signal` does or `limitMs` passes (none when it is
 * not finite). `timeoutReason` is the abort reason of a time-out, made only then: capturing an
 * error's stack costs more than the rest of this setup.
 */
export async function within<T>(limitMs: number, signal: AbortSignal | undefined, timeoutReason: () => unknown, work: (signal: AbortSignal) => T | PromiseLike<T>): Promise<Within<Awaited<T>>> {
  const controller = new AbortController();
  // Ends the race once there is one; a listener on the signal handed to the work would cost as much again.
  let stop: ((reason: unknown) => void) | undefined;
  const onAbort = () => {
    controller.abort(signal?.reason);
    stop?.(signal?.reason);
  };
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  try {
    const result = work(controller.signal);
    // Answered at once (a tool that computes, say): no time limit to keep, no race to run.
    if (!isThenable(result)) {
      if (controller.signal.aborted) throw controller.signal.reason;
      return { ok: true, value: result as Awaited<T> };
    }
    // Made first: a promise whose `constructor` getter throws makes this throw, before any race exists to leave unhandled.
    const pending = Promise.resolve(result) as Promise<Awaited<T>>;
    pending.then(undefined, () => undefined); // It may reject after the race is lost; that must not go unhandled.
    // Aborted before or while the work started: the answer is that, as for work that answered at once.
    if (controller.signal.aborted) throw controller.signal.reason;
    const stopped = new Promise<never>((_, reject) => {
      stop = reject;
      if (Number.isFinite(limitMs)) {
        // Past the longest delay a timer takes, Node would fire it after 1 ms.
        timer = setTimeout(() => {
          timedOut = true;
          const reason = timeoutReason();
          controller.abort(reason);
          reject(reason);
        }, Math.min(limitMs, MAX_TIMER_MS));
      }
    });
    return { ok: true, value: await Promise.race([pending, stopped]) };
  } catch (error) {
    return { ok: false, why: timedOut ? "timeout" : controller.signal.aborted ? "aborted" : "threw", error };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}

/** Whether `value` is a promise or a thenable (reading its `then` may throw: that is the work's failure). */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" || typeof value === "function") && value !== null && typeof (value as { then?: unknown }).then === "function";
}
