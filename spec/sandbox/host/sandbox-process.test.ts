import { afterEach, describe, expect, test } from "vitest";
import type { ChildMessage, RunReport, RunRequestMessage } from "../../../src/sandbox/protocol.ts";
import { PendingRun } from "../../../src/sandbox/host/pending-run.ts";
import { SandboxProcess } from "../../../src/sandbox/host/sandbox-process.ts";
import { waitFor } from "../../../test-support/wait-for.ts";

const started: SandboxProcess[] = [];

afterEach(() => {
  for (const sandbox of started.splice(0)) sandbox.kill();
});

function startProcess(): SandboxProcess {
  const sandbox = new SandboxProcess({ onLost: () => undefined, onIdle: () => undefined, onRunEnd: () => undefined });
  started.push(sandbox);
  return sandbox;
}

function runMessage(runId: number, agentId: string, code: string): RunRequestMessage {
  return {
    type: "run",
    runId,
    agentId,
    memoryLimitMb: 32,
    mirrorMb: 0,
    timeoutMs: 2_000,
    callTimeLeftMs: 60_000,
    historyEpoch: 1,
    historyStart: 0,
    payload: { callId: `call-${runId}`, code, args: [], kwargs: {}, context: {}, depth: 0, maxDelegationDepth: 3, tools: [], fetch: false, knowledge: "[]", history: { start: 0, reset: true, records: [] } },
  };
}

describe("a sandbox process", () => {
  test("a run cancelled as it is sent is answered as cancelled at once, and stays on the books until the process has answered for it", async () => {
    const sandbox = startProcess();
    await sandbox.ready;
    let answers = 0;
    sandbox.child.on("message", (message: ChildMessage | unknown[]) => {
      // A program's success comes packed (an array); anything else is a result message.
      if (Array.isArray(message) || (message as ChildMessage).type === "result") answers += 1;
    });
    let settled: RunReport | undefined;
    const run = new PendingRun(
      runMessage(1, "new-agent", "return 'ran'"),
      { onBridge: () => new Promise(() => {}) },
      (report) => {
        settled = report;
      },
      (pending) => sandbox.onDeadline(pending),
    );
    // The agent has no isolate yet: the process makes one as the run arrives, before it reads the cancel.
    await sandbox.take(run);
    sandbox.cancel(run);
    expect(settled).toMatchObject({ kind: "failed", errorType: "cancelled" });
    expect(sandbox.activeRuns).toBe(1);
    await waitFor(() => answers === 1);
    await waitFor(() => sandbox.activeRuns === 0);
  });
});
