import { afterEach, describe, expect, test } from "vitest";
import { SANDBOX_LIMITS } from "../../../src/sandbox/limits.ts";
import { measureJsonChars } from "../../../src/sandbox/host/outbound.ts";
import { PendingRun, type AskingRun, type RunHooks } from "../../../src/sandbox/host/pending-run.ts";
import { SandboxProcess } from "../../../src/sandbox/host/sandbox-process.ts";
import { BRIDGE_KINDS, MAX_RUN_ID, nextRunId, readSignal, type BridgeRequest, type RunReport, type RunRequestMessage } from "../../../src/sandbox/protocol.ts";
import { readBridgeRequest } from "../../../src/sandbox/child/bridge-reader.ts";
import { ValueTooLargeError } from "../../../src/sandbox/value-size.ts";
import { decodeValue } from "../../../src/sandbox/value-codec.ts";

const started: SandboxProcess[] = [];

afterEach(() => {
  for (const sandbox of started.splice(0)) sandbox.kill();
});

let nextId = 1;

/** Runs `code` in a real sandbox process, its bridge requests answered by `onBridge`. */
async function run(code: string, onBridge: RunHooks["onBridge"], timeoutMs = 2_000, callTimeLeftMs = 60_000): Promise<{ report: RunReport; pending: PendingRun }> {
  const sandbox = new SandboxProcess({ onLost: () => undefined, onIdle: () => undefined, onRunEnd: () => undefined });
  started.push(sandbox);
  await sandbox.ready;
  const runId = nextId++;
  const message: RunRequestMessage = {
    type: "run",
    runId,
    agentId: `bridge-agent-${runId}`,
    memoryLimitMb: 32,
    mirrorMb: 0,
    timeoutMs,
    callTimeLeftMs,
    historyEpoch: 1,
    historyStart: 0,
    payload: { callId: `call-${runId}`, code, args: [], kwargs: {}, context: {}, depth: 0, maxDelegationDepth: 3, tools: [], fetch: false, knowledge: "[]", history: { start: 0, reset: true, records: [] } },
  };
  let pending!: PendingRun;
  const report = await new Promise<RunReport>((resolve) => {
    pending = new PendingRun(message, { onBridge }, resolve, (late) => sandbox.onDeadline(late));
    void sandbox.take(pending);
  });
  return { report, pending };
}

function valueOf(report: RunReport): unknown {
  if (report.kind !== "settled" || report.result.status !== "ok") throw new Error(`the run did not succeed: ${JSON.stringify(report)}`);
  return decodeValue(report.result.value, SANDBOX_LIMITS.maxResultChars);
}

describe("the bridge", () => {
  test("what the host answers is bounded like what a program returns: too large an answer is a failure the program sees, and the sandbox goes on", async () => {
    // 9,000 references to one 1,000-character string: little memory, 9 MB of JSON.
    const shared = "x".repeat(1_000);
    const huge = Array.from({ length: 9_000 }, () => shared);
    const requests: BridgeRequest[] = [];
    const { report } = await run(
      `const outcome = await delegate("helper").list();
       const kept = await content("ref-1");
       return { outcome, kept: kept === undefined ? "undefined" : typeof kept };`,
      async (request) => {
        requests.push(request);
        return request.kind === "delegate" ? { ok: true, value: { status: "ok", ok: true, value: huge, retriable: false } } : { ok: true, value: huge };
      },
    );
    expect(requests.map((request) => request.kind)).toEqual(["delegate", "content"]);
    const value = valueOf(report) as { outcome: Record<string, unknown>; kept: string };
    expect(value.outcome).toMatchObject({ ok: false, status: "error", error_type: "execution" });
    expect(String(value.outcome.error_message)).toContain(`larger than the ${SANDBOX_LIMITS.maxAnswerChars}-character limit`);
    expect(value.kept).toBe("undefined");
  });

  test("an answer within the limit reaches the program as a copy, failures in one envelope", async () => {
    const { report } = await run(
      `const first = await delegate("helper").sum(1, 2);
       const second = await delegate("helper").fail();
       return { first, second, kept: await content("k") };`,
      async (request) => {
        if (request.kind === "content") return { ok: true, value: new Map([["a", [1, 2]]]) };
        if (request.kind === "delegate" && request.method === "fail") return { ok: false, failure: { errorType: "invalid_input", message: "refused here", retriable: false } };
        return { ok: true, value: { status: "ok", ok: true, value: 3, retriable: false } };
      },
    );
    expect(valueOf(report)).toMatchObject({
      first: { ok: true, status: "ok", value: 3, retriable: false },
      second: { ok: false, status: "error", error_type: "invalid_input", error_message: "refused here", retriable: false },
    });
    expect((valueOf(report) as { kept: unknown }).kept).toEqual(new Map([["a", [1, 2]]]));
  });

  test("an answer's `sent` is called once it is written to the sandbox process, or could not be; it never travels", async () => {
    const calls: string[] = [];
    const { report } = await run(
      `const small = await content("small");
       const large = await content("large");
       const odd = await content("odd");
       const huge = await content("huge");
       return { small, large: large.length, odd: odd === undefined, huge: huge === undefined };`,
      async (request) => {
        if (request.kind !== "content") throw new Error("unexpected");
        const ref = request.ref;
        const sent = () => calls.push(ref);
        if (ref === "small") return { ok: true, value: { fine: true }, sent };
        if (ref === "large") return { ok: true, value: "x".repeat(2_000_000), sent };
        // A function cannot be copied to the sandbox process.
        if (ref === "odd") return { ok: true, value: { f: () => 1 }, sent };
        return { ok: true, value: "y".repeat(SANDBOX_LIMITS.maxAnswerChars + 10), sent };
      },
    );
    const value = valueOf(report) as Record<string, unknown>;
    // content() answers a failure as undefined.
    expect(value).toEqual({ small: { fine: true }, large: 2_000_000, odd: true, huge: true });
    expect([...calls].sort()).toEqual(["huge", "large", "odd", "small"]);
  });

  test("a handler's signal aborts when its run ends at its call's deadline, and it is told the time its run had left", async () => {
    const asked: AskingRun[] = [];
    const timeLeft: number[] = [];
    const { report } = await run(
      `await content("never answered"); return "unreachable";`,
      (_request, asking) => {
        asked.push(asking);
        timeLeft.push(asking.timeLeftMs());
        return new Promise(() => {});
      },
      200,
      600,
    );
    // Its wait is not its own time (200 ms): the call's time (600 ms) ends it.
    expect(report).toMatchObject({ kind: "failed", errorType: "timeout", message: expect.stringContaining("callTimeoutMs") });
    expect(asked).toHaveLength(1);
    expect(asked[0]?.signal.aborted).toBe(true);
    expect(timeLeft[0]).toBeGreaterThan(0);
    expect(timeLeft[0]).toBeLessThanOrEqual(600);
    expect(asked[0]?.timeLeftMs()).toBe(0);
  });

  test("the time a large answer takes to reach the program is a wait on the host as in the sandbox process: the host never kills for it", async () => {
    const rows = Array.from({ length: 100_000 }, (_, index) => ({ index, label: "row" }));
    // 2 s, not less: the host's grace past the deadline is 30% of it (at least 150 ms), and one
    // copy of these rows into the isolate, which cannot be stopped part-way, can take a few
    // hundred ms on a loaded machine.
    const { report } = await run(
      `let count = 0; for (let i = 0; i < 10; i++) count += (await content("rows")).length; return count;`,
      async () => ({ ok: true, value: rows }),
      2_000,
    );
    // Copying each answer into the isolate is counted by both processes alike (the sandbox
    // process may stop the program for it, cleanly); measuring, sending and reading it are not.
    if (report.kind === "settled") expect(valueOf(report)).toBe(1_000_000);
    else expect(report).toEqual({ kind: "failed", errorType: "timeout", message: "The program ran longer than executionTimeoutMs (2000 ms) and was stopped." });
  });

  test("a handler's signal aborts when its run ends with its program's own outcome", async () => {
    const signals = new Map<string, AbortSignal>();
    const { report } = await run(
      `return await Promise.race([content("slow"), content("fast")]);`,
      (request, asking) => {
        if (request.kind !== "content") throw new Error("unexpected request");
        signals.set(request.ref, asking.signal);
        return request.ref === "fast" ? Promise.resolve({ ok: true, value: "fast one" }) : new Promise(() => {});
      },
    );
    expect(valueOf(report)).toBe("fast one");
    expect(signals.get("slow")?.aborted).toBe(true);
  });

  test("a handler's signal aborts when its run's sandbox process is lost", async () => {
    let asking: AskingRun | undefined;
    let lost: SandboxProcess | undefined;
    const ended = run(`await content("x")`, (_request, run) => {
      asking = run;
      lost = started.at(-1);
      setTimeout(() => lost?.child.kill("SIGKILL"), 20);
      return new Promise(() => {});
    });
    const { report } = await ended;
    expect(report).toMatchObject({ kind: "failed" });
    expect(lost).toBeDefined();
    expect(asking?.signal.aborted).toBe(true);
  });

  test("a handler's signal aborts when its run is cancelled", async () => {
    const sandbox = new SandboxProcess({ onLost: () => undefined, onIdle: () => undefined, onRunEnd: () => undefined });
    started.push(sandbox);
    await sandbox.ready;
    let asking: AskingRun | undefined;
    const message: RunRequestMessage = {
      type: "run",
      runId: 900,
      agentId: "bridge-cancel",
      memoryLimitMb: 32,
      mirrorMb: 0,
      timeoutMs: 5_000,
      callTimeLeftMs: 60_000,
      historyEpoch: 1,
      historyStart: 0,
      payload: { callId: "call-900", code: `await content("x")`, args: [], kwargs: {}, context: {}, depth: 0, maxDelegationDepth: 3, tools: [], fetch: false, knowledge: "[]", history: { start: 0, reset: true, records: [] } },
    };
    const settled = new Promise<RunReport>((resolve) => {
      const pending = new PendingRun(
        message,
        {
          onBridge: (_request, run) => {
            asking = run;
            sandbox.cancel(pending);
            return new Promise(() => {});
          },
        },
        resolve,
        (late) => sandbox.onDeadline(late),
      );
      void sandbox.take(pending);
    });
    expect(await settled).toMatchObject({ kind: "failed", errorType: "cancelled" });
    expect(asking?.signal.aborted).toBe(true);
  });
});

describe("reading a request in the sandbox process", () => {
  test("every declared kind has a reader, and anything else is refused", () => {
    expect(readBridgeRequest({ kind: "content", ref: "r" })).toEqual({ kind: "content", ref: "r" });
    expect(readBridgeRequest({ kind: "delegate", role: "r", method: "m", args: "[]", kwargs: null, options: null, optionsTooLarge: false })).toMatchObject({ kind: "delegate", role: "r" });
    expect(readBridgeRequest({ kind: "delegate", role: "r", method: "m", args: "[]", options: null, optionsTooLarge: false })).toBe("The delegate request is malformed.");
    for (const kind of Object.keys(BRIDGE_KINDS)) expect(readBridgeRequest({ kind })).toEqual(expect.any(String));
    expect(readBridgeRequest({ kind: "fetch", url: "http://x", method: "GET", headers: [["a", "b"]], body: null })).toEqual({ kind: "fetch", url: "http://x", method: "GET", headers: [["a", "b"]], body: null });
    expect(readBridgeRequest({ kind: "fetch", url: "http://x", method: "GET", headers: [["a", 1]], body: null })).toContain("each header is a name and a string value");
    expect(readBridgeRequest({ kind: "fetch", url: "http://x", method: "GET", headers: [], body: "x".repeat(1_000_001) })).toContain("the body must be a string of at most 1000000 characters");
    expect(readBridgeRequest({ kind: "toString" })).toBe("The request is malformed.");
    expect(readBridgeRequest({ kind: "wget", url: "http://x" })).toBe("The request is malformed.");
    expect(readBridgeRequest(null)).toBe("The request is malformed.");
  });
});

describe("measuring what the host sends a program", () => {
  test("counts a value as its JSON would be written", () => {
    for (const value of [1, "text", null, true, [1, "two", [3]], { a: 1, b: [true, null], c: { d: "e" } }, []]) {
      expect(measureJsonChars(value, 1_000)).toBe(JSON.stringify(value).length);
    }
  });

  test("counts shared parts each time, walks them once, and stops at the limit", () => {
    let laughs: unknown = ["ha"];
    for (let level = 0; level < 60; level += 1) laughs = [laughs, laughs];
    // 2^60 strings as JSON: walked once per node, so this returns at all.
    expect(() => measureJsonChars(laughs, 8_000_000)).toThrow(ValueTooLargeError);
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(measureJsonChars(cyclic, 1_000)).toBeGreaterThan(0);
    expect(() => measureJsonChars(new Array(10_000).fill(null), 1_000)).toThrow(ValueTooLargeError);
  });
});

describe("run ids", () => {
  test("fit the sandbox process's Int32Array slot, and start again at 1 after the last", () => {
    const slot = new Int32Array(1);
    for (const id of [1, 2 ** 30, MAX_RUN_ID - 1, MAX_RUN_ID]) {
      slot[0] = id;
      expect(slot[0]).toBe(id);
    }
    expect(nextRunId(MAX_RUN_ID - 1)).toBe(MAX_RUN_ID);
    expect(nextRunId(MAX_RUN_ID)).toBe(1);
    expect(readSignal(`R${MAX_RUN_ID}`)).toEqual({ kind: "resumed", runId: MAX_RUN_ID });
    slot[0] = MAX_RUN_ID + 1;
    expect(slot[0]).not.toBe(MAX_RUN_ID + 1);
  });
});
