/**
 * `npm run bench [-- --quick]`: what a dynamic call costs. Prints each figure with its
 * repetition count (warm-up runs are excluded) and writes bench/results/latest.json.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, ScriptedProvider, type HistoryRecord } from "../src/index.ts";
import { measure, percentile, type Summary } from "./stats.ts";
import { scanTime, telemetryThroughput } from "./telemetry.ts";

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

/**
 * p50 of a call on agents holding different numbers of records, measured round-robin (one
 * call per agent per round) so that load drifting on a shared machine affects every size alike.
 * Each agent's first call, which syncs its whole history to the sandbox, is warm-up.
 */
async function callsWithHistory(sizes: readonly number[]): Promise<{ records: number; summary: Summary }[]> {
  const agents = sizes.map((records) => {
    const agent = Agent.for("bench", { provider: new ScriptedProvider({ programs: { add: "return args[0] + args[1]" } }), log: false });
    agent.remember({ conversation_history: Array.from({ length: records }, (_, i) => syntheticRecord(i)) });
    return agent;
  });
  for (const agent of agents) for (let i = 0; i < warmup; i += 1) await agent.add(1, 2);
  const samples = agents.map(() => [] as number[]);
  for (let round = 0; round < growthCount; round += 1) {
    for (const [index, agent] of agents.entries()) {
      const started = performance.now();
      await agent.add(1, 2);
      samples[index]!.push((performance.now() - started) * 1000);
    }
  }
  return sizes.map((records, index) => {
    const sorted = samples[index]!.sort((a, b) => a - b);
    return { records, summary: { count: sorted.length, p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95) } };
  });
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
results.historyGrowth.push(...(await callsWithHistory(growthSizes)));
const scan = await scanTime(quick ? 2_000 : 20_000);
const telemetry = await telemetryThroughput(quick ? 100_000 : 1_000_000);

const us = (value: number) => `${value.toFixed(0)} µs`;
console.log(`improv bench (${results.mode}; ${count} calls each after ${warmup} warm-up calls, excluded)`);
for (const [label, summary] of [["dynamic call, ScriptedProvider, log off", results.callOverheadLogOff], ["dynamic call, ScriptedProvider, log on", results.callOverheadLogOn]] as const) {
  console.log(`  ${label.padEnd(42)} p50 ${us(summary.p50).padStart(8)}   p95 ${us(summary.p95).padStart(8)}   n=${summary.count}`);
}
const base = results.historyGrowth[0]?.summary.p50 ?? Number.NaN;
console.log(`\n  growth with history (p50 per call; ${growthCount} calls each, interleaved; first sync and ${warmup} calls excluded as warm-up)`);
for (const { records, summary } of results.historyGrowth) {
  console.log(`  ${String(records).padStart(7)} records held   p50 ${us(summary.p50).padStart(8)}   ×${(summary.p50 / base).toFixed(2)} of 1 record`);
}
console.log(`\n  history scan per program (parse + scan)     p50 ${us(scan.p50).padStart(8)}   p95 ${us(scan.p95).padStart(8)}   n=${scan.count}`);
console.log(`  improv telemetry on ${telemetry.lines.toLocaleString("en-US")} lines (${(telemetry.bytes / 2 ** 20).toFixed(0)} MiB)   ${telemetry.seconds.toFixed(2)} s   ${telemetry.linesPerSecond.toLocaleString("en-US")} lines/s`);
Object.assign(results, { scan, telemetry });
mkdirSync(new URL("./results/", import.meta.url), { recursive: true });
writeFileSync(new URL("./results/latest.json", import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
