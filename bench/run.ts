/**
 * `npm run bench [-- --quick]`: what a dynamic call costs. Prints each figure with its
 * repetition count (warm-up runs are excluded) and writes bench/results/latest.json.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, ScriptedProvider, type HistoryRecord } from "../src/index.ts";
import { measure, type Summary } from "./stats.ts";

const quick = process.argv.includes("--quick");
const count = quick ? 200 : 3_000;
const warmup = quick ? 50 : 300;

async function callOverhead(log: string | false): Promise<Summary> {
  const agent = Agent.for("bench", { provider: new ScriptedProvider({ programs: { add: "return args[0] + args[1]" } }), log });
  return measure(() => agent.add(1, 2), count, warmup);
}

/** A plausible record, as the history holds after a call. */
function syntheticRecord(index: number): HistoryRecord {
  return {
    call_id: `00000000-0000-4000-8000-${String(index).padStart(12, "0")}`,
    timestamp: new Date(1_700_000_000_000 + index * 1000).toISOString(),
    speaker: "user",
    method_name: index % 3 === 0 ? "add" : "multiply",
    args: [index, index + 1],
    kwargs: {},
    outcome_summary: { status: "ok", ok: true, error_type: null, retriable: false, value_class: "number" },
    trace_id: `trace-${index}`,
    depth: 0,
    duration_ms: 0.5,
    program_source: "return args[0] + args[1]",
    artifact_hit: false,
  };
}

/** p50 of a call on an agent that already holds `records` records (the first sync is warm-up). */
async function callWithHistory(records: number): Promise<Summary> {
  const agent = Agent.for("bench", { provider: new ScriptedProvider({ programs: { add: "return args[0] + args[1]" } }), log: false });
  agent.remember({ conversation_history: Array.from({ length: records }, (_, i) => syntheticRecord(i)) });
  return measure(() => agent.add(1, 2), growthCount, warmup);
}

const growthSizes = quick ? [1, 20_000] : [1, 1_000, 10_000, 20_000, 100_000];
const growthCount = quick ? 200 : 2_000;
const logFile = join(mkdtempSync(join(tmpdir(), "improv-bench-")), "calls.jsonl");
const results = {
  machine: { node: process.version, platform: `${process.platform}-${process.arch}` },
  mode: quick ? "quick" : "full",
  callOverheadLogOff: await callOverhead(false),
  callOverheadLogOn: await callOverhead(logFile),
  historyGrowth: [] as { records: number; summary: Summary }[],
};
for (const records of growthSizes) results.historyGrowth.push({ records, summary: await callWithHistory(records) });

const us = (value: number) => `${value.toFixed(0)} µs`;
console.log(`improv bench (${results.mode}; ${count} calls each after ${warmup} warm-up calls, excluded)`);
for (const [label, summary] of [["dynamic call, ScriptedProvider, log off", results.callOverheadLogOff], ["dynamic call, ScriptedProvider, log on", results.callOverheadLogOn]] as const) {
  console.log(`  ${label.padEnd(42)} p50 ${us(summary.p50).padStart(8)}   p95 ${us(summary.p95).padStart(8)}   n=${summary.count}`);
}
const base = results.historyGrowth[0]?.summary.p50 ?? Number.NaN;
console.log(`\n  growth with history (p50 per call; ${growthCount} calls each, first sync excluded as warm-up)`);
for (const { records, summary } of results.historyGrowth) {
  console.log(`  ${String(records).padStart(7)} records held   p50 ${us(summary.p50).padStart(8)}   ×${(summary.p50 / base).toFixed(2)} of 1 record`);
}
mkdirSync(new URL("./results/", import.meta.url), { recursive: true });
writeFileSync(new URL("./results/latest.json", import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
