/** Fixed per-call sandbox limits (the per-agent ones are options: time and memory). */
export const SANDBOX_LIMITS = {
  /** Largest serialised result (and, separately, context) a program may hand back. @unit characters */
  maxResultChars: 8_000_000,
  /** Console output kept per call, past which lines are dropped with a marker. @unit characters */
  maxConsoleChars: 20_000,
  /** Console lines kept per call. */
  maxConsoleLines: 200,
  /** Requests of the host (`delegate` method calls, tool calls, `fetch`, `content`) one program may make in all. */
  maxDelegateCalls: 256,
  /** `delegate` method calls, tool calls and fetches one program may have in flight at once. */
  maxConcurrentDelegates: 16,
  /** Largest serialised argument list of one `delegate` method call. @unit characters */
  maxDelegateArgumentChars: 1_000_000,
  /** Largest serialised input of one tool call. @unit characters */
  maxToolInputChars: 1_000_000,
  /** Longest URL a program may fetch. @unit characters */
  maxFetchUrlChars: 8_000,
  /** Headers one `fetch` may set, and the longest value of one. */
  maxFetchHeaders: 64,
  maxFetchHeaderChars: 8_192,
  /** Largest body one `fetch` may send. @unit characters */
  maxFetchBodyChars: 1_000_000,
  /** Largest serialised options object of one `delegate(role, options)`. @unit characters */
  maxDelegateOptionChars: 100_000,
  /**
   * Largest answer the host sends a program for one request (a delegated call's value, a kept
   * value), as JSON (shared parts count each time they appear). @unit characters
   */
  maxAnswerChars: 8_000_000,
  /**
   * Deepest nesting of a value that enters the sandbox or stays in context (arguments, context,
   * values the application stores): structured clone, the copy into an isolate and the store's
   * encoding recurse once per level, and overflow the stack somewhat past 1,600.
   */
  maxValueDepth: 500,
  /** Longest error message kept from a program. @unit characters */
  maxErrorMessageChars: 10_000,
  /**
   * How many times a value's JSON limit its encoded form may take on its way out of the
   * isolate (shared parts written once, every reference by index). The encoder stops there;
   * the host then measures the value as expanded JSON against the limit itself.
   */
  encodedCharsPerJsonChar: 6,
} as const;

export type SandboxLimits = typeof SANDBOX_LIMITS;

/** Longest encoded text accepted for a value whose JSON may take `jsonLimit` characters (the encoder's count, with slack). */
export function maxEncodedChars(jsonLimit: number): number {
  return Math.ceil(jsonLimit * SANDBOX_LIMITS.encodedCharsPerJsonChar * 1.25) + 1_024;
}

/**
 * How long after a call's deadline the host waits for the sandbox process to answer before
 * it kills and restarts that process (the isolate could not be stopped from inside).
 */
export function killGraceMs(timeoutMs: number): number {
  return Math.min(2_000, Math.max(150, Math.round(timeoutMs * 0.3)));
}
