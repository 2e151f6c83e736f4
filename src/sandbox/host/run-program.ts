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
 * not hold yet; if the sandbox lost its mirror (a new isolate or process), sends it all once.
 */
export async function runProgram(run: ProgramRun): Promise<ProgramResult> {
  let report = await send(run, run.history.mirrored);
  if (report.kind === "resync") report = await send(run, 0);
  return readRunReport(report);
}

async function send(run: ProgramRun, start: number): Promise<RunReport> {
  const { history } = run;
  const mirrorMb = Math.ceil((history.bytes * MIRROR_HEAP_PER_JSON_BYTE) / 2 ** 20);
  let from = Math.min(start, history.length);
  sandboxPool().place(run.agentId);
  // Large syncs (a new isolate, or a history replaced by the application) go in chunks, so
  // neither process ever holds the whole transfer at once.
  while (history.length - from > MIRROR_CHUNK_RECORDS) {
    const records = history.since(from, from + MIRROR_CHUNK_RECORDS);
    const base = { agentId: run.agentId, memoryLimitMb: run.memoryLimitMb, mirrorMb, historyEpoch: history.epoch };
    if (await sandboxPool().sync({ ...base, historyStart: from, records })) {
      from += records.length;
    } else if (from !== 0) {
      from = 0;
    } else {
      break;
    }
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
        history: { start: from, reset: from === 0, records },
      },
    },
    { onBridge: run.onBridge, signal: run.signal },
  );
  // A failed run may have cost the sandbox its mirror; the next run finds out and resyncs.
  history.mirrored = report.kind === "resync" ? 0 : sentUpTo;
  return report;
}
