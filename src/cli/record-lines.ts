/**
 * A report built from a store: each history record of each agent turned into the
 * shape of the call's log line, so the same report reads both. What a log line has and a record
 * does not (the provider's name per call, pino's fields) is left out; what a record has and a
 * log line only counts (its tool calls) is carried whole, for the call explorer.
 */
import type { HistoryRecord } from "../history/index.ts";
import { sourceNames } from "../knowledge/index.ts";
import type { AgentSummary, Store } from "../store/index.ts";
import { scanProgram } from "../telemetry/index.ts";
import { EFFECT_STATES, noEffects } from "../tools/index.ts";
import { saneDuration } from "./report-samples.ts";
import type { LocatedLine } from "./telemetry-command.ts";

/**
 * One of an agent's records read back, or why it could not be (`problem`), with where it is:
 * `<store>:<agent>:<n>`, the agent's nth record, oldest first.
 */
export type StoredRecord = { readonly where: string; readonly record: HistoryRecord } | { readonly where: string; readonly problem: string };

/** Every record of every agent in `store` (or of `agentId` only), as log lines, agent by agent; a record that is not one says why. */
export async function* storeLines(store: Store, agentId?: string): AsyncGenerator<LocatedLine> {
  const agents = (await store.agents()).filter((agent) => agentId === undefined || agent.id === agentId);
  for (const agent of agents) {
    for (const read of await readRecords(store, agent)) yield "record" in read ? { where: read.where, line: lineOfRecord(read.record, agent.role) } : read;
  }
}

/** An agent's records (its latest `last`, when given), each checked for the shape the reports read. */
export async function readRecords(store: Store, agent: AgentSummary, last?: number): Promise<StoredRecord[]> {
  const texts = await store.records(agent.id, last);
  // The latest `last` are the last of the agent's records.
  const skipped = last === undefined ? 0 : Math.max(0, agent.records - texts.length);
  return texts.map((text, index) => {
    const where = `${store.label}:${agent.id}:${skipped + index + 1}`;
    let record: unknown;
    try {
      record = JSON.parse(text);
    } catch {
      return { where, problem: "not JSON" };
    }
    return isHistoryRecord(record) ? { where, record } : { where, problem: "not a history record" };
  });
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const isOptional = (value: unknown, type: "string" | "number" | "boolean") => value === undefined || typeof value === type;
const isListOf = (value: unknown, isEntry: (entry: Record<string, unknown>) => boolean) => value === undefined || (Array.isArray(value) && value.every((entry) => isObject(entry) && isEntry(entry)));

/**
 * Whether a parsed record has the shape the reports read: the fields every record has, and each
 * optional one they use of its type. A store holds what improv wrote, but a record edited by hand
 * or by another program must not stop the report of all the others.
 */
function isHistoryRecord(value: unknown): value is HistoryRecord {
  if (!isObject(value)) return false;
  const { outcome_summary: outcome, reuse_decision: decision } = value;
  return (
    typeof value.call_id === "string" &&
    typeof value.timestamp === "string" &&
    typeof value.speaker === "string" &&
    typeof value.method_name === "string" &&
    Array.isArray(value.args) &&
    isObject(value.kwargs) &&
    isObject(outcome) &&
    typeof outcome.status === "string" &&
    typeof outcome.ok === "boolean" &&
    isOptional(value.duration_ms, "number") &&
    isOptional(value.depth, "number") &&
    isOptional(value.trace_id, "string") &&
    isOptional(value.program, "string") &&
    isOptional(value.error_message, "string") &&
    (decision === undefined || (isObject(decision) && typeof decision.kept === "boolean" && typeof decision.reason === "string")) &&
    isListOf(value.attempts, (attempt) => typeof attempt.n === "number" && isOptional(attempt.error_message, "string") && (attempt.tokens === undefined || (isObject(attempt.tokens) && typeof attempt.tokens.prompt === "number" && typeof attempt.tokens.completion === "number"))) &&
    isListOf(value.tool_calls, (call) => typeof call.tool === "string" && typeof call.ok === "boolean" && (call.state === undefined || (EFFECT_STATES as readonly unknown[]).includes(call.state))) &&
    isListOf(value.knowledge, (entry) => typeof entry.name === "string" && Array.isArray(entry.results))
  );
}

/** Latest time a Date can hold, either side of the epoch. @unit ms */
const MAX_DATE_MS = 8.64e15;

/**
 * A record's duration, when a call could have taken it (as a line's, {@link saneDuration}) and
 * it ends at a time a Date can hold; else null, unknown (a record edited by hand or by another
 * program may claim 1e300 ms).
 */
function durationOf(record: HistoryRecord, started: number): number | null {
  const duration = saneDuration(record.duration_ms ?? 0);
  return duration !== null && (Number.isNaN(started) || Math.abs(started + duration) <= MAX_DATE_MS) ? duration : null;
}

/** One record as its call's log line would say it. */
export function lineOfRecord(record: HistoryRecord, role: string): Record<string, unknown> {
  const started = Date.parse(record.timestamp);
  const duration = durationOf(record, started);
  const calls = record.tool_calls ?? [];
  const attempts = record.attempts ?? [];
  const tokens = attempts.reduce<{ prompt: number; completion: number } | null>((sum, attempt) => (attempt.tokens === undefined ? sum : { prompt: (sum?.prompt ?? 0) + attempt.tokens.prompt, completion: (sum?.completion ?? 0) + attempt.tokens.completion }), null);
  const scan = record.program === undefined ? undefined : scanProgram(record.program);
  const effects = noEffects();
  for (const call of calls) if (call.state !== undefined) effects[call.state] += 1;
  const knowledge = record.knowledge ?? [];
  const sources = sourceNames(knowledge);
  return {
    // A log line is written when its call ends.
    timestamp: Number.isNaN(started) ? record.timestamp : new Date(started + (duration ?? 0)).toISOString(),
    call_id: record.call_id,
    role,
    model: record.model ?? null,
    provider: record.provider ?? null,
    method: record.method_name,
    args: record.args,
    kwargs: record.kwargs,
    code: record.program ?? null,
    duration_ms: duration,
    generation_attempt: attempts.filter((attempt) => attempt.n > 0).length,
    prompt_tokens: tokens?.prompt ?? null,
    completion_tokens: tokens?.completion ?? null,
    program_source: record.program_source ?? null,
    artifact_hit: record.artifact_hit === true,
    reuse_decision: record.reuse_decision ?? null,
    outcome_status: record.outcome_summary.status,
    error_type: record.error_type ?? null,
    error_message: record.error_message ?? null,
    trace_id: record.trace_id ?? null,
    parent_call_id: record.parent_call_id ?? null,
    depth: record.depth ?? 0,
    history_access_detected: scan?.historyAccessDetected ?? false,
    history_query_patterns: scan === undefined ? [] : [...scan.patterns],
    history_scan: scan?.scan ?? "none",
    tool_call_count: record.tool_call_count ?? 0,
    tool_names: [...new Set(calls.map((call) => call.tool))],
    tool_error_count: calls.filter((call) => !call.ok).length,
    tool_failed_names: [...new Set(calls.filter((call) => !call.ok).map((call) => call.tool))],
    knowledge_sources: sources.all,
    knowledge_empty: sources.empty,
    knowledge_failed: sources.failed,
    retrieved_count: knowledge.reduce((sum, entry) => sum + entry.results.length, 0),
    attempts,
    repair_skipped: record.repair_skipped ?? null,
    effects,
    tool_calls: calls,
  };
}
