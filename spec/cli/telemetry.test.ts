import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Readable, Writable } from "node:stream";
import { gzipSync } from "node:zlib";
import { describe, expect, test } from "vitest";
import { Agent, OpenAIProvider, ScriptedProvider } from "../../src/index.ts";
import { OpenAITestServer } from "../helpers/openai-server.ts";
import { runTelemetry, UsageError, type TelemetryCommandOptions } from "../../src/cli/telemetry-command.ts";

function sink(isTTY = false): Writable & { text: string; isTTY: boolean } {
  const stream = new Writable({
    write(chunk, _encoding, done) {
      stream.text += String(chunk);
      done();
    },
  }) as Writable & { text: string; isTTY: boolean };
  stream.text = "";
  stream.isTTY = isTTY;
  return stream;
}

function run(options: Partial<TelemetryCommandOptions> & { inputs: string[] }) {
  const stdout = sink();
  const stderr = sink(options.stderr?.isTTY ?? false);
  const promise = runTelemetry({ json: false, stdout, stderr, ...options });
  return { promise, stdout, stderr };
}

/** Writes a real log by running agents, returning its path. */
async function realLog(directory: string): Promise<string> {
  const log = join(directory, "calls.jsonl");
  const provider = new ScriptedProvider({
    programs: {
      "calculator.add": "context.v = (context.v ?? 0) + args[0]; return context.v",
      "calculator.recent": "return context.conversation_history.slice(-2).map((r) => r.method_name)",
      "calculator.fails": "return context.conversation_history.filter((r) => !r.outcome_summary.ok).length",
      "calculator.broken": "throw new Error('no')",
      "assistant.count": "return context.conversation_history.length",
      "assistant.slow": "while (true) {}",
    },
  });
  const calc = Agent.for("calculator", { provider, log });
  const assistant = Agent.for("assistant", { provider, log, executionTimeoutMs: 100 });
  await calc.add(1);
  await calc.add(2);
  await calc.broken();
  await calc.recent();
  await calc.fails();
  await assistant.count();
  await assistant.slow();
  return log;
}

describe("improv telemetry", () => {
  test("reports calls, errors by type, history use and patterns, by role and by method", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const log = await realLog(directory);
    const { promise, stdout } = run({ inputs: [log], json: true });
    const report = await promise;
    expect(report.calls).toBe(7);
    expect(report.overall.errors).toBe(2);
    expect(report.overall.errorTypes).toEqual({ execution: 1, timeout: 1 });
    expect(report.overall.readsHistory).toBe(3);
    expect(report.overall.patterns).toEqual({ slice: 1, map: 1, filter: 1, count: 2 });
    expect(report.byRole.calculator).toMatchObject({ calls: 5, errors: 1, readsHistory: 2 });
    expect(report.byRole.assistant).toMatchObject({ calls: 2, errors: 1, readsHistory: 1, errorTypes: { timeout: 1 } });
    expect(report.byMethod["calculator.recent"]).toMatchObject({ calls: 1, patterns: { slice: 1, map: 1 } });
    expect(JSON.parse(stdout.text)).toEqual(JSON.parse(JSON.stringify(report)));
  });

  test("the readable report shows the same figures", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const log = await realLog(directory);
    const { promise, stdout } = run({ inputs: [log] });
    await promise;
    expect(stdout.text).toContain("  calls                 7");
    expect(stdout.text).toContain("  errors                2  (28.6% of calls)");
    expect(stdout.text).toContain("  code reads history    3  (42.9% of calls)");
    expect(stdout.text).toMatch(/\n {4}count +2 +66\.7%\n/);
    // calls, errors, reused, requests, tokens, reads history, top operations
    expect(stdout.text).toMatch(/calculator\.recent +1 +0\.0% +0\.0% +1 +- +100\.0% +(slice 1, map 1|map 1, slice 1)/);
    expect(stdout.text).toContain("  served by kept programs 1  (14.3% of calls, no provider request)");
  });

  test("tokens the provider reports are summed per call over its attempts, a reused program costs none, and the report adds them up", async () => {
    const server = await OpenAITestServer.start([
      { kind: "structured", code: "return args[0] * 2" },
      { kind: "content", content: null },
      { kind: "structured", code: "return args[0] + 1" },
    ]);
    try {
      const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
      const log = join(directory, "calls.jsonl");
      const agent = Agent.for("pricing", { provider: new OpenAIProvider({ apiKey: "test", baseURL: server.baseURL }), log });
      await agent.double(2);
      await agent.double(3); // reused: no request
      await agent.next(1); // a blank reply, then a program: two requests
      await new Promise((resolve) => setTimeout(resolve, 200));
      const lines = readFileSync(log, "utf8").trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.map((line) => [line.method, line.generation_attempt, line.prompt_tokens, line.completion_tokens])).toEqual([
        ["double", 1, 10, 5],
        ["double", 0, 0, 0],
        ["next", 2, 20, 10],
      ]);
      const report = await run({ inputs: [log], json: true }).promise;
      expect(report.overall).toMatchObject({ requests: 3, promptTokens: 30, completionTokens: 15, callsWithoutTokens: 0, reused: 1 });
      expect(report.byMethod["pricing.double"]).toMatchObject({ calls: 2, requests: 1, promptTokens: 10, completionTokens: 5 });
      const text = await run({ inputs: [log] });
      await text.promise;
      expect(text.stdout.text).toContain("  tokens                30 prompt + 15 completion");
      expect(text.stdout.text).toMatch(/pricing\.next +1 +0\.0% +0\.0% +2 +30 /);
    } finally {
      await server.close();
    }
  });

  test("malformed lines are counted and located, never fatal", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const file = join(directory, "mixed.jsonl");
    const call = JSON.stringify({ timestamp: "2025-01-01T00:00:00.000Z", call_id: "a", outcome_status: "ok", role: "r", method: "m", history_access_detected: false, history_query_patterns: [] });
    writeFileSync(file, [call, "{truncated", "", '"just a string"', '{"other":"json"}', call].join("\n"));
    const report = await run({ inputs: [file], json: true }).promise;
    expect(report.calls).toBe(2);
    expect(report.malformed).toEqual({
      count: 3,
      examples: [`${file}:2 (not JSON)`, `${file}:4 (not an improv call line)`, `${file}:5 (not an improv call line)`],
    });
  });

  test("--since and --until keep calls inside the window", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const file = join(directory, "window.jsonl");
    const at = (timestamp: string) => JSON.stringify({ timestamp, call_id: timestamp, outcome_status: "ok", role: "r", method: "m" });
    writeFileSync(file, ["2025-01-01T00:00:00.000Z", "2025-02-01T00:00:00.000Z", "2025-03-01T00:00:00.000Z"].map(at).join("\n"));
    const report = await run({ inputs: [file], json: true, since: "2025-01-15", until: "2025-02-15T00:00:00Z" }).promise;
    expect(report.calls).toBe(1);
    expect(report.filteredOut).toBe(2);
    expect(report.firstTimestamp).toBe("2025-02-01T00:00:00.000Z");
    await expect(run({ inputs: [file], since: "last tuesday" }).promise).rejects.toThrow(UsageError);
  });

  test("reads gzipped logs, directories recursively, and standard input", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const line = (id: string) => JSON.stringify({ call_id: id, outcome_status: "ok", role: "r", method: "m" });
    mkdirSync(join(directory, "nested"));
    writeFileSync(join(directory, "a.jsonl"), `${line("1")}\n`);
    writeFileSync(join(directory, "nested", "b.jsonl.gz"), gzipSync(`${line("2")}\n${line("3")}\n`));
    writeFileSync(join(directory, "ignored.txt"), "not a log");
    expect((await run({ inputs: [directory], json: true }).promise).calls).toBe(3);
    const stdin = () => Readable.from([Buffer.from(`${line("4")}\n${line("5")}`)]);
    expect((await run({ inputs: ["-"], json: true, stdin }).promise).calls).toBe(2);
    const gzippedStdin = () => Readable.from([gzipSync(`${line("6")}\n`)]);
    expect((await run({ inputs: ["-"], json: true, stdin: gzippedStdin }).promise).calls).toBe(1);
  });

  test("a missing input is a clear error", async () => {
    await expect(run({ inputs: ["/nonexistent/improv.jsonl"] }).promise).rejects.toThrow('Cannot read "/nonexistent/improv.jsonl": no such file or directory.');
  });

  test("a progress line shows on a terminal for large inputs, and is cleared at the end", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const file = join(directory, "big.jsonl");
    const line = JSON.stringify({ call_id: "x", outcome_status: "ok", role: "r", method: "m", code: "return 1" });
    writeFileSync(file, `${Array.from({ length: 200_000 }, () => line).join("\n")}\n`);
    const stdout = sink();
    const stderr = sink(true);
    const report = await runTelemetry({ inputs: [file], json: true, stdout, stderr, progressThresholdBytes: 1024 });
    expect(report.calls).toBe(200_000);
    expect(stderr.text).toMatch(/reading logs: [\d,]+ lines, \d+% of \d+ MiB/);
    expect(stderr.text.endsWith("\r\u001b[2K")).toBe(true);
    const quiet = sink(false);
    await runTelemetry({ inputs: [file], json: true, stdout: new PassThrough(), stderr: quiet, progressThresholdBytes: 1024 });
    expect(quiet.text).toBe("");
  });
});
