import { configure } from "safe-stable-stringify";
import { type ErrorType, type JsonValue, type OutcomeStatus, toJsonSafe, truncateString } from "../shared/index.ts";
import type { HistoryRecord, ProgramSource } from "../history/index.ts";
import type { ParsedProgram } from "../programs/index.ts";
import { scanProgram, scanToolUse } from "../telemetry/index.ts";
import { redactData, type Redactor } from "../egress/index.ts";
import { type EffectState, noEffects } from "../tools/index.ts";

/** The name of this runtime in log lines, so logs of several runtimes can be told apart. */
export const RUNTIME_NAME = "improv";

/** Longest error message a log line carries, as for `attempt_errors`. @unit characters */
export const MAX_LOGGED_ERROR_CHARS = 1_000;

/** Longest model and provider name a log line carries, as the record's. @unit characters */
const MAX_LOGGED_NAME_CHARS = 200;

/** Largest debug context snapshot kept in a log line. @unit bytes */
export const MAX_CONTEXT_SNAPSHOT_BYTES = 8 * 1024;

const serialize = configure({ circularValue: "[Circular]", bigint: false });

/** What one call contributes to its log line. */
export interface LogLineInput {
  readonly role: string;
  readonly model: string | null;
  /** The name of the provider that wrote the call's program; null when none did. */
  readonly provider: string | null;
  readonly method: string;
  readonly args: readonly unknown[];
  readonly kwargs: Readonly<Record<string, unknown>>;
  readonly code: string | null;
  readonly parsed: ParsedProgram | undefined;
  readonly durationMs: number;
  /** What the call's requests cost in US dollars by the agent's `pricing`; null when not known. */
  readonly costUsd?: number | null;
  readonly attempts: number;
  /**
   * Tokens the providers reported, summed over the call's attempts; null when they reported none
   * (0 and 0 when no request was made). `cached` (read from a prompt cache) and `cacheWrite` are
   * null when no request reported them.
   */
  readonly tokens: { readonly prompt: number; readonly completion: number; readonly cached: number | null; readonly cacheWrite: number | null } | null;
  /** Where the program came from, or null when there was none. */
  readonly programSource?: ProgramSource | null;
  /** Whether a kept program's run ended the call. */
  readonly artifactHit?: boolean;
  /** For a call whose new program worked: whether it was kept for reuse, and why. */
  readonly reuseDecision?: { readonly kept: boolean; readonly reason: string } | undefined;
  /** Whether the kept program that ran for this call failed by its own mistake once too often in a row, and was dropped. */
  readonly keptProgramDropped?: boolean;
  /** Why each failed attempt failed, oldest first. */
  readonly attemptErrors: readonly { readonly attempt: number; readonly error_type: ErrorType; readonly error_message: string }[];
  readonly status: OutcomeStatus;
  readonly errorType: ErrorType | null;
  /** The failed call's error message; null (or absent) for an ok call. */
  readonly errorMessage?: string | null;
  readonly traceId: string;
  readonly callId: string;
  readonly parentCallId: string | undefined;
  readonly depth: number;
  readonly historySize: number;
  /** False when the call's record could not be kept (its store failed). */
  readonly recordAppended?: boolean;
  /** What the call's programs did with tools (counts over every call, failed attempts' included). */
  readonly tools?: { readonly tool_call_count: number; readonly tool_names: readonly string[]; readonly tool_error_count: number; readonly tool_failed_names: readonly string[]; readonly tool_ms: number };
  /** The call's attempts (the last 5, each with its program's text, bounded) and why a failed call was not repaired. */
  readonly attemptDetails?: { readonly attempts: readonly unknown[]; readonly repair_skipped: string | null };
  /** What became of the call's writes: each state's count, the `onFailure` applied, and why a function given as `onFailure` failed. */
  readonly effects?: { readonly effects: Readonly<Record<EffectState, number>>; readonly on_failure: "keep" | "revert" | "function" | null; readonly on_failure_error: string | null };
  /** The call's knowledge: its sources' names, the passages retrieved in all, and the time it took. */
  readonly knowledge?: { readonly knowledge_sources: readonly string[]; readonly knowledge_empty: readonly string[]; readonly knowledge_failed: readonly string[]; readonly retrieved_count: number; readonly knowledge_ms: number } | undefined;
  /** The ids of the call's span, when tracing records it. */
  readonly otel?: { readonly otel_trace_id: string; readonly otel_span_id: string } | undefined;
  /** For a call whose tree sent injected credentials: takes every recognizable copy of them out of the whole line. */
  readonly redactor?: Redactor | undefined;
  readonly debug?: {
    readonly system: string | undefined;
    readonly user: string | undefined;
    readonly console: readonly string[];
    readonly context: Readonly<Record<string, unknown>>;
    readonly historyPreview: readonly HistoryRecord[];
  };
}

/** The JSON fields of one call's log line (documented in docs/observability.md). */
export function buildLogLine(input: LogLineInput): Record<string, unknown> {
  const scan = input.code === null ? undefined : scanProgram(input.code, input.parsed);
  const toolScan = input.code === null ? undefined : scanToolUse(input.code, input.parsed);
  const line: Record<string, unknown> = {
    timestamp: new Date().toISOString(),
    runtime: RUNTIME_NAME,
    role: input.role,
    model: input.model === null ? null : truncateString(input.model, MAX_LOGGED_NAME_CHARS),
    provider: input.provider === null ? null : truncateString(input.provider, MAX_LOGGED_NAME_CHARS),
    method: input.method,
    args: toJsonSafe(input.args),
    kwargs: toJsonSafe(input.kwargs),
    // Cut as the record's `program` is, so the two agree.
    code: input.code === null ? null : truncateString(input.code),
    duration_ms: Math.round(input.durationMs * 1000) / 1000,
    generation_attempt: input.attempts,
    prompt_tokens: input.tokens?.prompt ?? null,
    completion_tokens: input.tokens?.completion ?? null,
    cached_tokens: input.tokens?.cached ?? null,
    cache_write_tokens: input.tokens?.cacheWrite ?? null,
    cost_usd: input.costUsd ?? null,
    program_source: input.programSource ?? null,
    artifact_hit: input.artifactHit === true,
    reuse_decision: input.reuseDecision ?? null,
    kept_program_dropped: input.keptProgramDropped === true,
    attempt_errors: input.attemptErrors,
    outcome_status: input.status,
    error_type: input.errorType,
    error_message: typeof input.errorMessage === "string" ? truncateString(input.errorMessage, MAX_LOGGED_ERROR_CHARS) : null,
    trace_id: input.traceId,
    call_id: input.callId,
    parent_call_id: input.parentCallId ?? null,
    depth: input.depth,
    history_record_appended: input.recordAppended ?? true,
    conversation_history_size: input.historySize,
    history_access_detected: scan?.historyAccessDetected ?? false,
    history_query_patterns: scan === undefined ? [] : [...scan.patterns],
    history_scan: scan?.scan ?? "none",
    tool_call_count: input.tools?.tool_call_count ?? 0,
    tool_names: input.tools?.tool_names ?? [],
    tool_error_count: input.tools?.tool_error_count ?? 0,
    tool_failed_names: input.tools?.tool_failed_names ?? [],
    tool_ms: input.tools?.tool_ms ?? 0,
    tool_access_detected: toolScan?.toolAccessDetected ?? false,
    tools_referenced: toolScan?.toolsReferenced ?? [],
    attempts: input.attemptDetails?.attempts ?? [],
    repair_skipped: input.attemptDetails?.repair_skipped ?? null,
    effects: input.effects?.effects ?? noEffects(),
    on_failure: input.effects?.on_failure ?? null,
    on_failure_error: input.effects?.on_failure_error ?? null,
    knowledge_sources: input.knowledge?.knowledge_sources ?? [],
    knowledge_empty: input.knowledge?.knowledge_empty ?? [],
    knowledge_failed: input.knowledge?.knowledge_failed ?? [],
    retrieved_count: input.knowledge?.retrieved_count ?? 0,
    knowledge_ms: input.knowledge === undefined ? 0 : Math.round(input.knowledge.knowledge_ms * 1000) / 1000,
    ...(input.otel ?? {}),
  };
  if (input.debug) {
    line.system_prompt = input.debug.system ?? null;
    line.user_prompt = input.debug.user ?? null;
    line.console = input.debug.console;
    line.context = contextSnapshot(input.debug.context, input.historySize, input.debug.historyPreview);
  }
  return input.redactor === undefined ? line : redactData(line, input.redactor);
}

/**
 * A bounded view of the context: the agent's own keys (JSON-safe, cut to
 * {@link MAX_CONTEXT_SNAPSHOT_BYTES}), and the history as a count plus its preview.
 */
export function contextSnapshot(context: Readonly<Record<string, unknown>>, historySize: number, preview: readonly HistoryRecord[]): Record<string, JsonValue> {
  // Copied only a little past the cap: enough to know it does not fit, however large the context.
  let values = toJsonSafe(context, MAX_CONTEXT_SNAPSHOT_BYTES * 2);
  const bytes = Buffer.byteLength(serialize(values) ?? "", "utf8");
  if (bytes > MAX_CONTEXT_SNAPSHOT_BYTES) {
    values = { "[truncated]": `context is larger than ${MAX_CONTEXT_SNAPSHOT_BYTES} bytes as JSON`, keys: Object.keys(context).slice(0, 100) };
  }
  return {
    values,
    conversation_history: {
      count: historySize,
      preview: preview.map((record) => ({
        call_id: record.call_id,
        method_name: record.method_name,
        status: record.outcome_summary.status,
        error_type: record.outcome_summary.error_type,
      })),
    },
  };
}
