import { toJsonSafe } from "../history/json-safe.ts";
import { createRecord, type HistoryRecord, type Speaker } from "../history/record.ts";
import type { HistoryStore } from "../history/store.ts";
import { writeLogLine } from "../log/logger.ts";
import type { ResolvedOptions } from "../options.ts";
import type { Outcome } from "../outcome.ts";

/** Everything a call learned along the way, for its record and log line. */
export interface CallDraft {
  readonly callId: string;
  readonly role: string;
  readonly method: string;
  readonly speaker: Speaker;
  readonly traceId: string;
  readonly parentCallId: string | undefined;
  readonly depth: number;
  readonly startedAt: Date;
  readonly startedMs: number;
  args: readonly unknown[];
  kwargs: Readonly<Record<string, unknown>>;
  code: string | null;
  model: string | undefined;
  attempts: number;
  system: string | undefined;
  user: string | undefined;
  console: readonly string[];
  finalized: boolean;
}

/** What finalize needs of the agent. */
export interface FinalizeTarget {
  readonly role: string;
  readonly options: ResolvedOptions;
  readonly history: HistoryStore;
  readonly context: Record<string, unknown>;
}

/**
 * The single end of every dynamic call, on every path: append exactly one history record,
 * then write one log line. Running it twice for one call is a bug, so it refuses to.
 */
export function finalize(target: FinalizeTarget, draft: CallDraft, outcome: Outcome): HistoryRecord | undefined {
  if (draft.finalized) return undefined;
  draft.finalized = true;
  const record = buildRecord(draft, outcome);
  target.history.append(record);
  if (target.options.log !== false) writeLogLine(target.options.log, logLine(target, draft, outcome));
  return record;
}

function buildRecord(draft: CallDraft, outcome: Outcome): HistoryRecord {
  return createRecord({
    callId: draft.callId,
    startedAt: draft.startedAt,
    speaker: draft.speaker,
    method: draft.method,
    args: draft.args,
    kwargs: draft.kwargs,
    outcome,
    traceId: draft.traceId,
    parentCallId: draft.parentCallId,
    depth: draft.depth,
    durationMs: performance.now() - draft.startedMs,
    programSource: draft.code,
  });
}

function logLine(target: FinalizeTarget, draft: CallDraft, outcome: Outcome): Record<string, unknown> {
  const line: Record<string, unknown> = {
    timestamp: new Date().toISOString(),
    runtime: "improv",
    role: target.role,
    model: draft.model ?? target.options.model ?? null,
    method: draft.method,
    args: toJsonSafe(draft.args),
    kwargs: toJsonSafe(draft.kwargs),
    code: draft.code,
    duration_ms: Math.round((performance.now() - draft.startedMs) * 1000) / 1000,
    generation_attempt: draft.attempts,
    outcome_status: outcome.status,
    error_type: outcome.errorType ?? null,
    trace_id: draft.traceId,
    call_id: draft.callId,
    parent_call_id: draft.parentCallId ?? null,
    depth: draft.depth,
    history_record_appended: true,
    conversation_history_size: target.history.length,
  };
  if (target.options.debug) {
    line.system_prompt = draft.system ?? null;
    line.user_prompt = draft.user ?? null;
    line.console = draft.console;
  }
  return line;
}
