import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, test, vi } from "vitest";
import { Agent, ScriptedProvider } from "../../src/index.ts";
import { readLogLines, tempLogPath } from "../../test-support/logs.ts";

const LOG_FIELDS = [
  "timestamp", "runtime", "role", "model", "method", "args", "kwargs", "code", "duration_ms", "generation_attempt", "outcome_status",
  "error_type", "trace_id", "call_id", "parent_call_id", "depth", "history_record_appended", "conversation_history_size",
  "history_access_detected", "history_query_patterns", "history_scan", "error_message", "kept_program_dropped",
];

/** A log path in folders not made yet, which the log makes. */
const tempLog = () => tempLogPath("improv-log-", join("nested", "deeper", "calls.jsonl"));

const programs = {
  add: "context.total = (context.total ?? 0) + args[0]; return context.total",
  failures: "return context.conversation_history.filter((r) => !r.outcome_summary.ok).length",
  bad: "throw new Error('bad')",
};

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

describe("log lines", () => {
  test("a file path gets one JSON line per call with every field, creating directories", async () => {
    const log = tempLog();
    const agent = Agent.for("calculator", { provider: new ScriptedProvider({ programs, model: "scripted-model" }), log });
    await agent.add(2);
    await agent.bad();
    await agent.failures();
    const lines = readLogLines(log);
    expect(lines).toHaveLength(3);
    for (const line of lines) for (const field of LOG_FIELDS) expect(line).toHaveProperty(field);
    expect(lines[0]).toMatchObject({
      runtime: "improv", role: "calculator", model: "scripted-model", method: "add", args: [2], kwargs: {}, generation_attempt: 1,
      outcome_status: "ok", error_type: null, parent_call_id: null, depth: 0, history_record_appended: true, conversation_history_size: 1,
      history_access_detected: false, history_query_patterns: [], history_scan: "ast",
    });
    expect(lines[1]).toMatchObject({ method: "bad", outcome_status: "error", error_type: "execution", error_message: "Error: bad", conversation_history_size: 2 });
    expect(lines[0]).toMatchObject({ error_message: null, kept_program_dropped: false });
    expect(lines[2]).toMatchObject({ method: "failures", history_access_detected: true, history_query_patterns: ["count", "filter"], history_scan: "ast" });
    expect(lines[0]).not.toHaveProperty("system_prompt");
  });

  test("each log line agrees with its history record", async () => {
    const log = tempLog();
    const agent = Agent.for("calculator", { provider: new ScriptedProvider({ programs }), log });
    await agent.add(1);
    await agent.bad();
    const records = Agent.history(agent);
    readLogLines(log).forEach((line, index) => {
      const record = records[index]!;
      expect(line.call_id).toBe(record.call_id);
      expect(line.outcome_status).toBe(record.outcome_summary.status);
      expect(line.error_type).toBe(record.outcome_summary.error_type);
      expect(line.trace_id).toBe(record.trace_id);
      expect(line.duration_ms).toBe(record.duration_ms);
    });
  });

  test("an unparsable last program is scanned as text and says so", async () => {
    const log = tempLog();
    const agent = Agent.for("calculator", { provider: new ScriptedProvider({ programs: { m: "return context.conversation_history.map((r) => r.call_id" } }), log, maxGenerationAttempts: 1 });
    expect((await agent.m()).errorType).toBe("invalid_code");
    expect(readLogLines(log)[0]).toMatchObject({ history_scan: "text", history_access_detected: true, history_query_patterns: ["map"], outcome_status: "error" });
  });

  test("a pino logger can be passed", async () => {
    const lines: string[] = [];
    const logger = pino({ base: null }, { write: (line: string) => lines.push(line) });
    await Agent.for("calculator", { provider: new ScriptedProvider({ programs }), log: logger }).add(1);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toMatchObject({ method: "add", outcome_status: "ok" });
  });

  test("IMPROV_LOG names the file when the option is absent, and log: false turns it off", async () => {
    const log = tempLog();
    vi.stubEnv("IMPROV_LOG", log);
    await Agent.for("calculator", { provider: new ScriptedProvider({ programs }) }).add(1);
    await Agent.for("calculator", { provider: new ScriptedProvider({ programs }), log: false }).add(1);
    expect(readLogLines(log)).toHaveLength(1);
  });

  test("debug mode (IMPROV_DEBUG) adds the prompts and a bounded context snapshot", async () => {
    const log = tempLog();
    vi.stubEnv("IMPROV_DEBUG", "1");
    // No reuse: a reused call renders no prompt, and this test reads the last call's.
    const agent = Agent.for<{ big: string }>("calculator", { provider: new ScriptedProvider({ programs }), log, historyPreviewLimit: 2, reuse: false });
    agent.big = "x".repeat(20_000);
    for (let i = 0; i < 4; i += 1) await agent.add(i);
    const line = readLogLines(log).at(-1)!;
    expect(line.system_prompt).toContain("context.conversation_history");
    expect(line.user_prompt).toContain("Method: add");
    const context = line.context as { values: Record<string, unknown>; conversation_history: { count: number; preview: unknown[] } };
    expect(context.values["[truncated]"]).toBe("context is larger than 8192 bytes as JSON");
    expect(context.values.keys).toEqual(["big", "total"]);
    expect(context.conversation_history.count).toBe(4);
    expect(context.conversation_history.preview).toHaveLength(2);
    expect(JSON.stringify(line).length).toBeLessThan(20_000);
  });

  test("the line cuts the program and the model as the record does, so the two agree", async () => {
    const log = tempLog();
    const model = `scripted-${"m".repeat(5_000)}`;
    const agent = Agent.for("calculator", { provider: new ScriptedProvider({ programs: { long: `return 1 // ${"x".repeat(30_000)}` }, model }), log });
    expect((await agent.long()).value).toBe(1);
    const [line] = readLogLines(log);
    const [record] = Agent.history(agent);
    expect({ code: line!.code, model: line!.model }).toEqual({ code: record!.program, model: record!.model });
    expect((line!.code as string).startsWith(`return 1 // ${"x".repeat(9_988)}…[truncated`)).toBe(true);
    expect((line!.model as string).length).toBeLessThan(250);
  });

  test("a small context appears whole in the debug snapshot", async () => {
    const log = tempLog();
    const agent = Agent.for("calculator", { provider: new ScriptedProvider({ programs }), log, debug: true });
    await agent.add(5);
    expect((readLogLines(log)[0]!.context as { values: unknown }).values).toEqual({ total: 5 });
  });
});

describe("delegated calls in the log", () => {
  test("a call tree can be rebuilt from the log alone", async () => {
    const log = tempLog();
    const agent = Agent.for("builder", {
      provider: new ScriptedProvider({
        programs: {
          "builder.build": "const a = await delegate('helper').step(1); const b = await delegate('helper').step(2); return [a.value, b.value]",
          "helper.step": "return (await delegate('leaf').twice(args[0])).value",
          "leaf.twice": "return args[0] * 2",
        },
      }),
      log,
    });
    expect((await agent.build()).value).toEqual([2, 4]);
    const lines = readLogLines(log);
    expect(lines).toHaveLength(5);
    expect(new Set(lines.map((l) => l.trace_id)).size).toBe(1);
    const root = lines.find((l) => l.parent_call_id === null)!;
    expect(root).toMatchObject({ method: "build", depth: 0 });
    const children = lines.filter((l) => l.parent_call_id === root.call_id);
    expect(children.map((l) => [l.method, l.depth])).toEqual([["step", 1], ["step", 1]]);
    for (const child of children) {
      const grandchildren = lines.filter((l) => l.parent_call_id === child.call_id);
      expect(grandchildren.map((l) => [l.role, l.method, l.depth])).toEqual([["leaf", "twice", 2]]);
    }
  });
});

describe("log failures never change the call", () => {
  test("an unwritable path: the outcome and the record stand, and stderr hears about it once", async () => {
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    // A directory cannot be made beneath a regular file.
    const file = join(mkdtempSync(join(tmpdir(), "improv-log-")), "plain-file");
    writeFileSync(file, "not a directory");
    const log = join(file, "logs", "calls.jsonl");
    const agent = Agent.for("calculator", { provider: new ScriptedProvider({ programs }), log });
    expect((await agent.add(1)).value).toBe(1);
    expect((await agent.add(1)).value).toBe(2);
    expect(Agent.history(agent)).toHaveLength(2);
    const messages = stderr.mock.calls.map((call) => String(call[0])).filter((text) => text.startsWith("improv: could not write a call log line"));
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain(`to ${log}`);
  });

  test("a full disk: the outcome and the record stand", async () => {
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const agent = Agent.for("calculator", { provider: new ScriptedProvider({ programs }), log: "/dev/full" });
    expect((await agent.add(3)).value).toBe(3);
    expect((await agent.add(3)).value).toBe(6);
    expect(Agent.history(agent)).toHaveLength(2);
    expect(stderr.mock.calls.filter((call) => String(call[0]).includes("/dev/full"))).toHaveLength(1);
  });

  test("a logger that throws: the outcome and the record stand", async () => {
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const logger = { info: () => { throw new Error("logger exploded"); } };
    const agent = Agent.for("calculator", { provider: new ScriptedProvider({ programs }), log: logger as never });
    expect((await agent.add(1)).ok).toBe(true);
    expect(Agent.history(agent)).toHaveLength(1);
    expect(stderr.mock.calls.filter((call) => String(call[0]).includes("logger exploded"))).toHaveLength(1);
  });
});

describe("verbose output", () => {
  test("escape sequences and invisible characters in a program and in its error are shown as text, not acted on by the terminal", async () => {
    const written: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    // A comment hidden on a terminal (ESC[8m), a right-to-left override; an error that rewrites the line above and sets the clipboard (OSC 52).
    const program = "// \u001b[8m hidden: await tools.transfer() \u001b[0m\u202e\rthrow new Error('failed\\u001b[1A\\u001b[2K\\u001b]52;c;aGk=\\u0007')";
    const agent = Agent.for("talker", { provider: new ScriptedProvider({ programs: { go: program } }), verbose: true, maxGenerationAttempts: 1 });
    expect((await agent.go()).errorMessage).toContain("\u001b]52;c;");
    const text = written.join("");
    expect(text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    expect(text).toContain("│ // \\u{1b}[8m hidden: await tools.transfer() \\u{1b}[0m\\u{202e}\\u{d}throw new Error(");
    expect(text).toContain("execution: Error: failed\\u{1b}[1A\\u{1b}[2K\\u{1b}]52;c;aGk=\\u{7}");
  });
});
