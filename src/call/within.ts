/**
 * Waiting for code improv does not control (a provider, a tool, its schema, an approval): within
 * a time limit and a signal, answered as soon as either ends the wait. Code that ignores its
 * signal does not hold the caller: its late answer is ignored and its late rejection handled.
 */

/** How the wait ended: the work's value, or why not (its time was up, the signal aborted, or it threw). */
export type Within<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly why: "timeout" | "aborted" | "threw"; readonly error: unknown };

/**
 * Runs `work` with a signal that aborts when `signal` does or `limitMs` passes (none when it is
 * not finite). `timeoutReason` is the abort reason of a time-out, made only then: capturing an
 * error's stack costs more than the rest of this setup.
 */
export async function within<T>(limitMs: number, signal: AbortSignal | undefined, timeoutReason: () => unknown, work: (signal: AbortSignal) => T | PromiseLike<T>): Promise<Within<Awaited<T>>> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = Number.isFinite(limitMs)
    ? setTimeout(() => {
        timedOut = true;
        controller.abort(timeoutReason());
      }, limitMs)
    : undefined;
  const onAbort = () => controller.abort(signal?.reason);
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const stopped = new Promise<never>((_, reject) => {
      if (controller.signal.aborted) reject(controller.signal.reason);
      else controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true });
    });
    let pending: Promise<Awaited<T>>;
    try {
      pending = Promise.resolve(work(controller.signal)) as Promise<Awaited<T>>;
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.catch(() => undefined); // It may reject after the race is lost; that must not go unhandled.
    return { ok: true, value: await Promise.race([pending, stopped]) };
  } catch (error) {
    return { ok: false, why: timedOut ? "timeout" : controller.signal.aborted ? "aborted" : "threw", error };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}
