import { createWriteStream, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { once } from "node:events";
import { buildLogLine } from "../src/log/log-line.ts";
import { parseProgram } from "../src/programs/parse.ts";
import { scanProgram } from "../src/telemetry/scan.ts";
import { runTelemetry } from "../src/cli/telemetry-command.ts";
import { LABELED_PROGRAMS } from "../test-support/labeled-programs.ts";
import { measure, type Summary } from "./stats.ts";

/** p50 time of the static history scan per program (parse included), over the labeled set. */
export async function scanTime(rounds: number): Promise<Summary> {
  let index = 0;
  return measure(() => {
    const { code } = LABELED_PROGRAMS[index++ % LABELED_PROGRAMS.length]!;
    scanProgram(code, parseProgram(code));
  }, rounds, Math.min(rounds, 500));
}

/** Writes `count` realistic call log lines, then times `improv telemetry` over them. */
export async function telemetryThroughput(count: number): Promise<{ lines: number; bytes: number; seconds: number; linesPerSecond: number }> {
  const directory = mkdtempSync(join(tmpdir(), "improv-bench-telemetry-"));
  const file = join(directory, "calls.jsonl");
  const out = createWriteStream(file);
  const samples = LABELED_PROGRAMS.slice(0, 20).map((program, i) =>
    JSON.stringify(
      buildLogLine({
        role: i % 2 ? "calculator" : "assistant", model: "gpt-4.1-mini", provider: "openai", method: `m${i % 7}`, args: [i, "x"], kwargs: {}, code: program.code,
        parsed: undefined, durationMs: 0.5, attempts: 1, tokens: { prompt: 900 + i, completion: 40 + i, cached: i % 2 ? 768 : 0, cacheWrite: null }, attemptErrors: [], status: i % 9 === 0 ? "error" : "ok", errorType: i % 9 === 0 ? "execution" : null,
        traceId: `t${i}`, callId: `c${i}`, parentCallId: undefined, depth: 0, historySize: i,
      }),
    ),
  );
  for (let i = 0; i < count; i += 1) {
    if (!out.write(`${samples[i % samples.length]}\n`)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
  const bytes = statSync(file).size;
  const discard = new Writable({ write: (_chunk, _encoding, done) => done() });
  const started = performance.now();
  const report = await runTelemetry({ inputs: [file], json: true, stdout: discard, stderr: discard });
  const seconds = (performance.now() - started) / 1000;
  rmSync(directory, { recursive: true, force: true });
  if (report.calls !== count) throw new Error(`telemetry counted ${report.calls} of ${count} lines`);
  return { lines: count, bytes, seconds, linesPerSecond: Math.round(count / seconds) };
}
