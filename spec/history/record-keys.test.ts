/**
 * The record's TypeScript type and its JSON Schema name the same fields: each list below is
 * checked against the type by the compiler (spec/types/typecheck.test.ts compiles this file),
 * and against the schema here.
 */
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import type { AttemptRecord, HistoryRecord, OutcomeSummary } from "../../src/history/record.ts";
import type { ToolCallRecord } from "../../src/tools/tool-calls.ts";
import type { KnowledgeRecord } from "../../src/knowledge/assemble.ts";

/** Fails to compile unless `List` holds every key of `T` and nothing else. */
type EveryKey<T, List extends readonly (keyof T)[]> = Exclude<keyof T, List[number]> extends never ? List : never;

const RECORD_KEYS = [
  "call_id", "timestamp", "speaker", "method_name", "args", "kwargs", "outcome_summary", "trace_id", "parent_call_id", "depth",
  "duration_ms", "error_type", "error_message", "program_source", "artifact_hit", "program", "provider", "model", "reuse_decision",
  "tool_calls", "tool_call_count", "knowledge", "attempts", "repair_skipped", "cost_usd",
] as const;
const SUMMARY_KEYS = ["status", "ok", "error_type", "retriable", "value_class", "content_ref", "sources", "source_count"] as const;
const TOOL_CALL_KEYS = ["tool", "input", "ok", "duration_ms", "effect", "attempt", "error_type", "error_message", "url", "status", "bytes", "state", "undoable", "revert_error"] as const;

const recordKeys: EveryKey<HistoryRecord, typeof RECORD_KEYS> = RECORD_KEYS;
const summaryKeys: EveryKey<OutcomeSummary, typeof SUMMARY_KEYS> = SUMMARY_KEYS;
const toolCallKeys: EveryKey<ToolCallRecord, typeof TOOL_CALL_KEYS> = TOOL_CALL_KEYS;
const KNOWLEDGE_KEYS = ["name", "kind", "query", "results", "chars", "error"] as const;
const knowledgeKeys: EveryKey<KnowledgeRecord, typeof KNOWLEDGE_KEYS> = KNOWLEDGE_KEYS;
const ATTEMPT_KEYS = ["n", "program_source", "started_at", "completed_at", "provider", "model", "tokens", "error_type", "error_message", "tool_call_count", "program_hash"] as const;
const attemptKeys: EveryKey<AttemptRecord, typeof ATTEMPT_KEYS> = ATTEMPT_KEYS;

interface ObjectSchema {
  readonly properties: Record<string, { readonly properties?: Record<string, unknown>; readonly items?: ObjectSchema }>;
}
const schema = JSON.parse(readFileSync(new URL("../../schema/history-record.schema.json", import.meta.url), "utf8")) as ObjectSchema;

describe("the record's type and its JSON Schema", () => {
  test("name the same fields: the record's, its outcome summary's, a tool call's, a knowledge source's and an attempt's", () => {
    expect(Object.keys(schema.properties).sort()).toEqual([...recordKeys].sort());
    expect(Object.keys(schema.properties.outcome_summary?.properties ?? {}).sort()).toEqual([...summaryKeys].sort());
    expect(Object.keys(schema.properties.tool_calls?.items?.properties ?? {}).sort()).toEqual([...toolCallKeys].sort());
    expect(Object.keys(schema.properties.knowledge?.items?.properties ?? {}).sort()).toEqual([...knowledgeKeys].sort());
    expect(Object.keys(schema.properties.attempts?.items?.properties ?? {}).sort()).toEqual([...attemptKeys].sort());
  });
});
