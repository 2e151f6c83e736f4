import { describe, expect, test } from "vitest";
import { MAX_HOLD, busyLine, freeLine, packResult, packRun, readSignal, resumedLine, startedLine, unpackRun, unpackSuccess, type RunReport, type RunRequestMessage } from "../../src/sandbox/protocol.ts";
import { holdNumber } from "../../src/sandbox/child/memory-watch-slots.ts";

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
        fetch: true,
        knowledge: JSON.stringify([{ name: "kb", kind: "retrieval", text: "[a] (score 0.5)\nA passage.", results: [{ sourceId: "a", score: 0.5, content: "A passage.", metadata: { product: "billing" } }] }]),
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

describe("the report pipe's run signals", () => {
  test("a busy and a free line name the hold they are about; started and resumed lines name the run only", () => {
    expect(readSignal(busyLine(7, 3).trim())).toEqual({ kind: "busy", runId: 7, hold: 3 });
    expect(readSignal(freeLine(7, 3, 55).trim())).toEqual({ kind: "free", runId: 7, hold: 3, heldMs: 55 });
    expect(readSignal(startedLine(7).trim())).toEqual({ kind: "started", runId: 7 });
    expect(readSignal(resumedLine(7).trim())).toEqual({ kind: "resumed", runId: 7 });
    // A run's holds are told apart: its synchronous part, each answer's entry, its tidying.
    expect(readSignal(busyLine(7, 4).trim())).not.toEqual(readSignal(busyLine(7, 3).trim()));
  });

  test("lines of the wrong shape are not signals", () => {
    for (const line of ["B7", "F7:55", "F7/3", "S7/3", "R7:1", "B0/1", `B7/${MAX_HOLD + 1}`, "X7/1", "B7/1:2", ""]) expect(readSignal(line)).toBeUndefined();
  });

  test("hold numbers stay within 31 bits when the watch's Int32 counter wraps", () => {
    const counter = new Int32Array(1);
    counter[0] = 2 ** 31 - 1;
    const last = Atomics.add(counter, 0, 1) + 1;
    expect(holdNumber(last)).toBe(0);
    expect(holdNumber(Atomics.load(counter, 0))).toBe(0);
    expect(holdNumber(Atomics.add(counter, 0, 1) + 1)).toBe(1);
    expect(readSignal(busyLine(1, holdNumber(MAX_HOLD)).trim())).toEqual({ kind: "busy", runId: 1, hold: MAX_HOLD });
  });
});
