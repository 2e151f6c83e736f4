/**
 * Walking an error's causes. Clients wrap what went wrong: `fetch` throws "fetch failed" with
 * the network's error in `cause`, a connection tried on several addresses gathers its errors in
 * an AggregateError, and SDKs wrap both again.
 */

/** The AggregateError members looked at, so a hostile error cannot make a walk long. */
const MAX_GATHERED = 8;

/**
 * `error` and the errors under it, outermost first: each `cause` in turn (followed from Errors
 * only, at most `depth` of them), and after an AggregateError the errors it gathers.
 */
export function causesOf(error: unknown, depth = 8): unknown[] {
  const found: unknown[] = [];
  let current = error;
  for (let link = 0; link < depth && current !== undefined && current !== null; link += 1) {
    found.push(current);
    if (current instanceof AggregateError && Array.isArray(current.errors)) found.push(...current.errors.slice(0, MAX_GATHERED));
    if (!(current instanceof Error)) break;
    current = current.cause;
  }
  return found;
}

/** The innermost Error of `error`'s chain of causes (an AggregateError's first error in its place), or `error` when it is none. */
export function innermostError(error: unknown, depth = 8): unknown {
  let innermost = error;
  for (let link = 0; innermost instanceof Error && innermost.cause instanceof Error && link < depth; link += 1) innermost = innermost.cause;
  if (innermost instanceof AggregateError && Array.isArray(innermost.errors) && innermost.errors[0] instanceof Error) innermost = innermost.errors[0];
  return innermost;
}

/** The `code` an error carries (Node's and undici's `ECONNREFUSED`, `UND_ERR_SOCKET`, …), when it is a string. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === "string" ? code : undefined;
}
