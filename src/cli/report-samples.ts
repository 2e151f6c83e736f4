/**
 * Single calls a telemetry report shows by call id: the slowest, and the latest that failed.
 * Each list is bounded, so a report over millions of lines keeps only a few calls in memory.
 */

/** One call as the report lists it. */
export interface CallSample {
  readonly callId: string;
  /** When its line was written, as ISO 8601 UTC; null when the line has no timestamp, or one that does not parse. */
  readonly timestamp: string | null;
  readonly role: string;
  readonly method: string;
  readonly durationMs: number | null;
  readonly status: string;
  readonly errorType: string | null;
  /** The error message the line carries (`error_message`), at most {@link MAX_MESSAGE_CHARS} characters; null when it has none. */
  readonly errorMessage: string | null;
  /** Provider attempts (`generation_attempt`). */
  readonly attempts: number | null;
  readonly programSource: string | null;
  readonly toolCalls: number;
  readonly toolErrors: number;
}

/** Longest error message kept per listed call; log lines carry at most 1,000 characters. @unit characters */
export const MAX_MESSAGE_CHARS = 1_000;

/** The longest a line may claim a call took: a year, past any deadline a call could have. @unit ms */
const MAX_SANE_DURATION_MS = 365 * 86_400_000;

/** `duration` when it is a time a call could have taken (0 to a year, in ms); null otherwise. */
export function saneDuration(duration: unknown): number | null {
  return typeof duration === "number" && duration >= 0 && duration <= MAX_SANE_DURATION_MS ? duration : null;
}

/** Whether a call that took `durationMs` would join `slowest` (longest first, at most `limit`): ask before building its sample. */
export function isAmongSlowest(slowest: readonly CallSample[], durationMs: number, limit: number): boolean {
  return slowest.length < limit || durationMs > (slowest.at(-1)?.durationMs ?? -Infinity);
}

/** Adds `sample` to `slowest`, kept longest first and at most `limit` long; ties keep the earlier call. */
export function keepSlowest(slowest: CallSample[], sample: CallSample, limit: number): void {
  const duration = sample.durationMs ?? -Infinity;
  if (!isAmongSlowest(slowest, duration, limit)) return;
  insertBounded(slowest, sample, (other) => (other.durationMs ?? -Infinity) < duration, limit);
}

/** Adds `sample` to `latest`, kept newest first and at most `limit` long (a line without a time counts as oldest). */
export function keepLatest(latest: CallSample[], sample: CallSample, limit: number): void {
  const time = timeOf(sample);
  const last = latest.at(-1);
  if (latest.length >= limit && last !== undefined && time <= timeOf(last)) return;
  insertBounded(latest, sample, (other) => timeOf(other) < time, limit);
}

/** When a sample's call was logged, by its time and not its text (offsets other than Z sort otherwise); -Infinity without one. @unit ms since the epoch */
function timeOf(sample: CallSample): number {
  return sample.timestamp === null ? -Infinity : Date.parse(sample.timestamp);
}

/** Inserts before the first entry `after` holds for, then drops past `limit`. */
function insertBounded(list: CallSample[], sample: CallSample, after: (other: CallSample) => boolean, limit: number): void {
  const index = list.findIndex(after);
  list.splice(index === -1 ? list.length : index, 0, sample);
  if (list.length > limit) list.pop();
}
