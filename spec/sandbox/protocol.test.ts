import { describe, expect, test } from "vitest";
import { packResult, packRun, unpackRun, unpackSuccess, type RunReport, type RunRequestMessage } from "../../src/sandbox/protocol.ts";

describe("the messages every call sends, as they travel", () => {
  test("a run message comes back from its packed form field for field", () => {
    // Every field a different value, so a field read from the wrong place shows.
    const message: RunRequestMessage = {
      type: "run",
      runId: 11,
      agentId: "agent",
      memoryLimitMb: 12,
      mirrorMb: 13,
      timeoutMs: 14,
      callTimeLeftMs: 21,
      historyEpoch: 15,
      historyStart: 16,
      payload: {
        callId: "call",
        code: "return 1",
        args: [1, new Map([["k", new Date(0)]])],
        kwargs: { named: "kw" },
        context: { kept: [2] },
        depth: 17,
        maxDelegationDepth: 18,
        tools: ["weather", "notes.append"],
        history: { start: 19, reset: true, records: ['{"a":1}', '{"b":2}'] },
      },
    };
    const packed = packRun(message);
    expect(Array.isArray(packed)).toBe(true);
    expect(unpackRun(structuredClone(packed))).toEqual(message);
  });

  test("a success's answer travels packed and reads back as the result message; every other answer travels as it is", () => {
    const success: RunReport = { kind: "settled", result: { status: "ok", value: "v", context: "c", console: ["line"] } };
    const packed = packResult(7, success);
    expect(Array.isArray(packed)).toBe(true);
    expect(unpackSuccess(structuredClone(packed) as Parameters<typeof unpackSuccess>[0])).toEqual({ type: "result", runId: 7, report: success });
    const others: RunReport[] = [
      { kind: "settled", result: { status: "error", errorType: "execution", name: "TypeError", message: "m", console: [] } },
      { kind: "resync" },
      { kind: "failed", errorType: "timeout", message: "late" },
    ];
    for (const report of others) expect(packResult(8, report)).toEqual({ type: "result", runId: 8, report });
  });
});
