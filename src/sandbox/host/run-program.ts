import { MIRROR_CHUNK_RECORDS, type RunReport } from "../protocol.ts";
import type { RunHooks } from "./pending-run.ts";
import { readRunReport, type ProgramResult } from "./inbound.ts";
import { sandboxPool } from "./pool.ts";

/** The agent's history as the sandbox mirror needs it: what was sent, and what is new. */
export interface MirrorSource {
  /** Changes whenever the history is replaced rather than appended to. */
  readonly epoch: number;
  readonly length: number;
  /** Serialised size of all records. */
  readonly bytes: number;
  /** Records from `start` up to `end` (default: the end), each as JSON text. */
  since(start: number, end?: number): readonly string[];
  /** How many records the sandbox is believed to hold; kept up to date by {@link runProgram}. */
  mirrored: number;
}

/** One program to run for one call. */
export interface ProgramRun {
  readonly agentId: string;
  readonly callId: string;
  readonly code: string;
  readonly args: unknown[];
  readonly kwargs: Record<string, unknown>;
  readonly context: Record<string, unknown>;
  readonly depth: number;
  readonly maxDelegationDepth: number;
  /** The granted tools' names, for the program's `tools` object. */
  readonly tools: readonly string[];
  /** The program gets `fetch` (the agent has an egress policy). */
  readonly fetch: boolean;
  /** The call's knowledge segments, as a JSON array. */
  readonly knowledge: string;
  readonly timeoutMs: number;
  /** When the call must have ended, waits included (on `performance.now()`'s clock). */
  readonly callEndsAt: number;
  readonly memoryLimitMb: number;
  readonly history: MirrorSource;
  readonly onBridge: RunHooks["onBridge"];
  readonly signal?: AbortSignal | undefined;
}

/**
 * Heap a mirrored record takes per byte of its JSON (V8 objects and strings cost more than
 * their text). Measured by `npm run bench`, rounded up.
 */
const MIRROR_HEAP_PER_JSON_BYTE = 3;

/**
 * Runs a program in the sandbox process. Sends only the history records the sandbox does
 * not hold yet; if the sandbox lost its mirror (a new isolate or process), sends it all again,
 * once: a sync lost a second time, or one the call's time or signal ends, ends the run with a
 * failure that says so.
 */
export async function runProgram(run: ProgramRun): Promise<ProgramResult> {
  const restarts = { left: 1 };
  let report = await send(run, run.history.mirrored, restarts);
  if (report.kind === "resync" && restarts.left > 0) {
    restarts.left -= 1;
    report = await send(run, 0, restarts);
  }
  return readRunReport(report);
}

async function send(run: ProgramRun, start: number, restarts: { left: number }): Promise<RunReport> {
  const { history } = run;
  const mirrorMb = Math.ceil((history.bytes * MIRROR_HEAP_PER_JSON_BYTE) / 2 ** 20);
  let from = Math.min(start, history.length);
  sandboxPool().place(run.agentId);
  // Large syncs (a new isolate, or a history replaced by the application) go in chunks, so
  // neither process ever holds the whole transfer at once.
  while (history.length - from > MIRROR_CHUNK_RECORDS) {
    const records = history.since(from, from + MIRROR_CHUNK_RECORDS);
    const base = { agentId: run.agentId, memoryLimitMb: run.memoryLimitMb, mirrorMb, historyEpoch: history.epoch };
    const synced = await withinCall(run, sandboxPool().sync({ ...base, historyStart: from, records }));
    if (synced === true) {
      from += records.length;
      continue;
    }
    // What the sandbox holds is not known now: the next run finds out.
    history.mirrored = 0;
    if (synced !== false) return synced;
    // The sandbox lost the mirror part-way (or its process): the whole history again, once.
    if (restarts.left <= 0) return syncLost(history.length);
    restarts.left -= 1;
    from = 0;
  }
  const records = history.since(from);
  const sentUpTo = from + records.length;
  const report = await sandboxPool().execute(
    {
      agentId: run.agentId,
      memoryLimitMb: run.memoryLimitMb,
      mirrorMb,
      timeoutMs: run.timeoutMs,
      callTimeLeftMs: Math.max(0, run.callEndsAt - performance.now()),
      historyEpoch: history.epoch,
      historyStart: from,
      payload: {
        callId: run.callId,
        code: run.code,
        args: run.args,
        kwargs: run.kwargs,
        context: run.context,
        depth: run.depth,
        maxDelegationDepth: run.maxDelegationDepth,
        tools: run.tools,
        fetch: run.fetch,
        knowledge: run.knowledge,
        history: { start: from, reset: from === 0, records },
      },
    },
    { onBridge: run.onBridge, signal: run.signal },
  );
  // A failed run may have cost the sandbox its mirror; the next run finds out and resyncs.
  history.mirrored = report.kind === "resync" ? 0 : sentUpTo;
  return report;
}

/**
 * How one step of a sync went: its answer, or why the run ends without it (the call's time ran
 * out, or its signal aborted, first). A step given up may still be answered; the answer is dropped.
 */
async function withinCall(run: ProgramRun, step: Promise<boolean>): Promise<boolean | RunReport> {
  const stopped = stoppedBy(run);
  if (stopped !== undefined) return stopped;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const ended = new Promise<RunReport>((resolve) => {
    timer = setTimeout(() => resolve(stoppedBy(run) ?? syncTimedOut(run.history.length)), Math.max(0, run.callEndsAt - performance.now()));
    onAbort = () => resolve(syncCancelled());
    run.signal?.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([step, ended]);
  } finally {
    clearTimeout(timer);
    if (onAbort) run.signal?.removeEventListener("abort", onAbort);
  }
}

function stoppedBy(run: ProgramRun): RunReport | undefined {
  if (run.signal?.aborted) return syncCancelled();
  if (performance.now() >= run.callEndsAt) return syncTimedOut(run.history.length);
  return undefined;
}

function syncTimedOut(records: number): RunReport {
  return { kind: "failed", errorType: "timeout", message: `The call ran past its callTimeoutMs while the agent's history (${records} records) was sent to the sandbox; the program did not run.` };
}

function syncCancelled(): RunReport {
  return { kind: "failed", errorType: "cancelled", message: "The call was cancelled before its program ran." };
}

function syncLost(records: number): RunReport {
  return {
    kind: "failed",
    errorType: "execution",
    message: `The sandbox lost the agent's history (${records} records) twice while it was being sent, and it was not sent again. Call again.`,
    retriable: true,
  };
}
