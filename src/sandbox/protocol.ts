/**
 * The messages between the host process and the sandbox process, and between the sandbox
 * process and the isolate runtime. This is the only thing host and child share.
 *
 *   host (agent, lifecycle)                sandbox process                  isolate
 *   ───────────────────────               ─────────────────                ─────────
 *   run {program, args, context,  ──────▶  pick the agent's isolate
 *        history since last sync}          start(payload)  ─────────────▶  compile, run
 *   (sent packed)
 *   sync {records} (large syncs) ──────▶   sync(chunk)     ─────────────▶  mirror += records
 *   bridge {request}            ◀──────    post (a sync callback) ◀───────  delegate(…).m(), content(ref),
 *   (a handler per kind: call/bridge/)     (read: child/bridge-reader.ts)   tools.x() (one helper: host-calls.ts)
 *   bridge-result {answer}      ──────▶    deliver(answer) ─────────────▶  the program runs on
 *                                          an entry's answer ◀────────────  result, if it settled in it
 *   result {value, context, …}  ◀──────    take(callId)    ─────────────▶  result (after an entry threw)
 *   (a success sent packed)                tidy()          ─────────────▶  globals removed, records parsed
 *
 * Values travel host → child by structured clone (IPC "advanced" serialisation) and enter
 * the isolate as copies. Results leave the isolate as one JSON string made by the in-isolate
 * normaliser (see `prelude/encode.ts`) and are decoded on the host (`value-codec.ts`).
 */
import type { ErrorType } from "../shared/index.ts";

/**
 * The mirror rule. The host owns an agent's history; the agent's isolate holds a mirror of
 * it, identified by the history's epoch (changed whenever the history is replaced rather than
 * appended to) and its length. A run or sync carries only the records from `historyStart`;
 * the sandbox takes them when they continue its mirror (same epoch, `historyStart` equal to
 * the mirror's length) or start it afresh (`historyStart` 0), and otherwise answers `resync`
 * (a sync: `ok: false`), after which the host sends everything from 0. No message carries more
 * than {@link MIRROR_CHUNK_RECORDS} records (a longer catch-up goes ahead of the run as syncs),
 * and the isolate copies them in at most that many at a time, so neither process ever holds a
 * whole large history in one transfer.
 */
export const MIRROR_CHUNK_RECORDS = 1_000;

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
  /** The granted tools' names (`weather`, `notes.append`), for the program's `tools` object. */
  readonly tools: readonly string[];
  /** The agent has an egress policy: the program gets `fetch`. */
  readonly fetch: boolean;
  /** The call's knowledge: its segments as a JSON array, parsed into the program's `knowledge` ("[]" when the agent has none). */
  readonly knowledge: string;
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
      /** For a `tool` failure: whether the tool's failure may pass if the call is made again. */
      readonly retriable?: boolean;
    };

/** What an entry that lets a program run answers: its result when it settled in the entry, null while it goes on. */
export interface RunAnswer {
  result: IsolateResult | null;
}

/**
 * What the isolate runtime's `start` answers: `tainted` when a global an earlier program left
 * cannot be removed (nothing ran; the isolate must be replaced), else a {@link RunAnswer}.
 */
export type StartAnswer = { readonly tainted: true } | ({ tainted: false } & RunAnswer);

/**
 * The bridge: what a running program may ask of the host while it runs, one entry per kind.
 * Each kind is declared here once, with its request (as the isolate runtime sends it; read in
 * the sandbox process by `child/bridge-reader.ts`, which trusts nothing of it) and the value of
 * its answer (made by the kind's handler in `call/bridge/`; measured on its way back by
 * `host/outbound.ts`). Every answer travels in one envelope, {@link BridgeAnswer}: the value, or
 * a {@link BridgeFailure} made by {@link bridgeFailure}. The steps to add a kind are in
 * docs/architecture.md ("Adding a bridge request").
 */
export interface BridgeKinds {
  /** `delegate(role, options).method(...args)`: a dynamic call of a child agent, answered with its Outcome. */
  readonly delegate: { readonly request: DelegateRequest; readonly answer: BridgeOutcome };
  /** `content(ref)`: a copy of the value a call returned, kept by the agent. */
  readonly content: { readonly request: ContentRequest; readonly answer: unknown };
  /** `tools.name(input)`: a granted tool run in the host, answered with a copy of its result. */
  readonly tool: { readonly request: ToolRequest; readonly answer: unknown };
  /** `fetch(url, init)`: a request the host makes under the agent's egress policy, answered with the response, its body read whole. */
  readonly fetch: { readonly request: FetchRequest; readonly answer: FetchAnswer };
}

export type BridgeKind = keyof BridgeKinds;

/**
 * Every kind, for readers of untrusted requests. The compiler names a kind missing here, and a
 * kind whose request does not say that kind.
 */
export const BRIDGE_KINDS = { delegate: true, content: true, tool: true, fetch: true } as const satisfies {
  readonly [K in BridgeKind]: BridgeKinds[K]["request"] extends { readonly kind: K } ? true : never;
};

/** A request of one kind (or of any kind). */
export type BridgeRequest<K extends BridgeKind = BridgeKind> = BridgeKinds[K]["request"];

/** Why a request was not answered with a value: refused (malformed, too large, over a limit), or failed in the host. */
export interface BridgeFailure {
  readonly errorType: ErrorType;
  readonly message: string;
  readonly retriable: boolean;
}

/** The envelope every answer travels in, from the host's handler to the isolate runtime. */
export type BridgeAnswer<K extends BridgeKind = BridgeKind> =
  | {
      readonly ok: true;
      readonly value: BridgeKinds[K]["answer"];
      /**
       * Set by a handler whose value was already measured against the sandbox's result limit
       * (a value decoded from the sandbox or a store), which `host/outbound.ts` then need not
       * measure again. Only the host sets it; the isolate ignores it.
       */
      readonly measured?: true;
      /**
       * Called once the answer has been written to the sandbox process, or could not be: set by
       * a handler that holds something until then (a fetch's place among its call tree's
       * requests in flight, so the bodies queued for the process count). Never sent.
       */
      readonly sent?: () => void;
    }
  | { readonly ok: false; readonly failure: BridgeFailure };

/** The one way a bridge failure is made, wherever it is made. */
export function bridgeFailure(errorType: ErrorType, message: string, retriable = false): { readonly ok: false; readonly failure: BridgeFailure } {
  return { ok: false, failure: { errorType, message, retriable } };
}

/** A bridge answer with a value. */
export function bridgeValue<K extends BridgeKind>(value: BridgeKinds[K]["answer"]): BridgeAnswer<K> {
  return { ok: true, value };
}

/** `content(ref)`: the value a call returned, kept by the agent. */
export interface ContentRequest {
  readonly kind: "content";
  readonly ref: string;
}

/** `tools.name(input)`: a call of a granted tool. */
export interface ToolRequest {
  readonly kind: "tool";
  /** The tool's name in programs: `weather`, or `notes.append` for a tool in a set. */
  readonly tool: string;
  /** The serialised input, or null when it was too large to serialise within its limit. */
  readonly input: string | null;
}

/** `fetch(url, init)`: what a program asked the host to request. */
export interface FetchRequest {
  readonly kind: "fetch";
  readonly url: string;
  /** As the program wrote it (checked against the policy in upper case). */
  readonly method: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string | null;
}

/** The response a program's `fetch` receives (the runtime gives it `headers.get`, `text()`, `json()`). */
export interface FetchAnswer {
  readonly status: number;
  readonly statusText: string;
  readonly url: string;
  readonly redirected: boolean;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string;
}

/** A `delegate(role).method(...args)` request from a program. */
export interface DelegateRequest {
  readonly kind: "delegate";
  readonly role: string;
  readonly method: string;
  /** Serialised options given to `delegate(role, options)`, or null when none were (or they were too large). */
  readonly options: string | null;
  /** The options were too large to serialise within their limit. */
  readonly optionsTooLarge: boolean;
  /** Serialised positional arguments, or null when they were too large to serialise within their limit. */
  readonly args: string | null;
  /** Serialised named arguments (the program's `kw()`), or null when none were given. */
  readonly kwargs: string | null;
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
  /** The program's own running time (`executionTimeoutMs`): waits for the host's answers do not count. @unit ms */
  readonly timeoutMs: number;
  /** What is left of the call's `callTimeoutMs` as the run is sent: the run ends by then, waits included. @unit ms */
  readonly callTimeLeftMs: number;
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

/** What the host sends a sandbox process (a run packed: see {@link PackedRun}). */
export type HostMessage =
  | PackedRun
  | SyncRequestMessage
  | { readonly type: "cancel"; readonly runId: number }
  /** `tell`: the sandbox process says when the program has the answer (`R`, see {@link RunSignal}); set for a large answer. */
  | { readonly type: "bridge-result"; readonly requestId: number; readonly answer: BridgeAnswer; readonly tell: boolean }
  | { readonly type: "forget"; readonly agentId: string }
  /** The memory this process may keep idle isolates in (sent before any run, and when it changes). @unit MiB */
  | { readonly type: "configure"; readonly isolateCacheMb: number; readonly reuseIsolates: boolean }
  /** Asks what the process holds (answered with `stats`). */
  | { readonly type: "stats"; readonly statsId: number };

/** What a sandbox process holds: its agents' isolates (how many, how many busy, what the idle ones hold), its spares and its resident size. */
export interface SandboxStats {
  readonly isolates: number;
  readonly busyIsolates: number;
  /** What the idle isolates hold, spares included. @unit MiB */
  readonly idleIsolatesMb: number;
  /** Isolates of agents that are gone, reset and ready for new agents. */
  readonly spareIsolates: number;
  /** How many new agents took a spare, since the process started. */
  readonly reusedIsolates: number;
  /** @unit MiB */
  readonly rssMb: number;
}

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
  | { readonly type: "bridge"; readonly runId: number; readonly requestId: number; readonly request: BridgeRequest }
  | ({ readonly type: "stats"; readonly statsId: number } & SandboxStats);

/*
 * The run message and the answer of a run that succeeded go with nearly every call, so they
 * travel as arrays: the V8 serializer behind IPC writes an object's keys again in every
 * message, and the receiving process reads an array back in about half the time. Every other
 * message travels as the object it is.
 */

/**
 * The largest run (or sync) id. The sandbox process keeps the id of the run holding its main
 * thread in an `Int32Array` slot shared with its watch thread, so ids stay within 1 to this:
 * after it, {@link nextRunId} starts again at 1 (no run lives through 2^31 others).
 */
export const MAX_RUN_ID = 2 ** 31 - 1;

/** The id after `id`. */
export function nextRunId(id: number): number {
  return id >= MAX_RUN_ID ? 1 : id + 1;
}

/** A {@link RunRequestMessage} as it travels. */
export type PackedRun = [
  runId: number,
  agentId: string,
  memoryLimitMb: number,
  mirrorMb: number,
  timeoutMs: number,
  callTimeLeftMs: number,
  historyEpoch: number,
  historyStart: number,
  callId: string,
  code: string,
  args: unknown[],
  kwargs: Record<string, unknown>,
  context: Record<string, unknown>,
  depth: number,
  maxDelegationDepth: number,
  tools: readonly string[],
  fetch: boolean,
  knowledge: string,
  chunkStart: number,
  reset: boolean,
  records: readonly string[],
];

/** A run as it travels; `callTimeLeftMs` as it is now (a run sent again has less left than when it was made). */
export function packRun(message: RunRequestMessage, callTimeLeftMs = message.callTimeLeftMs): PackedRun {
  const { payload } = message;
  const { history } = payload;
  return [
    message.runId,
    message.agentId,
    message.memoryLimitMb,
    message.mirrorMb,
    message.timeoutMs,
    callTimeLeftMs,
    message.historyEpoch,
    message.historyStart,
    payload.callId,
    payload.code,
    payload.args,
    payload.kwargs,
    payload.context,
    payload.depth,
    payload.maxDelegationDepth,
    payload.tools,
    payload.fetch,
    payload.knowledge,
    history.start,
    history.reset,
    history.records,
  ];
}

export function unpackRun(packed: PackedRun): RunRequestMessage {
  const [runId, agentId, memoryLimitMb, mirrorMb, timeoutMs, callTimeLeftMs, historyEpoch, historyStart, callId, code, args, kwargs, context, depth, maxDelegationDepth, tools, fetch, knowledge, start, reset, records] = packed;
  return {
    type: "run",
    runId,
    agentId,
    memoryLimitMb,
    mirrorMb,
    timeoutMs,
    callTimeLeftMs,
    historyEpoch,
    historyStart,
    payload: { callId, code, args, kwargs, context, depth, maxDelegationDepth, tools, fetch, knowledge, history: { start, reset, records } },
  };
}

/** What a sandbox process sends the host (a success packed: see {@link PackedSuccess}). */
export type ChildWireMessage = ChildMessage | PackedSuccess;

/** The answer of a run whose program succeeded, as it travels: run id, value, context, console. */
export type PackedSuccess = [runId: number, value: string, context: string, console: string[]];

/** A run's answer as it travels: packed when the program succeeded, else the message itself. */
export function packResult(runId: number, report: RunReport): PackedSuccess | ChildMessage {
  if (report.kind === "settled" && report.result.status === "ok") return [runId, report.result.value, report.result.context, report.result.console];
  return { type: "result", runId, report };
}

export function unpackSuccess([runId, value, context, console]: PackedSuccess): Extract<ChildMessage, { type: "result" }> {
  return { type: "result", runId, report: { kind: "settled", result: { status: "ok", value, context, console } } };
}

/**
 * The sandbox process's report pipe: a file descriptor beside the IPC channel that any of its
 * threads can write to, even while the main thread is blocked in a program's synchronous part.
 * Each report is one line of JSON.
 */
export const REPORT_FD = 4;

/**
 * How long a run's synchronous part may hold the sandbox process's main thread before the
 * process counts as busy: the host then sends other agents' runs to another process.
 * @unit ms
 */
export const BUSY_GRACE_MS = 50;

/**
 * What a line of the report pipe says about a run:
 * - `S<runId>`: its program started, and goes on after its synchronous part without having sent
 *   the host a request (written by the main thread then: a bare line on a raw pipe, because
 *   serialising an IPC message costs more than the rest of a short run). Most runs settle in
 *   their synchronous part and need none: the host knows a run started from the first of its
 *   answer, a bridge request of its, its `B` or `S` line, or a memory-ceiling report naming it;
 *   a process that dies on purpose (catastrophe) first writes `S` for every run whose program
 *   started. A run known to have started is never sent to another process. Only a process
 *   killed from outside (or crashing) in the first {@link BUSY_GRACE_MS} of a synchronous part,
 *   or before its first request left, leaves that run looking unstarted (nothing it asked for
 *   reached the host): it is sent again, at most twice (the pool's resend limit);
 * - `B<runId>/<hold>`: one of its holds of the main thread has lasted longer than
 *   {@link BUSY_GRACE_MS} (written by the watch thread, since the main thread is the one held). A
 *   hold is an entry that lets its program run (its synchronous part, or an answer to one of its
 *   requests and what the program does with it), or the isolate's tidying after the run's
 *   answer left, which the host then counts as a hold of a run no longer on its books. `hold`
 *   tells a run's holds apart;
 * - `R<runId>`: its program has a large answer to one of its bridge requests and runs on
 *   (written by the main thread as it hands the answer over, for an answer the host marked
 *   `tell`): the host counts the program's waits for answers from its request's arrival to this
 *   line, so a large answer's transfer and reading are waits too, as the sandbox process counts
 *   them. A small answer's wait ends on the host as it is sent (its transfer takes
 *   microseconds), which spares a line and a wake-up of the host on every request;
 * - `F<runId>/<hold>:<ms>`: that hold let go after `ms` whole milliseconds, at least
 *   {@link BUSY_GRACE_MS} (written by the main thread as it lets go).
 *
 * The held rule: a hold of at least {@link BUSY_GRACE_MS} is not counted against any other run's
 * deadline, by the sandbox process or by the host, and both count exactly the `ms` of its `F`
 * line. Each hold has one `B` and one `F` at most; they come from different threads, and a `B`
 * read after the `F` of the same hold is stale. (A tidying `B` read while the host still has the
 * run on its books, its answer not yet read, is taken for a hold of the run: its `F` ends it.)
 */
export type RunSignal =
  | { readonly kind: "started" | "resumed"; readonly runId: number }
  | { readonly kind: "busy"; readonly runId: number; readonly hold: number }
  | { readonly kind: "free"; readonly runId: number; readonly hold: number; readonly heldMs: number };

/** Hold numbers go round within 31 bits (see the watch's `holds` slot). */
export const MAX_HOLD = 2 ** 31 - 1;

export function startedLine(runId: number): string {
  return `S${runId}\n`;
}

export function busyLine(runId: number, hold: number): string {
  return `B${runId}/${hold}\n`;
}

export function resumedLine(runId: number): string {
  return `R${runId}\n`;
}

export function freeLine(runId: number, hold: number, heldMs: number): string {
  return `F${runId}/${hold}:${heldMs}\n`;
}

/** The run signal a report line holds, or undefined when it is not one. */
export function readSignal(line: string): RunSignal | undefined {
  const match = /^([SBFR])([1-9]\d{0,15})(?:\/(\d{1,10}))?(?::(\d{1,12}))?$/.exec(line);
  if (match === null) return undefined;
  const [, letter, id, holdText, held] = match;
  const runId = Number(id);
  const hold = Number(holdText);
  if (letter === "S" || letter === "R") return holdText === undefined && held === undefined ? { kind: letter === "S" ? "started" : "resumed", runId } : undefined;
  if (holdText === undefined || hold > MAX_HOLD) return undefined;
  if (letter === "B") return held === undefined ? { kind: "busy", runId, hold } : undefined;
  return held === undefined ? undefined : { kind: "free", runId, hold, heldMs: Number(held) };
}

/** Written on the report pipe by the memory watch when the process passed its memory ceiling. */
export interface CeilingReport {
  readonly type: "memory-ceiling";
  readonly rssMb: number;
  readonly ceilingMb: number;
  /** The run whose synchronous part was running, or 0 when none was. */
  readonly runId: number;
}
