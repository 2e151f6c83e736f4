/** Resolves once `condition()` holds, checking every 10 ms; rejects after `timeoutMs`. */
export function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const check = () => {
      if (condition()) resolve();
      else if (Date.now() - started > timeoutMs) reject(new Error("condition not met in time"));
      else setTimeout(check, 10);
    };
    check();
  });
}
