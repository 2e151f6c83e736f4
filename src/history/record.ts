import { createHash } from "node:crypto";
import type { KnowledgeRecord } from "../knowledge/index.ts";
import { configure } from "safe-stable-stringify";
import { asJsonSafe, type ErrorType, type JsonValue, type OutcomeStatus, truncateString, valueClass } from "../shared/index.ts";
import { boundedInput, type ToolCallRecord } from "../tools/index.ts";

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
  /** Set when the call's value is kept: `content(ref)` in a program, `Agent.value(agent, ref)` in the application. */
  readonly content_ref?: string;
  /**
   * The distinct URLs whose fetch answered 2xx in the attempt that produced the outcome, as the
   * host fetched them (after redirects, without credentials or secret-looking query values; at most 20).
   */
  readonly sources?: readonly string[];
  /** How many distinct such URLs there were; present with `sources`. */
  readonly source_count?: number;
}

/**
 * One canonical history record: exactly one per dynamic call, JSON-safe throughout.
 * Required keys never change; optional keys may be absent. The JSON Schema is
 * `schema/history-record.schema.json`.
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
  /** Where the program came from: a new one, a kept one run again, or one written after a failure's feedback. */
  readonly program_source?: ProgramSource;
  /** True when a kept program was run instead of asking the provider, and its run ended the call. */
  readonly artifact_hit?: boolean;
  /** The program's text (cut to 10,000 characters). */
  readonly program?: string;
  /** For a program a provider wrote in this call: that provider's name (`openai`, `anthropic`, …) and the model that answered. */
  readonly provider?: string;
  readonly model?: string;
  /** For a call whose new program worked: whether that program was kept for reuse, and why. */
  readonly reuse_decision?: { readonly kept: boolean; readonly reason: string };
  /** The tool calls the call's programs made, in call order (the first 50), failed attempts' included. */
  readonly tool_calls?: readonly ToolCallRecord[];
  /** How many tool calls the call's programs made; present with `tool_calls`. */
  readonly tool_call_count?: number;
  /** The call's knowledge: per source, what was asked and found (ids and scores, never the passages' text), and its error. */
  readonly knowledge?: readonly KnowledgeRecord[];
  /** The call's attempts, oldest first, the last {@link MAX_RECORDED_ATTEMPTS}: a kept program's run is `n: 0`. */
  readonly attempts?: readonly AttemptRecord[];
  /** What the call's provider requests cost in US dollars, by the agent's `pricing` (0 when it asked none); absent without pricing, or when a model that answered had no price. */
  readonly cost_usd?: number;
  /** Why a call whose program failed was not repaired: its program had written (`effects`), its attempts were used up, or the failure was not the program's mistake. */
  readonly repair_skipped?: RepairSkipped;
}

/** A program's `program_hash`: the first 16 hex digits of the SHA-256 of its text. */
export function programHash(code: string): string {
  return createHash("sha256").update(code).digest("hex").slice(0, 16);
}

/** Attempts a record keeps: the last ones. */
export const MAX_RECORDED_ATTEMPTS = 5;

/** Why a failed call was not repaired (see {@link HistoryRecord.repair_skipped}). */
export type RepairSkipped = "effects" | "attempts_used" | "not_a_mistake";

/** One attempt of a call: a kept program's run (`n: 0`), or a provider's request and the run of the program it wrote. */
export interface AttemptRecord {
  readonly n: number;
  /** Where the attempt's program came from; absent when the provider gave none. */
  readonly program_source?: ProgramSource;
  /** ISO 8601 UTC with milliseconds. */
  readonly started_at: string;
  readonly completed_at: string;
  /** The provider and model that answered, for an attempt that asked one. */
  readonly provider?: string;
  readonly model?: string;
  /** Tokens its requests reported. */
  readonly tokens?: { readonly prompt: number; readonly completion: number; readonly cached?: number; readonly cache_write?: number };
  /** How the attempt failed: the program's mistake fed to the next attempt, or the call's failure. */
  readonly error_type?: ErrorType;
  readonly error_message?: string;
  /** Tool calls (and fetches) its program made. */
  readonly tool_call_count: number;
  /** The first 16 hex digits of the SHA-256 of its program's text; the log line carries the text. */
  readonly program_hash?: string;
}

/** Where a call's program came from, as the record and the log line say. */
export const PROGRAM_SOURCES = ["generated", "reused", "repaired"] as const;
export type ProgramSource = (typeof PROGRAM_SOURCES)[number];

/** Largest serialised record; larger ones are cut down field by field, with markers. */
export const MAX_RECORD_BYTES = 64 * 1024;

/** What a finished call contributes to its record. */
export interface RecordInput {
  readonly callId: string;
  readonly startedAt: Date;
  readonly speaker: Speaker;
  readonly method: string;
  readonly args: readonly unknown[];
  readonly kwargs: Readonly<Record<string, unknown>>;
  readonly outcome: { readonly status: OutcomeStatus; readonly ok: boolean; readonly value?: unknown; readonly errorType?: ErrorType; readonly errorMessage?: string; readonly retriable: boolean };
  readonly traceId: string;
  readonly parentCallId: string | undefined;
  readonly depth: number;
  readonly durationMs: number;
  /** The program that ran (or the last one tried), and where it came from; null when no program was produced. */
  readonly program: { readonly code: string; readonly source: ProgramSource } | null;
  /** The provider and model that wrote the program, when one did in this call. */
  readonly writer?: { readonly provider: string; readonly model: string } | undefined;
  /** Whether a kept program's run ended the call (not one whose failure sent the call on to the provider). */
  readonly artifactHit: boolean;
  /** Set when the call's value is kept: the reference programs pass to `content()`. */
  readonly contentRef?: string | undefined;
  /** For a call whose new program worked: whether it was kept for reuse, and why. */
  readonly reuseDecision?: { readonly kept: boolean; readonly reason: string } | undefined;
  /** The call's tool calls, as the record lists them (empty when none were made). */
  readonly toolCalls?: { readonly tool_calls?: readonly ToolCallRecord[]; readonly tool_call_count?: number };
  /** What the attempt that produced the outcome fetched (empty when nothing answered 2xx). */
  readonly sources?: { readonly sources?: readonly string[]; readonly source_count?: number };
  /** The call's knowledge sources, as assembled; absent when the agent has none. */
  readonly knowledge?: readonly KnowledgeRecord[] | undefined;
  /** The call's attempts, bounded already; absent when none was made. */
  readonly attempts?: readonly AttemptRecord[] | undefined;
  readonly repairSkipped?: RepairSkipped | undefined;
  readonly costUsd?: number | undefined;
}

// Whole records are JSON-safe by construction and are measured with JSON.stringify, the fast
// path; the cut-down of oversized fields measures them with a serializer that cannot throw.
const serialize = configure({ circularValue: "[Circular]", bigint: false, deterministic: false });

/** Serialised size of a record in UTF-8 bytes. */
export function recordBytes(record: HistoryRecord): number {
  return Buffer.byteLength(JSON.stringify(record), "utf8");
}

/** A record with its JSON text, made once and used for its size, its storage and the sandbox mirror. */
export interface SerializedRecord {
  readonly record: HistoryRecord;
  readonly json: string;
}

/** Builds the canonical record of a call: every field JSON-safe, the whole within {@link MAX_RECORD_BYTES}. */
export function createRecord(input: RecordInput): SerializedRecord {
  const { outcome } = input;
  const record: HistoryRecord = {
    call_id: input.callId,
    timestamp: input.startedAt.toISOString(),
    speaker: input.speaker,
    method_name: truncateString(input.method, 200),
    args: asArray(asJsonSafe(input.args)),
    kwargs: asObject(asJsonSafe(input.kwargs)),
    outcome_summary: {
      status: outcome.status,
      ok: outcome.ok,
      error_type: outcome.errorType ?? null,
      retriable: outcome.retriable,
      ...(outcome.ok ? { value_class: valueClass(outcome.value) } : {}),
      ...(input.contentRef === undefined ? {} : { content_ref: input.contentRef }),
      ...input.sources,
    },
    trace_id: input.traceId,
    ...(input.parentCallId === undefined ? {} : { parent_call_id: input.parentCallId }),
    depth: input.depth,
    duration_ms: Math.round(input.durationMs * 1000) / 1000,
    ...(outcome.ok || outcome.errorType === undefined ? {} : { error_type: outcome.errorType, error_message: truncateString(outcome.errorMessage ?? "") }),
    ...(input.program === null ? {} : { program_source: input.program.source, program: truncateString(input.program.code) }),
    ...(input.program === null || input.writer === undefined ? {} : { provider: truncateString(input.writer.provider, 200), model: truncateString(input.writer.model, 200) }),
    artifact_hit: input.artifactHit,
    ...(input.reuseDecision === undefined ? {} : { reuse_decision: { kept: input.reuseDecision.kept, reason: truncateString(input.reuseDecision.reason, 500) } }),
    ...input.toolCalls,
    ...(input.knowledge === undefined ? {} : { knowledge: input.knowledge.map(knowledgeEntry) }),
    ...(input.attempts === undefined || input.attempts.length === 0 ? {} : { attempts: input.attempts.slice(-MAX_RECORDED_ATTEMPTS) }),
    ...(input.repairSkipped === undefined ? {} : { repair_skipped: input.repairSkipped }),
    ...(input.costUsd === undefined ? {} : { cost_usd: input.costUsd }),
  };
  return fitRecord(record);
}

/** A knowledge source's entry, bounded (its query and error as texts of their own size). */
function knowledgeEntry(entry: KnowledgeRecord): KnowledgeRecord {
  return {
    name: entry.name,
    kind: entry.kind,
    ...(entry.query === undefined ? {} : { query: truncateString(entry.query, 500) }),
    results: entry.results.map((result) => ({ source_id: truncateString(result.source_id, 200), score: result.score })),
    chars: entry.chars,
    ...(entry.error === undefined ? {} : { error: truncateString(entry.error, 500) }),
  };
}

/** A listed tool call cut down for a record that does not fit: its input and error message shortened. */
function shortToolCall(call: ToolCallRecord): ToolCallRecord {
  return {
    ...call,
    input: boundedInput(call.input, 200),
    ...(call.error_message === undefined ? {} : { error_message: truncateString(call.error_message, 200) }),
  };
}

/** A record and its JSON text. */
export function serializeRecord(record: HistoryRecord): SerializedRecord {
  return { record, json: JSON.stringify(record) };
}

function asArray(value: JsonValue): JsonValue[] {
  return Array.isArray(value) ? value : [value];
}

function asObject(value: JsonValue): Record<string, JsonValue> {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value : { value };
}

/**
 * Cuts an oversized record down until it fits: first the program source and error message,
 * then args and kwargs are replaced by markers saying how large they were. Required keys
 * and their types always survive.
 */
function fitRecord(record: HistoryRecord): SerializedRecord {
  let serialized = serializeRecord(record);
  // No UTF-16 unit takes more than 3 bytes of UTF-8: most records need no count.
  if (serialized.json.length * 3 <= MAX_RECORD_BYTES || Buffer.byteLength(serialized.json, "utf8") <= MAX_RECORD_BYTES) return serialized;
  let fitted: HistoryRecord = record;
  const jsonBytes = (value: unknown) => Buffer.byteLength(serialize(value) ?? "", "utf8");
  const withoutArgs = (r: HistoryRecord): HistoryRecord => ({ ...r, args: [`[truncated: args were ${jsonBytes(r.args)} bytes as JSON]`] });
  const withoutKwargs = (r: HistoryRecord): HistoryRecord => ({ ...r, kwargs: { "[truncated]": `kwargs were ${jsonBytes(r.kwargs)} bytes as JSON` } });
  const argsFirst = jsonBytes(record.args) >= jsonBytes(record.kwargs);
  const shrinkers: ((r: HistoryRecord) => HistoryRecord)[] = [
    (r) => (r.tool_calls === undefined ? r : { ...r, tool_calls: r.tool_calls.map(shortToolCall) }),
    (r) => (r.attempts === undefined ? r : { ...r, attempts: r.attempts.map((attempt) => (attempt.error_message === undefined ? attempt : { ...attempt, error_message: truncateString(attempt.error_message, 200) })) }),
    (r) => (r.program === undefined ? r : { ...r, program: truncateString(r.program, 2_000) }),
    (r) => (r.error_message === undefined ? r : { ...r, error_message: truncateString(r.error_message, 2_000) }),
    argsFirst ? withoutArgs : withoutKwargs,
    argsFirst ? withoutKwargs : withoutArgs,
    // Last, what the tool calls say beyond their names and results, then the later calls themselves (tool_call_count keeps the total).
    (r) => (r.tool_calls === undefined ? r : { ...r, tool_calls: r.tool_calls.map(({ error_message: _message, ...call }) => ({ ...call, input: "[left out: the record was too large]" })) }),
    (r) => (r.tool_calls === undefined ? r : { ...r, tool_calls: r.tool_calls.slice(0, 5) }),
  ];
  for (const shrink of shrinkers) {
    fitted = shrink(fitted);
    serialized = serializeRecord(fitted);
    if (Buffer.byteLength(serialized.json, "utf8") <= MAX_RECORD_BYTES) break;
  }
  return serialized;
}
