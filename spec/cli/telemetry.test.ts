import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PassThrough, Readable, Writable } from "node:stream";
import { gzipSync } from "node:zlib";
import { describe, expect, test } from "vitest";
import { Agent, OpenAIProvider, ScriptedProvider } from "../../src/index.ts";
import { OpenAITestServer } from "../../test-support/openai-server.ts";
import { renderHtmlReport } from "../../src/cli/report-html/page.ts";
import { runTelemetry, UsageError, type TelemetryCommandOptions } from "../../src/cli/telemetry-command.ts";
import { formatReport } from "../../src/cli/telemetry-text.ts";
import { readLogLines } from "../../test-support/logs.ts";

const cli = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
const improv = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 60_000 });

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
      { kind: "structured", code: "return args[0] * 2", usage: { prompt: 10, completion: 5, cached: 6 } },
      { kind: "content", content: null },
      { kind: "structured", code: "return args[0] + 1", usage: { prompt: 10, completion: 5, cached: 8 } },
    ]);
    try {
      const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
      const log = join(directory, "calls.jsonl");
      const agent = Agent.for("pricing", { provider: new OpenAIProvider({ apiKey: "test", baseURL: server.baseURL }), log });
      await agent.double(2);
      await agent.double(3); // reused: no request
      await agent.next(1); // a blank reply, then a program: two requests
      await new Promise((resolve) => setTimeout(resolve, 200));
      const lines = readLogLines(log);
      expect(lines.map((line) => [line.method, line.generation_attempt, line.prompt_tokens, line.completion_tokens, line.cached_tokens])).toEqual([
        ["double", 1, 10, 5, 6],
        ["double", 0, 0, 0, null],
        ["next", 2, 20, 10, 8],
      ]);
      const report = await run({ inputs: [log], json: true }).promise;
      expect(report.overall).toMatchObject({ requests: 3, promptTokens: 30, completionTokens: 15, cachedTokens: 14, callsWithoutTokens: 0, reused: 1 });
      expect(report.byMethod["pricing.double"]).toMatchObject({ calls: 2, requests: 1, promptTokens: 10, completionTokens: 5 });
      const text = await run({ inputs: [log] });
      await text.promise;
      expect(text.stdout.text).toContain("  tokens                30 prompt (14 of them read from the prompt cache, 46.7%) + 15 completion");
      expect(text.stdout.text).toMatch(/pricing\.next +1 +0\.0% +0\.0% +2 +30 /);
    } finally {
      await server.close();
    }
  });

  test("token and request counts no call could reach are rejected, as a cost past a million dollars is: the line counts as one without a usage report", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const file = join(directory, "tokens.jsonl");
    const call = (id: string, fields: Record<string, unknown>) => JSON.stringify({ call_id: id, outcome_status: "ok", role: "r", method: "m", ...fields });
    writeFileSync(
      file,
      [
        call("sane", { generation_attempt: 2, prompt_tokens: 10, completion_tokens: 5, cached_tokens: 4, cost_usd: 0.5 }),
        call("huge prompt", { generation_attempt: 1, prompt_tokens: Number.MAX_SAFE_INTEGER, completion_tokens: 5, cached_tokens: 0 }),
        call("huge cache", { generation_attempt: 1, prompt_tokens: 10, completion_tokens: 5, cached_tokens: 1e12 }),
        call("huge cost", { generation_attempt: 1, prompt_tokens: 10, completion_tokens: 5, cost_usd: 1e12 }),
        call("huge attempts", { outcome_status: "error", error_type: "provider", generation_attempt: 1e9, prompt_tokens: 10, completion_tokens: 5 }),
      ].join("\n"),
    );
    const report = await run({ inputs: [file], json: true }).promise;
    expect(report.overall).toMatchObject({ requests: 5, promptTokens: 30, completionTokens: 15, cachedTokens: 4, callsWithoutTokens: 2, costUsd: 0.5, callsWithCost: 1 });
    expect(report.failingCalls[0]).toMatchObject({ callId: "huge attempts", attempts: null });
    const text = run({ inputs: [file] });
    await text.promise;
    expect(text.stdout.text).toContain("  tokens                30 prompt (4 of them read from the prompt cache, 13.3%) + 15 completion  (2 calls without a usage report)\n");
  });

  test("a duration no call could take (past a year) counts as unknown, as a store record's does: it is neither among the slowest nor in a latency bin", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const file = join(directory, "durations.jsonl");
    const call = (id: string, duration: unknown) => JSON.stringify({ call_id: id, outcome_status: "ok", role: "r", method: "m", duration_ms: duration });
    writeFileSync(file, [call("sane", 12), call("a day", 86_400_000), call("ages", 1e300), call("millennia", 1e15), call("negative", -5)].join("\n"));
    const report = await run({ inputs: [file], json: true }).promise;
    expect(report.calls).toBe(5);
    expect(report.slowestCalls.map((sample) => sample.callId)).toEqual(["a day", "sane"]);
    expect(report.latency.reduce((sum, bin) => sum + bin.calls, 0)).toBe(2);
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

  test("--role and --method keep one role's or one method's calls, in the JSON, the text and the filters the report states", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const log = await realLog(directory);
    const byRole = await run({ inputs: [log], json: true, role: "assistant" }).promise;
    expect(byRole).toMatchObject({ calls: 2, filteredOut: 5, filters: { role: "assistant", method: null, since: null, until: null } });
    expect(Object.keys(byRole.byRole)).toEqual(["assistant"]);
    expect(Object.keys(byRole.byMethod)).toEqual(["assistant.count", "assistant.slow"]);
    expect(byRole.overall.errorTypes).toEqual({ timeout: 1 });
    // A method by its name (in every role), or as role.method.
    const byName = await run({ inputs: [log], json: true, method: "add" }).promise;
    expect(byName).toMatchObject({ calls: 2, filteredOut: 5 });
    const byKey = await run({ inputs: [log], json: true, method: "calculator.recent" }).promise;
    expect(Object.keys(byKey.byMethod)).toEqual(["calculator.recent"]);
    expect(byKey.overall.patterns).toEqual({ slice: 1, map: 1 });
    // Both, and a window: all must hold.
    expect((await run({ inputs: [log], json: true, role: "assistant", method: "add" }).promise).calls).toBe(0);
    expect((await run({ inputs: [log], json: true, role: "calculator", method: "add", since: "2000-01-01" }).promise).calls).toBe(2);

    const text = run({ inputs: [log], role: "calculator", method: "fails" });
    await text.promise;
    expect(text.stdout.text).toContain("  calls                 1  (6 left out by --role calculator --method fails)\n");
  });

  test("a role or method with no calls gives an empty report that says no calls matched", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const log = await realLog(directory);
    const report = await run({ inputs: [log], json: true, role: "nobody" }).promise;
    expect(report).toMatchObject({ calls: 0, filteredOut: 7, byRole: {}, byMethod: {}, failingCalls: [], slowestCalls: [], firstTimestamp: null });
    const result = improv("telemetry", log, "--method", "nothing");
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^improv telemetry\n {2}calls {17}0 {2}\(7 left out by --method nothing\)\n {2}no calls matched --method nothing\n/);
  });

  test("a folder with no logs in it: a usage mistake that says none were found, exit code 2", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    mkdirSync(join(directory, "nested"));
    writeFileSync(join(directory, "nested", "notes.txt"), "not a log");
    const message = `Found no log files in "${directory}" (files ending .jsonl, .ndjson, .log or .json, gzipped or not, rotated ones such as calls.jsonl.1 too, searched in subfolders too). Name a log file, or the folder improv logs to.`;
    await expect(run({ inputs: [directory] }).promise).rejects.toThrow(new UsageError(message));
    expect(improv("telemetry", directory)).toMatchObject({ status: 2, stderr: `improv telemetry: ${message}\n` });
  });

  test("the HTML report's tokens part says why it has nothing to draw, instead of rows of zeros", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const file = join(directory, "calls.jsonl");
    writeFileSync(file, `${JSON.stringify({ timestamp: "2025-01-01T00:00:00.000Z", call_id: "a", outcome_status: "ok", role: "r", method: "m", generation_attempt: 1, prompt_tokens: null, completion_tokens: null })}\n`);
    const html = renderHtmlReport(await run({ inputs: [file] }).promise);
    expect(html).toContain('<p class="empty" id="tokens-none">No provider reported token usage for its 1 requests (ScriptedProvider reports none).</p>');
    expect(html).not.toContain('id="tokens"');
  });

  test("bad filter flags are usage mistakes: a typed error, and exit code 2 from the command line", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const file = join(directory, "one.jsonl");
    writeFileSync(file, JSON.stringify({ call_id: "a", outcome_status: "ok", role: "r", method: "m" }));
    await expect(run({ inputs: [file], role: "  " }).promise).rejects.toThrow(new UsageError("--role needs a name, such as --role calculator."));
    await expect(run({ inputs: [file], method: "" }).promise).rejects.toThrow(UsageError);
    await expect(run({ inputs: [file], since: "2025-02-01", until: "2025-01-01" }).promise).rejects.toThrow("--since (2025-02-01T00:00:00.000Z) is after --until (2025-01-01T00:00:00.000Z): no call could match.");
    const blank = improv("telemetry", file, "--role", "");
    expect(blank).toMatchObject({ status: 2, stderr: "improv telemetry: --role needs a name, such as --role calculator.\n" });
    const missing = improv("telemetry", file, "--method");
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain("error: option '--method <method>' argument missing");
    expect(improv("telemetry", file, "--roles", "x").status).toBe(2);
    expect(improv("telemetry", file, "--role", "r").status).toBe(0);
  });

  test("failed calls are listed with their messages and call ids, newest first, in the JSON and the text", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const log = await realLog(directory);
    const lines = readLogLines(log);
    const failed = lines.filter((line) => line.outcome_status !== "ok");
    const report = await run({ inputs: [log], json: true }).promise;
    expect(report.failingCalls.map((call) => [call.callId, call.role, call.method, call.errorType])).toEqual([...failed].reverse().map((line) => [line.call_id, line.role, line.method, line.error_type]));
    expect(report.failingCalls.map((call) => call.errorMessage)).toEqual(["The program ran longer than executionTimeoutMs (100 ms) and was stopped.", "Error: no"]);
    const [broken, slow] = failed as [Record<string, unknown>, Record<string, unknown>];
    expect(report.byMethod["calculator.broken"]?.latestErrors).toEqual([expect.objectContaining({ callId: broken.call_id, errorMessage: "Error: no", errorType: "execution" })]);
    expect(report.byMethod["calculator.add"]?.latestErrors).toEqual([]);
    const text = run({ inputs: [log] });
    await text.promise;
    expect(text.stdout.text).toContain(
      `  latest errors         (newest first)\n    ${slow.timestamp}  assistant.slow  timeout  The program ran longer than executionTimeoutMs (100 ms) and was stopped.  (call ${(slow.call_id as string).slice(0, 8)})\n` +
        `    ${broken.timestamp}  calculator.broken  execution  Error: no  (call ${(broken.call_id as string).slice(0, 8)})\n`,
    );
  });

  test("older lines without an error message, long messages and control characters in them are shown safely", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const file = join(directory, "errors.jsonl");
    const call = (id: string, timestamp: string, fields: Record<string, unknown>) => JSON.stringify({ timestamp, call_id: id, outcome_status: "error", error_type: "execution", role: "r", method: "m", ...fields });
    writeFileSync(
      file,
      [
        call("old", "2025-01-01T00:00:01.000Z", {}),
        call("long", "2025-01-01T00:00:02.000Z", { error_message: "x".repeat(5_000) }),
        call("escape", "2025-01-01T00:00:03.000Z", { error_message: "a\u001b[2Jb\nc", error_type: "__proto__" }),
      ].join("\n"),
    );
    const report = await run({ inputs: [file], json: true }).promise;
    expect(report.failingCalls.map((sample) => sample.callId)).toEqual(["escape", "long", "old"]);
    expect(report.failingCalls[1]?.errorMessage).toHaveLength(1_001);
    expect(report.failingCalls[2]?.errorMessage).toBeNull();
    expect(report.overall.errorTypes).toEqual({ execution: 2, "(unknown)": 1 });
    expect(Object.getPrototypeOf(report.overall.errorTypes)).toBe(Object.prototype);
    const text = run({ inputs: [file] });
    await text.promise;
    expect(text.stdout.text).toContain("  execution  (no message in this log line)  (call old)\n");
    expect(text.stdout.text).toContain("  a [2Jb c  (call escape)\n");
    expect(text.stdout.text).not.toContain("\u001b");
  });

  test("the slowest calls and the latest failures are kept bounded, whatever order the lines come in", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const call = (index: number) => JSON.stringify({ timestamp: new Date(Date.UTC(2025, 0, 1, 0, 0, index)).toISOString(), call_id: `c${index}`, outcome_status: index % 2 === 0 ? "error" : "ok", error_type: index % 2 === 0 ? "execution" : null, role: "r", method: "m", duration_ms: (index * 37) % 101 });
    const indices = Array.from({ length: 100 }, (_, index) => index);
    // Two files, each out of order.
    writeFileSync(join(directory, "a.jsonl"), indices.filter((index) => index % 3 === 0).reverse().map(call).join("\n"));
    writeFileSync(join(directory, "b.jsonl"), indices.filter((index) => index % 3 !== 0).map(call).join("\n"));
    const report = await run({ inputs: [directory], json: true }).promise;
    const byDuration = [...indices].sort((a, b) => ((b * 37) % 101) - ((a * 37) % 101)).slice(0, 10);
    expect(report.slowestCalls.map((sample) => sample.callId)).toEqual(byDuration.map((index) => `c${index}`));
    expect(report.failingCalls.map((sample) => sample.callId)).toEqual(indices.filter((index) => index % 2 === 0).reverse().slice(0, 20).map((index) => `c${index}`));
    expect(report.byMethod["r.m"]?.latestErrors.map((sample) => sample.callId)).toEqual(["c98", "c96", "c94"]);
  });

  test("repair and reuse: where programs came from, kept programs that failed or were dropped, and why programs were not kept", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const log = join(directory, "calls.jsonl");
    const provider = new ScriptedProvider({ programs: { "shouter.shout": ["return args[0].toUpperCase()", "return String(args[0]).toUpperCase()"], "shouter.ask": "return 'yes ' + args[0]" } });
    const shouter = Agent.for("shouter", { provider, log, maxReuseFailures: 1 });
    await shouter.shout("hi"); // generated, kept
    await shouter.shout("ho"); // reused
    await shouter.shout(42); // the kept program fails and is dropped; the repair works and is kept
    await shouter.ask("a");
    await shouter.ask("b");
    const prose = JSON.stringify({ call_id: "p", outcome_status: "ok", role: "philosopher", method: "argue", reuse_decision: { kept: false, reason: 'its result is prose it wrote itself ("justice is harmony"): an answer, not a method' } });
    const other = prose.replace("justice is harmony", "courage is knowledge").replace('"p"', '"q"');
    writeFileSync(join(directory, "more.jsonl"), `${prose}\n${other}\n`);
    const report = await run({ inputs: [directory], json: true }).promise;
    expect(report.byMethod["shouter.shout"]).toMatchObject({ calls: 3, reused: 1, programSources: { generated: 1, reused: 1, repaired: 1 }, repairedOk: 1, keptProgramFailed: 1, keptProgramDropped: 1, keptNew: 2, notKept: 0 });
    expect(report.byMethod["shouter.ask"]).toMatchObject({ programSources: { generated: 2 }, keptNew: 0, notKept: 2 });
    expect(report.overall).toMatchObject({ keptNew: 2, notKept: 4, keptProgramDropped: 1 });
    expect(report.notKeptReasons).toEqual({
      "ask by convention takes free-form requests (name it in reuse: { only } to keep its programs)": 2,
      'its result is prose it wrote itself ("…"): an answer, not a method': 2,
    });
    const text = run({ inputs: [directory] });
    await text.promise;
    expect(text.stdout.text).toContain("  programs              3 generated, 1 reused, 1 repaired\n");
    expect(text.stdout.text).toContain("  repairs that worked   1  (kept programs that failed by their own mistake: 1, dropped after failing in a row: 1)\n");
    expect(text.stdout.text).toContain("  new programs kept     2  (4 that worked were not kept)\n");
  });

  test("the period and the latest errors go by time, not by the text of timestamps; a timestamp that does not parse is no time", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const file = join(directory, "times.jsonl");
    const call = (id: string, timestamp: unknown) => JSON.stringify({ timestamp, call_id: id, outcome_status: "error", error_type: "execution", role: "r", method: "m" });
    writeFileSync(
      file,
      [
        call("first", "2025-06-01T00:00:00.000Z"),
        // Later than the next one, though its text sorts before it.
        call("offset", "2025-06-01T23:00:00.000-05:00"),
        call("utc", "2025-06-02T01:00:00.000Z"),
        call("words", "zzz"),
        call("forged", "2025-06-02T00:00:00.000Z\u001b[1A\rspoof"),
        call("number", 1_750_000_000_000),
      ].join("\n"),
    );
    const report = await run({ inputs: [file], json: true }).promise;
    expect([report.firstTimestamp, report.lastTimestamp]).toEqual(["2025-06-01T00:00:00.000Z", "2025-06-02T04:00:00.000Z"]);
    expect(report.failingCalls.map((sample) => [sample.callId, sample.timestamp])).toEqual([
      ["offset", "2025-06-02T04:00:00.000Z"],
      ["utc", "2025-06-02T01:00:00.000Z"],
      ["first", "2025-06-01T00:00:00.000Z"],
      ["words", null],
      ["forged", null],
      ["number", null],
    ]);
    const text = run({ inputs: [file] });
    await text.promise;
    expect(text.stdout.text).toContain("  period                2025-06-01T00:00:00.000Z … 2025-06-02T04:00:00.000Z\n");
    expect(text.stdout.text).toContain("    (no time)  r.m  execution  (no message in this log line)  (call words)\n");
    expect(text.stdout.text).not.toContain("spoof");
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

  test("the timeline steps by the second for a short log and by the minute for a long one, every call and error in a step", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const line = (ms: number, failed: boolean) => JSON.stringify({ timestamp: new Date(Date.UTC(2026, 0, 1) + ms).toISOString(), call_id: String(ms), outcome_status: failed ? "error" : "ok", error_type: failed ? "execution" : null, role: "r", method: "m" });
    const short = join(directory, "short.jsonl");
    // 40 seconds of calls, one every 500 ms, every fifth failing.
    writeFileSync(short, Array.from({ length: 80 }, (_, index) => line(index * 500, index % 5 === 0)).join("\n"));
    const quick = (await run({ inputs: [short], json: true }).promise).timeline;
    expect(quick.stepSeconds).toBe(1);
    expect(quick.points).toHaveLength(40);
    expect(quick.points[0]).toEqual({ start: "2026-01-01T00:00:00.000Z", calls: 2, errors: 1 });
    expect(quick.points.reduce((sum, point) => sum + point.calls, 0)).toBe(80);
    expect(quick.points.reduce((sum, point) => sum + point.errors, 0)).toBe(16);
    const long = join(directory, "long.jsonl");
    // Three hours, a call a minute.
    writeFileSync(long, Array.from({ length: 180 }, (_, index) => line(index * 60_000, false)).join("\n"));
    const slow = (await run({ inputs: [long], json: true }).promise).timeline;
    expect(slow.stepSeconds).toBe(180);
    expect(slow.points).toHaveLength(60);
    expect(slow.points.every((point) => point.calls === 3)).toBe(true);
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

  test("a gzipped log cut short or corrupt: the lines before the damage are read, the file is named among the malformed, and the other files are read", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const line = (id: string) => JSON.stringify({ call_id: id, outcome_status: "ok", role: "r", method: "m", args: [id.repeat(20)] });
    const whole = gzipSync(`${Array.from({ length: 5_000 }, (_, index) => line(`c${index * 7919}`)).join("\n")}\n`);
    writeFileSync(join(directory, "a.jsonl"), `${line("plain")}\n`);
    writeFileSync(join(directory, "b.jsonl.gz"), whole.subarray(0, Math.floor(whole.length / 2)));
    writeFileSync(join(directory, "c.jsonl"), `${line("after")}\n`);
    const report = await run({ inputs: [directory], json: true }).promise;
    const cut = join(directory, "b.jsonl.gz");
    const [, linesRead] = new RegExp(`^${cut.replace(/[.\\]/g, "\\$&")} \\(truncated or corrupt gzip after line (\\d+)\\)$`).exec(report.malformed.examples[0] ?? "") ?? [];
    expect(Number(linesRead)).toBeGreaterThan(1_000);
    expect(report.malformed.count).toBe(1);
    expect(report.calls).toBe(Number(linesRead) + 2);
    // Bytes overwritten in the middle: whatever is read before zlib notices is kept; the file is named.
    const corrupt = Buffer.from(whole);
    corrupt.fill(0xff, 2_000, 2_100);
    writeFileSync(cut, corrupt);
    const again = await run({ inputs: [directory], json: true }).promise;
    expect(again.malformed.examples.at(-1)).toMatch(new RegExp(`^${cut.replace(/[.\\]/g, "\\$&")} \\(truncated or corrupt gzip after line \\d+\\)$`));
    expect(again.byRole.r?.calls).toBeGreaterThanOrEqual(2);
  });

  test("rotated logs (calls.jsonl.1, calls.jsonl.2.gz, calls.log.3.gz) are read, and a file named twice is read once", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const line = (id: string) => `${JSON.stringify({ call_id: id, outcome_status: "ok", role: "r", method: "m" })}\n`;
    writeFileSync(join(directory, "calls.jsonl"), line("1"));
    writeFileSync(join(directory, "calls.jsonl.1"), line("2"));
    writeFileSync(join(directory, "calls.jsonl.2.gz"), gzipSync(line("3")));
    writeFileSync(join(directory, "calls.log.3.gz"), gzipSync(line("4")));
    writeFileSync(join(directory, "calls.jsonl.bak"), line("not read"));
    writeFileSync(join(directory, "notes.1"), line("not read"));
    expect((await run({ inputs: [directory], json: true }).promise).calls).toBe(4);
    const elsewhere = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    symlinkSync(join(directory, "calls.jsonl"), join(elsewhere, "same.jsonl"));
    const twice = await run({ inputs: [directory, join(directory, "calls.jsonl"), join(directory, "..", basename(directory), "calls.jsonl.1"), elsewhere], json: true }).promise;
    expect(twice.calls).toBe(4);
  });

  test("a missing input is a clear error", async () => {
    await expect(run({ inputs: ["/nonexistent/improv.jsonl"] }).promise).rejects.toThrow('Cannot read "/nonexistent/improv.jsonl": no such file or directory.');
  });

  test("tool calls from a real log are reported by role, method and tool, with failures and the outcome tool", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const log = join(directory, "calls.jsonl");
    const provider = new ScriptedProvider({
      programs: {
        "desk.forecast": "const a = await tools.weather({ city: args[0] }); const b = await tools.weather({ city: args[0] }); return a.tempC + b.tempC",
        "desk.outage": "return await tools.weather({ city: 'nowhere' })",
        "desk.note": "try { await tools.weather({ city: 'nowhere' }) } catch {} await tools.notes.append({ text: args[0] }); return 'noted'",
        "desk.maybe": "if (args[0]) await tools.notes.append({ text: 'x' }); return 1",
        "desk.plain": "return args[0] + 1",
      },
    });
    const input = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    const weather = {
      description: "Current weather for a city.",
      inputSchema: input,
      annotations: { readOnlyHint: true },
      execute: async ({ city }: { city: string }) => {
        if (city === "nowhere") throw new Error("no such city");
        return { city, tempC: 21 };
      },
    };
    const append = { description: "Adds a note.", inputSchema: { type: "object", properties: { text: { type: "string" } } }, annotations: { readOnlyHint: true }, execute: async () => ({ ok: true }) };
    const desk = Agent.for("desk", { provider, log, tools: { weather, notes: { append } } });
    const plain = Agent.for("plain", { provider: new ScriptedProvider({ programs: { "plain.add": "return args[0] + 1" } }), log });
    expect((await desk.forecast("Paris")).value).toBe(42);
    expect((await desk.outage()).errorType).toBe("tool");
    expect((await desk.note("hi")).value).toBe("noted");
    expect((await desk.maybe(false)).value).toBe(1);
    expect((await desk.plain(1)).value).toBe(2);
    await plain.add(1);

    const report = await run({ inputs: [log], json: true }).promise;
    expect(report.overall).toMatchObject({ calls: 6, callsUsingTools: 3, toolCalls: 5, toolErrors: 2, toolOutcomes: 1, reachesTools: 4 });
    expect(report.overall.toolMs).toBeGreaterThan(0);
    expect(report.overall.tools).toEqual({
      weather: { calls: 3, callsWithFailures: 2, referenced: 3 },
      // The note call's failed call was weather's, not notes.append's (tool_failed_names).
      "notes.append": { calls: 1, callsWithFailures: 0, referenced: 2 },
    });
    expect(report.byRole.desk).toMatchObject({ calls: 5, callsUsingTools: 3, toolCalls: 5, toolErrors: 2, toolOutcomes: 1, reachesTools: 4 });
    expect(report.byRole.plain).toMatchObject({ calls: 1, callsUsingTools: 0, toolCalls: 0, reachesTools: 0, tools: {} });
    expect(report.byMethod["desk.forecast"]).toMatchObject({ callsUsingTools: 1, toolCalls: 2, toolErrors: 0, tools: { weather: { calls: 1, callsWithFailures: 0, referenced: 1 } } });
    expect(report.byMethod["desk.outage"]).toMatchObject({ errors: 1, errorTypes: { tool: 1 }, toolCalls: 1, toolErrors: 1, toolOutcomes: 1 });
    expect(report.byMethod["desk.maybe"]).toMatchObject({ callsUsingTools: 0, reachesTools: 1, tools: { "notes.append": { calls: 0, callsWithFailures: 0, referenced: 1 } } });

    const text = run({ inputs: [log] });
    await text.promise;
    const section = text.stdout.text.slice(text.stdout.text.indexOf("\ntools\n"));
    expect(section.startsWith("\ntools\n  calls using tools     3  (50.0% of calls)\n")).toBe(true);
    expect(section).toMatch(/\n {2}tool calls {12}5 {2}\(2 failed, 40\.0%; \d+\.\d ms in tools\)\n/);
    expect(section).toContain("  outcome tool          1  (calls ended by a tool's failure left uncaught)");
    expect(section).toContain("  code reaches tools    4  (66.7% of calls)");
    // calls, using tools, reach tools, tool calls, failed, tool ms, outcome tool
    expect(section).toMatch(/\ndesk +5 +60\.0% +80\.0% +5 +2 +\d+\.\d +1\n/);
    expect(section).toMatch(/\ndesk\.outage +1 +100\.0% +100\.0% +1 +1 +\d+\.\d +1\n/);
    expect(section).toMatch(/\ndesk\.maybe +1 +0\.0% +100\.0% +0 +0 +0\.0 +0\n/);
    // Groups that neither call nor reach tools are left out.
    expect(section).not.toMatch(/\n(plain|desk\.plain) /);
    // tool, calls, with failures, referenced
    expect(section).toMatch(/\nweather +3 +2 +3\nnotes\.append +1 +0 +2\n/);
  });

  test("tool figures are summed exactly over lines, older lines without them count as none, and --json carries them", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const file = join(directory, "tools.jsonl");
    const call = (id: string, fields: Record<string, unknown>) => JSON.stringify({ timestamp: "2025-01-01T00:00:00.000Z", call_id: id, outcome_status: "ok", error_type: null, role: "desk", method: "ask", ...fields });
    writeFileSync(
      file,
      [
        call("1", { tool_call_count: 3, tool_names: ["weather", "notes.append"], tool_error_count: 1, tool_ms: 12.5, tool_access_detected: true, tools_referenced: ["weather", "notes.append"] }),
        call("2", { tool_call_count: 2, tool_names: ["weather"], tool_error_count: 0, tool_ms: 7.25, tool_access_detected: true, tools_referenced: ["weather"] }),
        call("3", { method: "fail", outcome_status: "error", error_type: "tool", tool_call_count: 1, tool_names: ["weather"], tool_error_count: 1, tool_ms: 30, tool_access_detected: true, tools_referenced: ["weather"] }),
        call("4", { role: "other", tool_call_count: 0, tool_names: [], tool_error_count: 0, tool_ms: 0, tool_access_detected: false, tools_referenced: [] }),
        call("5", { role: "other" }),
      ].join("\n"),
    );
    const { promise, stdout } = run({ inputs: [file], json: true });
    const report = await promise;
    expect(report.overall).toMatchObject({ calls: 5, callsUsingTools: 3, toolCalls: 6, toolErrors: 2, toolMs: 49.75, toolOutcomes: 1, reachesTools: 3 });
    expect(report.overall.tools).toEqual({ weather: { calls: 3, callsWithFailures: 2, referenced: 3 }, "notes.append": { calls: 1, callsWithFailures: 1, referenced: 1 } });
    expect(report.byMethod["desk.ask"]).toMatchObject({ calls: 2, callsUsingTools: 2, toolCalls: 5, toolErrors: 1, toolMs: 19.75, toolOutcomes: 0 });
    expect(report.byMethod["desk.fail"]).toMatchObject({ calls: 1, toolCalls: 1, toolErrors: 1, toolOutcomes: 1, tools: { weather: { calls: 1, callsWithFailures: 1, referenced: 1 } } });
    expect(report.byRole.other).toMatchObject({ calls: 2, callsUsingTools: 0, toolCalls: 0, toolErrors: 0, toolMs: 0, reachesTools: 0, tools: {} });
    const printed = JSON.parse(stdout.text) as { overall: Record<string, unknown>; byRole: Record<string, Record<string, unknown>> };
    expect(printed.overall).toMatchObject({ toolCalls: 6, toolErrors: 2, toolMs: 49.75, toolOutcomes: 1, tools: { weather: { calls: 3 } } });
    expect(printed.byRole.desk).toMatchObject({ callsUsingTools: 3, reachesTools: 3 });

    const text = run({ inputs: [file] });
    await text.promise;
    expect(text.stdout.text).toContain("  tool calls            6  (2 failed, 33.3%; 49.8 ms in tools)");
    expect(text.stdout.text).toMatch(/\ntools by role +calls +using tools +reach tools +tool calls +failed +tool ms +outcome tool\ndesk +3 +100\.0% +100\.0% +6 +2 +49\.8 +1\n\n/);
    expect(text.stdout.text).toMatch(/\ndesk\.ask +2 +100\.0% +100\.0% +5 +1 +19\.8 +0\ndesk\.fail +1 +100\.0% +100\.0% +1 +1 +30\.0 +1\n/);
  });

  test("tool_failed_names says which tool failed; older lines without it count their failures toward every tool they called", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const file = join(directory, "failed-names.jsonl");
    const call = (id: string, fields: Record<string, unknown>) => JSON.stringify({ call_id: id, outcome_status: "ok", role: "desk", method: "ask", tool_call_count: 2, tool_names: ["weather", "notes.append"], tool_ms: 1, ...fields });
    writeFileSync(
      file,
      [
        call("new", { tool_error_count: 1, tool_failed_names: ["notes.append"] }),
        call("old", { tool_error_count: 1 }),
        call("claims a tool it did not call", { tool_error_count: 1, tool_failed_names: ["elsewhere"] }),
        call("names failures without any", { tool_error_count: 0, tool_failed_names: ["weather"] }),
      ].join("\n"),
    );
    const report = await run({ inputs: [file], json: true }).promise;
    expect(report.overall.tools).toEqual({ weather: { calls: 4, callsWithFailures: 1, referenced: 0 }, "notes.append": { calls: 4, callsWithFailures: 2, referenced: 0 } });
  });

  test("logs without tool use say so in one line", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const log = await realLog(directory);
    const report = await run({ inputs: [log], json: true }).promise;
    expect(report.overall).toMatchObject({ callsUsingTools: 0, toolCalls: 0, toolErrors: 0, toolMs: 0, toolOutcomes: 0, reachesTools: 0, tools: {} });
    const text = run({ inputs: [log] });
    await text.promise;
    expect(text.stdout.text.endsWith("\n\ntools                   no tool calls, and no program reaches tools\n")).toBe(true);
    expect(text.stdout.text).not.toContain("tools by role");
  });

  test("malformed tool fields are skipped, never fatal, and do not skew the figures", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const file = join(directory, "bad-tools.jsonl");
    const call = (id: string, fields: Record<string, unknown>) => JSON.stringify({ call_id: id, outcome_status: "ok", role: "r", method: "m", ...fields });
    const many = Array.from({ length: 100_000 }, (_, index) => `t${index}`);
    writeFileSync(
      file,
      [
        call("sane", { tool_call_count: 2, tool_names: ["weather"], tool_error_count: 1, tool_ms: 4 }),
        call("names-not-array", { tool_call_count: 1, tool_names: "weather", tool_error_count: 0, tool_ms: 1 }),
        call("negative", { tool_call_count: -5, tool_names: ["weather"], tool_error_count: -1, tool_ms: -3 }),
        call("fractional", { tool_call_count: 1.5, tool_names: ["weather"], tool_error_count: 0.5, tool_ms: "7" }),
        call("absurd count", { tool_call_count: 1e15, tool_names: ["weather"], tool_error_count: 1e15, tool_ms: 1e300 }),
        call("absurd time", { tool_call_count: 1, tool_names: ["weather"], tool_error_count: 0, tool_ms: 1e300 }),
        call("more failures than calls", { tool_call_count: 1, tool_names: ["weather"], tool_error_count: 9, tool_ms: 1 }),
        call("more names than calls", { tool_call_count: 1, tool_names: ["a", "b", "c"], tool_error_count: 0, tool_ms: 1 }),
        call("names that are not tools", { tool_call_count: 5, tool_names: [42, null, { name: "x" }, "", "no spaces", "<b>", "__proto__", "a.b.c", "x".repeat(65), "weather", "weather"], tool_error_count: 0, tool_ms: 1 }),
        call("huge arrays", { tool_call_count: 2_000, tool_names: many, tool_error_count: 0, tool_ms: 1, tool_access_detected: "yes", tools_referenced: many }),
        call("names without calls", { tool_names: ["weather"], tool_ms: 99, tool_access_detected: true, tools_referenced: { weather: true } }),
      ].join("\n"),
    );
    const report = await run({ inputs: [file], json: true }).promise;
    expect(report.calls).toBe(11);
    expect(report.malformed.count).toBe(0);
    // Counted: every sane count (2+1+1+1+1+5+2000, the absurd and negative ones as none), failures no larger than calls, sane time only with calls.
    expect(report.overall).toMatchObject({ callsUsingTools: 7, toolCalls: 2_011, toolErrors: 1, toolMs: 9, toolOutcomes: 0, reachesTools: 1 });
    // weather, the first 49 names of the huge lists, and the rest of their first 1,000 under (other).
    expect(Object.keys(report.overall.tools)).toHaveLength(51);
    expect(report.overall.tools.weather).toEqual({ calls: 4, callsWithFailures: 1, referenced: 0 });
    expect(report.overall.tools.t48).toEqual({ calls: 1, callsWithFailures: 0, referenced: 1 });
    expect(report.overall.tools.t49).toBeUndefined();
    expect(report.overall.tools["(other)"]).toEqual({ calls: 1, callsWithFailures: 0, referenced: 1 });
    expect(Object.getPrototypeOf(report.overall.tools)).toBe(Object.prototype);
    const text = run({ inputs: [file] });
    await text.promise;
    expect(text.stdout.text).toContain("… and 36 more tools");
  });

  test("200,000 distinct roles: the first 200 roles and 500 methods are kept apart, the rest counted under (other), and the report comes out", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const file = join(directory, "distinct.jsonl");
    writeFileSync(file, `${Array.from({ length: 200_000 }, (_, index) => `{"call_id":"c${index}","outcome_status":"ok","role":"r${index}","method":"m"}`).join("\n")}\n`);
    const { promise, stdout } = run({ inputs: [file], json: true });
    const report = await promise;
    expect(report.calls).toBe(200_000);
    expect(Object.keys(report.byRole)).toHaveLength(201);
    expect(report.byRole.r199?.calls).toBe(1);
    expect(report.byRole.r200).toBeUndefined();
    expect(report.byRole["(other)"]?.calls).toBe(199_800);
    expect(Object.keys(report.byMethod)).toHaveLength(501);
    expect(report.byMethod["(other)"]?.calls).toBe(199_500);
    expect(report.folded).toEqual({ roles: 199_800, methods: 199_500, errorTypes: 0, scans: 0, notKeptReasons: 0 });
    expect(stdout.text.length).toBeLessThan(5_000_000);
    // The same report as text. Most calls first: (other) leads each table, and a line after it says how many names it holds.
    const text = formatReport(report);
    expect(text).toMatch(/\nby role +calls .*\n\(other\) +199800 +0\.0% /);
    expect(text).toMatch(/\nr199 +1 +0\.0% .*\n… and 199800 more roles, counted under \(other\)\n\nby method/);
    expect(text).toMatch(/\nby method +calls .*\n\(other\) +199500 +0\.0% /);
    expect(text).toMatch(/\n… and 199500 more methods, counted under \(other\)\n/);
  });

  test("error types and history scans: at most 50 a group, not-kept reasons at most 20, the rest counted under (other), with how many names went there", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const file = join(directory, "distinct-keys.jsonl");
    const line = (index: number) =>
      JSON.stringify({ call_id: `c${index}`, outcome_status: "error", error_type: `t${index}`, role: index % 2 === 0 ? "even" : "odd", method: "m", history_scan: `s${index}`, reuse_decision: { kept: false, reason: `reason ${index}` } });
    writeFileSync(file, Array.from({ length: 1_000 }, (_, index) => line(index)).join("\n"));
    const report = await run({ inputs: [file], json: true }).promise;
    expect(Object.keys(report.overall.errorTypes)).toHaveLength(51);
    expect(report.overall.errorTypes).toMatchObject({ t0: 1, t49: 1, "(other)": 950 });
    expect(report.overall.scans).toMatchObject({ s0: 1, s49: 1, "(other)": 950 });
    // Each group has room of its own.
    expect(report.byRole.odd?.errorTypes).toMatchObject({ t1: 1, t99: 1, "(other)": 450 });
    expect(Object.keys(report.notKeptReasons)).toHaveLength(21);
    expect(report.notKeptReasons["(other)"]).toBe(980);
    expect(report.folded).toEqual({ roles: 0, methods: 0, errorTypes: 950, scans: 950, notKeptReasons: 980 });
    const text = run({ inputs: [file] });
    await text.promise;
    expect(text.stdout.text).toMatch(/\n {4}\(other\) +950 +95\.0%\n {4}t0 +1 +0\.1%\n/);
    expect(text.stdout.text).toMatch(/\n {4}t49 +1 +0\.1%\n {4}… and 950 more error types, counted under \(other\)\n/);
    expect(text.stdout.text).toContain("  scans                 s0 1, s1 1, ");
    expect(text.stdout.text).toContain(", s49 1, (other) 950  (and 950 more kinds, counted under (other))\n");
  });

  test("each group keeps at most 50 tool names, counting calls of the others once under (other)", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-telemetry-"));
    const file = join(directory, "many-tools.jsonl");
    const call = (id: string, role: string, names: string[], errors = 0) => JSON.stringify({ call_id: id, outcome_status: "ok", role, method: "m", tool_call_count: names.length, tool_names: names, tool_error_count: errors, tool_ms: 1 });
    const lines = Array.from({ length: 50 }, (_, index) => call(`a${index}`, "first", [`tool${index}`]));
    lines.push(call("b1", "second", ["tool0", "late1", "late2"], 1), call("b2", "first", ["tool0", "late1", "late2"], 1), call("b3", "first", ["late3"]));
    writeFileSync(file, lines.join("\n"));
    const report = await run({ inputs: [file], json: true }).promise;
    const first = report.byRole.first!.tools;
    expect(Object.keys(first)).toHaveLength(51);
    expect(first.tool0).toEqual({ calls: 2, callsWithFailures: 1, referenced: 0 });
    expect(first["(other)"]).toEqual({ calls: 2, callsWithFailures: 1, referenced: 0 });
    expect(first.late1).toBeUndefined();
    // Another group has room of its own.
    expect(report.byRole.second!.tools).toEqual({
      tool0: { calls: 1, callsWithFailures: 1, referenced: 0 },
      late1: { calls: 1, callsWithFailures: 1, referenced: 0 },
      late2: { calls: 1, callsWithFailures: 1, referenced: 0 },
    });
    // Over all roles, the first role's 50 names fill the list: the second role's new names go under (other) too.
    expect(report.overall.tools["(other)"]).toEqual({ calls: 3, callsWithFailures: 2, referenced: 0 });
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
