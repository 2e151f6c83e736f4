import type { HistoryRecord } from "../src/index.ts";

/** A plausible record, as the history holds after a call. */
export function syntheticRecord(index: number): HistoryRecord {
  return {
    call_id: `00000000-0000-4000-8000-${String(index).padStart(12, "0")}`,
    timestamp: new Date(1_700_000_000_000 + index * 1000).toISOString(),
    speaker: "user",
    method_name: index % 3 === 0 ? "add" : "multiply",
    args: [index, index + 1],
    kwargs: {},
    outcome_summary: { status: "ok", ok: true, error_type: null, retriable: false, value_class: "number" },
    trace_id: `00000000-0000-4000-9000-${String(index).padStart(12, "0")}`,
    depth: 0,
    duration_ms: 0.5,
    program_source: "generated",
    program: "return args[0] + args[1]",
    artifact_hit: false,
  };
}
