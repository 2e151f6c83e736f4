/**
 * `npm run bench [-- --quick]`: what a dynamic call costs. Prints each figure with its
 * repetition count (warm-up runs are excluded) and writes bench/results/latest.json.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, ScriptedProvider } from "../src/index.ts";
import { measure, type Summary } from "./stats.ts";

const quick = process.argv.includes("--quick");
const count = quick ? 200 : 3_000;
const warmup = quick ? 50 : 300;

async function callOverhead(log: string | false): Promise<Summary> {
  const agent = Agent.for("bench", { provider: new ScriptedProvider({ programs: { add: "return args[0] + args[1]" } }), log });
  return measure(() => agent.add(1, 2), count, warmup);
}

const logFile = join(mkdtempSync(join(tmpdir(), "improv-bench-")), "calls.jsonl");
const results = {
  machine: { node: process.version, platform: `${process.platform}-${process.arch}` },
  mode: quick ? "quick" : "full",
  callOverheadLogOff: await callOverhead(false),
  callOverheadLogOn: await callOverhead(logFile),
};

const us = (value: number) => `${value.toFixed(0)} µs`;
console.log(`improv bench (${results.mode}; ${count} calls each after ${warmup} warm-up calls, excluded)`);
for (const [label, summary] of [["dynamic call, ScriptedProvider, log off", results.callOverheadLogOff], ["dynamic call, ScriptedProvider, log on", results.callOverheadLogOn]] as const) {
  console.log(`  ${label.padEnd(42)} p50 ${us(summary.p50).padStart(8)}   p95 ${us(summary.p95).padStart(8)}   n=${summary.count}`);
}
mkdirSync(new URL("./results/", import.meta.url), { recursive: true });
writeFileSync(new URL("./results/latest.json", import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
