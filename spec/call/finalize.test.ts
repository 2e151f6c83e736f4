import { describe, expect, test, vi } from "vitest";
import { Agent, ScriptedProvider } from "../../src/index.ts";
import { CALL_PATHS } from "../../test-support/call-paths.ts";
import { readLogLines, tempLogPath } from "../../test-support/logs.ts";

describe("finalize runs exactly once per call", () => {
  test.each(CALL_PATHS)("$expected: one history record and one log line", async ({ expected, programs, options, call }) => {
    const log = tempLogPath("improv-finalize-");
    const agent = Agent.for("finalizer", { provider: new ScriptedProvider({ programs }), log, ...options });
    const outcome = await call(agent);
    expect(outcome.errorType ?? "ok").toBe(expected);
    const history = Agent.history(agent);
    expect(history).toHaveLength(1);
    expect(history[0]?.call_id).toBe(outcome.callId);
    expect(history[0]?.outcome_summary.error_type ?? "ok").toBe(expected);
    const lines = readLogLines(log);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ call_id: outcome.callId, outcome_status: outcome.status, history_record_appended: true });
  });

  test("cancelled: one record", async () => {
    const controller = new AbortController();
    const agent = Agent.for("finalizer", { provider: new ScriptedProvider({ programs: { m: { delayMs: 5_000, code: "return 1" } } }), signal: controller.signal });
    const pending = agent.m();
    setTimeout(() => controller.abort(), 20);
    expect((await pending).errorType).toBe("cancelled");
    expect(Agent.history(agent)).toHaveLength(1);
  });

  test("setters and readers add no record", () => {
    const agent = Agent.for<{ x: number }>("finalizer", { provider: new ScriptedProvider({ programs: {} }) });
    agent.x = 1;
    void agent.x;
    agent.remember({ y: 2 });
    expect(Agent.history(agent)).toHaveLength(0);
  });

  test("a log that cannot be written changes neither the outcome nor the record; it is said once on stderr", async () => {
    // The notice this test provokes is caught here, not printed among the run's output.
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      const agent = Agent.for("finalizer", {
        provider: new ScriptedProvider({ programs: { m: "return 5" } }),
        log: { info: () => { throw new Error("disk full"); } } as never,
      });
      const r = await agent.m();
      expect(r.value).toBe(5);
      expect(Agent.history(agent)).toHaveLength(1);
      expect(stderr.mock.calls.map((call) => String(call[0])).filter((text) => text.startsWith("improv: could not write a call log line (disk full)"))).toHaveLength(1);
    } finally {
      stderr.mockRestore();
    }
  });
});
