import { createRecord, type HistoryRecord, type SerializedRecord, type Speaker } from "../history/record.ts";
import type { HistoryStore } from "../history/store.ts";
import { buildLogLine } from "../log/log-line.ts";
import { writeLogLine } from "../log/logger.ts";
import type { ResolvedOptions } from "../options.ts";
import type { Outcome } from "../outcome.ts";
import type { ParsedProgram } from "../programs/parse.ts";
import { attemptErrors, type AttemptFailure } from "./repair.ts";

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
  /** The last program, parsed once and reused by the history scan. */
  parsed: ParsedProgram | undefined;
  model: string | undefined;
  attempts: number;
  system: string | undefined;
  user: string | undefined;
  console: readonly string[];
  /** Attempts that failed, oldest first: each one's error feeds the next attempt and the log line. */
  readonly failures: AttemptFailure[];
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
  // One duration for both, so the record and the log line agree.
  const durationMs = performance.now() - draft.startedMs;
  const serialized = buildRecord(draft, outcome, durationMs);
  target.history.append(serialized);
  if (target.options.log !== false) writeLogLine(target.options.log, logLine(target, draft, outcome, durationMs));
  return serialized.record;
}

function buildRecord(draft: CallDraft, outcome: Outcome, durationMs: number): SerializedRecord {
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
    durationMs,
    programSource: draft.code,
  });
}

function logLine(target: FinalizeTarget, draft: CallDraft, outcome: Outcome, durationMs: number): Record<string, unknown> {
  const { options, history } = target;
  return buildLogLine({
    role: target.role,
    model: draft.model ?? options.model ?? null,
    method: draft.method,
    args: draft.args,
    kwargs: draft.kwargs,
    code: draft.code,
    parsed: draft.parsed,
    durationMs,
    attempts: draft.attempts,
    attemptErrors: attemptErrors(draft.failures),
    status: outcome.status,
    errorType: outcome.errorType ?? null,
    traceId: draft.traceId,
    callId: draft.callId,
    parentCallId: draft.parentCallId,
    depth: draft.depth,
    historySize: history.length,
    ...(options.debug
      ? {
          debug: {
            system: draft.system,
            user: draft.user,
            console: draft.console,
            context: target.context,
            historyPreview: history.latest(options.historyPreviewLimit),
          },
        }
      : {}),
  });
}
