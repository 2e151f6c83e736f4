import type { ErrorType, OutcomeStatus } from "../outcome.ts";
import type { JsonValue } from "./json-safe.ts";

/** Who made a call: application code, generated code through `delegate`, or (reserved) an agent. */
export type Speaker = "user" | "tool" | "agent";

/** The outcome of a call, as history keeps it (the full value is not stored). */
export interface OutcomeSummary {
  readonly status: OutcomeStatus;
  readonly ok: boolean;
  readonly error_type: ErrorType | null;
  readonly retriable: boolean;
  /** The class of the returned value (`number`, `array`, `Date`, …); only when ok. */
  readonly value_class?: string;
}

/**
 * One canonical history record: exactly one per dynamic call, JSON-safe throughout.
 * Required keys never change; optional keys may be absent.
 */
export interface HistoryRecord {
  readonly call_id: string;
  /** ISO 8601 UTC with milliseconds. */
  readonly timestamp: string;
  readonly speaker: Speaker;
  readonly method_name: string;
  readonly args: readonly JsonValue[];
  readonly kwargs: Readonly<Record<string, JsonValue>>;
  readonly outcome_summary: OutcomeSummary;
  readonly trace_id?: string;
  readonly parent_call_id?: string;
  readonly depth?: number;
  readonly duration_ms?: number;
  readonly error_type?: ErrorType;
  readonly error_message?: string;
  readonly program_source?: string;
  readonly artifact_hit?: boolean;
}

/** The keys every record has. */
export const REQUIRED_RECORD_KEYS = ["call_id", "timestamp", "speaker", "method_name", "args", "kwargs", "outcome_summary"] as const;
