/** What the sandbox process's main thread and its memory-watch thread share. */
import { MAX_HOLD } from "../protocol.ts";

/** Indexes into the shared `Int32Array`. */
export const WATCH_SLOTS = {
  /** The process's memory ceiling. @unit MiB */
  ceilingMb: 0,
  /** Runs in progress; the watch sleeps while there are none. */
  activeRuns: 1,
  /** The run whose synchronous part holds the main thread, or 0. */
  syncRunId: 2,
  /** Never written: waiting on it is a sleep. */
  never: 3,
  /** Counts holds, so that two holds in a row by one run (its synchronous part, an answer's entry, its tidying) are told apart. */
  holds: 4,
} as const;

export interface MemoryWatchData {
  readonly state: SharedArrayBuffer;
  /** The file descriptor of the report pipe to the host. */
  readonly reportFd: number;
}

/** A hold's number as the reports give it, from the watch's counter (which wraps as an Int32). */
export function holdNumber(counter: number): number {
  return counter & MAX_HOLD;
}
