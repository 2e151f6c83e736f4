/**
 * JSON Schemas a program passes in `delegate(role, { methods })` are hostile input: bounded in
 * size, and compiled and checked off the host's event loop within the call's time.
 */
import { describe, expect, test } from "vitest";
import { schemaChecks } from "../../src/contracts/schema-threads.ts";
import { Agent } from "../../src/index.ts";
import { scriptedAgent } from "../../test-support/agents.ts";
import { waitFor } from "../../test-support/wait-for.ts";

/** A boss program that delegates `work` with `options` (a JS expression) and returns what the helper's call came to. */
const delegating = (options: string, args = "") =>
  `const r = await delegate("helper", ${options}).work(${args}); return r.ok ? { ok: true, value: r.value } : { ok: false, type: r.error_type, message: r.error_message }`;

/** A contract whose `work` returns `schema` (a JS expression). */
const returning = (schema: string, extra = "") => `{ ${extra} methods: { work: { returns: ${schema} } } }`;

/** Runs `work` while a timer ticks every 10 ms on the host; the longest the timer waited between ticks. */
async function withProbe<T>(work: () => Promise<T>): Promise<{ result: T; longestGapMs: number }> {
  let last = performance.now();
  let longestGapMs = 0;
  const probe = setInterval(() => {
    const now = performance.now();
    longestGapMs = Math.max(longestGapMs, now - last);
    last = now;
  }, 10);
  try {
    const result = await work();
    longestGapMs = Math.max(longestGapMs, performance.now() - last);
    return { result, longestGapMs };
  } finally {
    clearInterval(probe);
  }
}

describe("a program's returns schemas are bounded in size", () => {
  test("a schema of more JSON than the limit, too many patterns, a long pattern, or nesting too deep is refused at delegate, naming the limit", async () => {
    const { agent } = scriptedAgent("boss", {
      "boss.large": delegating(returning(`{ type: "string", description: "x".repeat(30_000) }`)),
      "boss.patterns": delegating(returning(`{ type: "object", properties: Object.fromEntries(Array.from({ length: 40 }, (_, i) => ["p" + i, { type: "string", pattern: "^a" + i + "$" }])) }`)),
      "boss.named": delegating(returning(`{ type: "object", patternProperties: Object.fromEntries(Array.from({ length: 20 }, (_, i) => ["^k" + i + "$", {}])), propertyNames: { pattern: "^k" }, properties: Object.fromEntries(Array.from({ length: 20 }, (_, i) => ["p" + i, { pattern: "^a$" }])) }`)),
      "boss.long": delegating(returning(`{ type: "string", pattern: "a".repeat(300) }`)),
      "boss.deep": delegating(returning(`(() => { let s = { type: "number" }; for (let i = 0; i < 40; i++) s = { type: "array", items: s }; return s })()`)),
      "helper.work": "return 'a'",
    });
    expect((await agent.large()).value).toEqual({ ok: false, type: "invalid_input", message: expect.stringMatching(/^delegate option "methods\.work\.returns" is \d+ characters of JSON; a program's schema may have at most 20000\. Pass a smaller schema\.$/) });
    expect((await agent.patterns()).value).toEqual({
      ok: false,
      type: "invalid_input",
      message: 'delegate option "methods.work.returns" has 40 patterns (pattern and patternProperties); a program\'s schema may have at most 32. Pass fewer patterns.',
    });
    expect((await agent.named()).value).toMatchObject({ ok: false, type: "invalid_input", message: expect.stringContaining("has 41 patterns") });
    expect((await agent.long()).value).toEqual({
      ok: false,
      type: "invalid_input",
      message: 'delegate option "methods.work.returns" has a pattern of 300 characters; a program\'s patterns may have at most 200. Pass a shorter pattern.',
    });
    expect((await agent.deep()).value).toEqual({
      ok: false,
      type: "invalid_input",
      message: 'delegate option "methods.work.returns" is nested more than 32 levels deep; a program\'s schema may nest at most 32. Pass a flatter schema.',
    });
  });

  test("a schema whose check answers with a promise ($async) is refused, not passed", async () => {
    const { agent } = scriptedAgent("boss", {
      "boss.run": delegating(returning(`{ $async: true, type: "string" }`, "maxGenerationAttempts: 1,")),
      "helper.work": "return 42",
    });
    expect((await agent.run()).value).toEqual({
      ok: false,
      type: "invalid_output",
      message: "The returns schema of work could not check the value: it is not a usable JSON Schema ($async schemas cannot be checked here; remove $async).",
    });
  });

  test("a schema within the limits still checks: the value matches, or the helper's program is repaired with the problems", async () => {
    const { agent, provider } = scriptedAgent("boss", {
      "boss.tally": delegating(returning(`{ type: "object", properties: { code: { type: "string", pattern: "^[A-Z]{2}$" } }, required: ["code"] }`)),
      "helper.work": ["return { code: 'france' }", "return { code: 'FR' }"],
    });
    expect((await agent.tally()).value).toEqual({ ok: true, value: { code: "FR" } });
    expect(provider.calls.filter((call) => call.role === "helper")[1]?.user).toContain('code: must match pattern "^[A-Z]{2}$"');
  });
});

describe("a program's returns schemas are compiled and checked off the host's event loop", () => {
  // Within the limits, and slow to run: RE2 is linear, but 15 repeats of 1,000 any-characters make a long program to run over 30,000 characters.
  const slowPattern = JSON.stringify(`${"[\\s\\S]{1000}".repeat(15)}[^a]`);

  test("a check that outlasts the call's time ends that call invalid_output when its time is up, and the host's timers keep running meanwhile", async () => {
    const { agent } = scriptedAgent("boss", {
      "boss.slow": delegating(returning(`{ type: "string", pattern: ${slowPattern} }`, "callTimeoutMs: 3000, maxGenerationAttempts: 1,")),
      "helper.work": "return 'a'.repeat(30_000)",
    });
    const { result, longestGapMs } = await withProbe(() => agent.slow());
    expect(result.value).toEqual({ ok: false, type: "invalid_output", message: expect.stringMatching(/^The returns schema of work could not check the value: the call's callTimeoutMs ran out while it checked \(\d+ ms left\)\.$/) });
    // The loop answered its timer well within the helper's 3 s: the check did not hold it.
    expect(longestGapMs).toBeLessThan(3_000);
  });

  test("a check cut short by the call's cancellation ends its thread, and the next program schema checks as before", async () => {
    const { agent } = scriptedAgent("boss", {
      "boss.slow": delegating(returning(`{ type: "string", pattern: ${slowPattern} }`, "maxGenerationAttempts: 1,")),
      "boss.quick": delegating(returning(`{ type: "string", pattern: "^a+$" }`)),
      "helper.work": "return 'a'.repeat(30_000)",
    });
    const controller = new AbortController();
    const slow = Agent.call(agent, "slow", [], { signal: controller.signal });
    await waitFor(() => schemaChecks().running === 1);
    controller.abort();
    expect(await slow).toMatchObject({ ok: false, errorType: "cancelled" });
    expect(schemaChecks()).toEqual({ running: 0, waiting: 0 });
    expect((await agent.quick()).value).toEqual({ ok: true, value: "a".repeat(30_000) });
  });

  test("a schema that needs more memory than a schema thread has ends that call invalid_output, naming the limit", async () => {
    // Each of these patterns compiles to about 10 MB of RE2 program.
    const patterns = `Object.fromEntries(Array.from({ length: 32 }, (_, i) => ["p" + i, { type: "string", pattern: "(?:ab|cd|ef|gh){1000}".repeat(8) + i }]))`;
    const { agent } = scriptedAgent("boss", {
      "boss.run": delegating(returning(`{ type: "object", properties: ${patterns} }`, "maxGenerationAttempts: 1,")),
      "helper.work": "return {}",
    });
    expect((await agent.run()).value).toEqual({
      ok: false,
      type: "invalid_output",
      message: "The returns schema of work could not check the value: checking it needed more than the 128 MB a program's schema may use. Pass a simpler schema (fewer, shorter patterns).",
    });
  });

  test("schemas from different agents' programs never stand in for each other, even under one $id", async () => {
    const contract = (pattern: string) => returning(`{ $id: "https://example.com/shared", type: "string", pattern: ${JSON.stringify(pattern)} }`, "maxGenerationAttempts: 1,");
    const first = scriptedAgent("boss", { "boss.run": delegating(contract("[\\s\\S]*"), "args[0]"), "helper.work": "return args[0]" });
    const second = scriptedAgent("boss", { "boss.run": delegating(contract("^[A-Z]{2}$"), "args[0]"), "helper.work": "return args[0]" });
    expect((await first.agent.run("12345")).value).toEqual({ ok: true, value: "12345" });
    expect((await second.agent.run("12345")).value).toMatchObject({ ok: false, type: "invalid_output", message: expect.stringContaining('must match pattern "^[A-Z]{2}$"') });
    expect((await second.agent.run("FR")).value).toEqual({ ok: true, value: "FR" });
  });
});
