/**
 * The messages between the host process and the sandbox process, and between the sandbox
 * process and the isolate runtime. This is the only thing host and child share.
 *
 *   host (agent, lifecycle)                sandbox process                  isolate
 *   ───────────────────────               ─────────────────                ─────────
 *   run {program, args, context,  ──────▶  pick the agent's isolate
 *        history since last sync}          start(payload)  ─────────────▶  compile, run
 *                                                                          delegate(role).m()
 *   sync {records} (large syncs) ──────▶   sync(chunk)     ─────────────▶  mirror += records
 *   bridge-result {outcome}  ◀──────▶      bridge {role, method, args} ◀── bridge(callId, request)
 *                                          notify(callId)  ◀──────────────  settled later
 *   result {value, context, …}  ◀──────    take(callId)    ─────────────▶  result, globals cleaned
 *
 * Values travel host → child by structured clone (IPC "advanced" serialisation) and enter
 * the isolate as copies. Results leave the isolate as one JSON string made by the in-isolate
 * normaliser (see `prelude/encode.ts`) and are decoded on the host (`value-codec.ts`).
 */
import type { ErrorType } from "../outcome.ts";

/** Records for the isolate's history mirror, the first at index `start` of the agent's history. */
export interface MirrorChunk {
  readonly start: number;
  /** The mirror is emptied first (a new isolate, or a history the application replaced). */
  readonly reset: boolean;
  /** Each record as JSON text (records are JSON-safe, and text crosses processes and into the isolate far cheaper). */
  readonly records: readonly string[];
}

/** What the isolate runtime receives to start one call. */
export interface RunPayload {
  readonly callId: string;
  readonly code: string;
  readonly args: unknown[];
  readonly kwargs: Record<string, unknown>;
  readonly context: Record<string, unknown>;
  readonly depth: number;
  readonly maxDelegationDepth: number;
  /** History records to add to the isolate's mirror before the program runs. */
  readonly history: MirrorChunk;
}

/** What the isolate runtime hands back for one call (all values already serialised). */
export type IsolateResult =
  | { readonly status: "ok"; readonly value: string; readonly context: string; readonly console: string[] }
  | {
      readonly status: "error";
      readonly errorType: ErrorType;
      readonly name: string;
      readonly message: string;
      readonly console: string[];
      /** Set when the value or context is larger than its limit; the host writes the message. */
      readonly limit?: "result" | "context";
      /** Where in the program (as run) the error was made, when a frame of the program's own code says so. 1-based. */
      readonly location?: { readonly line: number; readonly column: number };
    };

/** A `delegate(role).method(...args)` request from a program. */
export interface BridgeRequest {
  readonly role: string;
  readonly method: string;
  /** Serialised options given to `delegate(role, options)`, or null when none were (or they were too large). */
  readonly options: string | null;
  /** The options were too large to serialise within their limit. */
  readonly optionsTooLarge: boolean;
  /** Serialised positional arguments, or null when they were too large to serialise within their limit. */
  readonly args: string | null;
}

/** The Outcome a delegated call returns to the program, in the program's field names. */
export interface BridgeOutcome {
  readonly status: "ok" | "error";
  readonly ok: boolean;
  readonly value?: unknown;
  readonly error_type?: ErrorType;
  readonly error_message?: string;
  readonly retriable: boolean;
}

export interface RunRequestMessage {
  readonly type: "run";
  readonly runId: number;
  readonly agentId: string;
  readonly memoryLimitMb: number;
  /** Heap the agent's history mirror needs, on top of the program's own memory limit. */
  readonly mirrorMb: number;
  readonly timeoutMs: number;
  readonly historyEpoch: number;
  /** Index of the first record in `payload.history.records` within the agent's history. */
  readonly historyStart: number;
  readonly payload: RunPayload;
}

/** Part of a large history sync, sent before the run so no message carries the whole history. */
export interface SyncRequestMessage {
  readonly type: "sync";
  readonly syncId: number;
  readonly agentId: string;
  readonly memoryLimitMb: number;
  readonly mirrorMb: number;
  readonly historyEpoch: number;
  readonly historyStart: number;
  readonly records: readonly string[];
}

export type HostMessage =
  | RunRequestMessage
  | SyncRequestMessage
  | { readonly type: "cancel"; readonly runId: number }
  | { readonly type: "bridge-result"; readonly requestId: number; readonly outcome: BridgeOutcome }
  | { readonly type: "forget"; readonly agentId: string };

/** How a run ended, as the sandbox process reports it. */
export type RunReport =
  | { readonly kind: "settled"; readonly result: IsolateResult }
  | { readonly kind: "resync" }
  /** `retriable` when the run was lost with its sandbox process, through no fault of its program. */
  | { readonly kind: "failed"; readonly errorType: ErrorType; readonly message: string; readonly retriable?: boolean };

export type ChildMessage =
  | { readonly type: "ready" }
  | { readonly type: "result"; readonly runId: number; readonly report: RunReport }
  /** `ok: false` when the mirror does not continue where the chunk starts: sync again from 0. */
  | { readonly type: "synced"; readonly syncId: number; readonly ok: boolean }
  | { readonly type: "bridge"; readonly runId: number; readonly requestId: number; readonly request: BridgeRequest };

/**
 * The sandbox process's report pipe: a file descriptor beside the IPC channel that any of its
 * threads can write to, even while the main thread is blocked in a program's synchronous part.
 * Each report is one line of JSON.
 */
export const REPORT_FD = 4;

/**
 * Written on the report pipe when a run's program is about to start: `S<runId>` and a newline.
 * A bare line on a raw pipe, not an IPC message: it is sent for every run, and serialising it
 * for the IPC channel costs more than the rest of what the sandbox process does for a short run.
 */
export function startedLine(runId: number): string {
  return `S${runId}\n`;
}

/** The run a `startedLine` names, or undefined when `line` is not one. */
export function startedRun(line: string): number | undefined {
  return /^S\d+$/.test(line) ? Number(line.slice(1)) : undefined;
}

/** Written on the report pipe by the memory watch when the process passed its memory ceiling. */
export interface CeilingReport {
  readonly type: "memory-ceiling";
  readonly rssMb: number;
  readonly ceilingMb: number;
  /** The run whose synchronous part was running, or 0 when none was. */
  readonly runId: number;
}
