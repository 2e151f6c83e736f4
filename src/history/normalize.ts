import { asJsonSafe, ERROR_TYPES } from "../shared/index.ts";
import type { HistoryRecord } from "./record.ts";

const SPEAKERS = new Set(["user", "tool", "agent"]);
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function warn(debug: boolean, message: string): void {
  if (debug) process.emitWarning(message, { code: "IMPROV_HISTORY" });
}

/** Why `entry` is not a valid record, or `undefined` when it is. */
export function recordProblem(entry: unknown): string | undefined {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) return "it is not an object";
  const record = entry as Record<string, unknown>;
  if (typeof record.call_id !== "string" || record.call_id === "") return "call_id is not a non-empty string";
  if (typeof record.timestamp !== "string" || !ISO_TIMESTAMP.test(record.timestamp)) return "timestamp is not ISO 8601 UTC with milliseconds";
  if (typeof record.speaker !== "string" || !SPEAKERS.has(record.speaker)) return 'speaker is not "user", "tool" or "agent"';
  if (typeof record.method_name !== "string") return "method_name is not a string";
  if (!Array.isArray(record.args)) return "args is not an array";
  if (typeof record.kwargs !== "object" || record.kwargs === null || Array.isArray(record.kwargs)) return "kwargs is not an object";
  const summary = record.outcome_summary as Record<string, unknown> | null | undefined;
  if (typeof summary !== "object" || summary === null) return "outcome_summary is not an object";
  if (summary.status !== "ok" && summary.status !== "error") return 'outcome_summary.status is not "ok" or "error"';
  if (typeof summary.ok !== "boolean" || typeof summary.retriable !== "boolean") return "outcome_summary.ok or .retriable is not a boolean";
  if (summary.error_type !== null && !(ERROR_TYPES as readonly unknown[]).includes(summary.error_type)) return "outcome_summary.error_type is not a known error type or null";
  return undefined;
}

/**
 * History given by the application: a non-array becomes `[]`, malformed entries are
 * dropped with a warning, and valid ones are kept as JSON-safe copies, yielded as their JSON
 * text one at a time (so a large history is never held twice). The warning for a non-array
 * appears in debug mode only.
 */
export function* normalizeHistory(value: unknown, debug: boolean): Generator<string, void, undefined> {
  if (!Array.isArray(value)) {
    warn(debug, "conversation_history must be an array of records; it was replaced by an empty history.");
    return;
  }
  for (let index = 0; index < value.length; index += 1) {
    const entry: unknown = value[index];
    const problem = recordProblem(entry);
    if (problem === undefined) yield JSON.stringify(asJsonSafe(entry));
    else warn(true, `conversation_history[${index}] was dropped: ${problem}.`);
  }
}
