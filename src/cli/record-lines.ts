/**
 * A report built from a store (DESIGN 20): each history record of each agent turned into the
 * shape of the call's log line, so the same report reads both. What a log line has and a record
 * does not (the provider's name per call, pino's fields) is left out; what a record has and a
 * log line only counts (its tool calls) is carried whole, for the call explorer.
 */
import type { HistoryRecord } from "../history/index.ts";
import { sourceNames } from "../knowledge/index.ts";
import type { Store } from "../store/index.ts";
import { scanProgram } from "../telemetry/index.ts";
import { noEffects } from "../tools/index.ts";

/** Every record of every agent in `store` (or of `agentId` only), as log lines, agent by agent. */
export async function* storeLines(store: Store, agentId?: string): AsyncGenerator<Record<string, unknown>> {
  const agents = (await store.agents()).filter((agent) => agentId === undefined || agent.id === agentId);
  for (const agent of agents) {
    for (const text of await store.records(agent.id)) {
      let record: HistoryRecord;
      try {
        record = JSON.parse(text) as HistoryRecord;
      } catch {
        continue;
      }
      yield lineOfRecord(record, agent.role);
    }
  }
}

/** One record as its call's log line would say it. */
export function lineOfRecord(record: HistoryRecord, role: string): Record<string, unknown> {
  const started = Date.parse(record.timestamp);
  const duration = record.duration_ms ?? 0;
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
    timestamp: Number.isNaN(started) ? record.timestamp : new Date(started + duration).toISOString(),
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
