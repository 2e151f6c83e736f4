/**
 * A dynamic call in progress: where it came from, and everything it learns along the way for
 * its record and log line (the draft), with the agent it is for.
 */
import { type CallEvent, type EmitEvent, eventsFor } from "./events.ts";
import { AttemptLog } from "./attempts.ts";
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import type { AgentState } from "../state/index.ts";
import type { ProgramSource, Speaker } from "../history/index.ts";
import { type ErrorType, Outcome, within, type Within } from "../shared/index.ts";
import type { ParsedProgram, ReuseDecision } from "../programs/index.ts";
import type { KnowledgeAssembly } from "../knowledge/index.ts";
import type { Span } from "../tracing/index.ts";
import type { AgentTurn } from "../store/index.ts";
import { runWhileWaiting, ToolCallLog, toolRunningNow, withAgents } from "../tools/index.ts";
import type { AttemptFailure } from "./repair.ts";
import type { AgentReference } from "../sandbox/index.ts";
import { CallTree } from "./call-tree.ts";

/** Where a call came from. */
export interface CallOrigin {
  readonly speaker: Speaker;
  readonly parentCallId?: string;
  readonly traceId?: string;
  /** The span of the calling program's run, for a delegated call. */
  readonly parentSpan?: Span | undefined;
  /** For a delegated call: aborts when the calling program's run ends, which ends this call too. */
  readonly signal?: AbortSignal | undefined;
  /** For a delegated call: when the calling program's call must have ended; this call ends by then too (on `performance.now()`'s clock). */
  readonly endsAtMs?: number | undefined;
  /** For a delegated call: the agents whose programs wait for it (see `tools/reentry.ts`). */
  readonly waitingAgents?: ReadonlySet<string> | undefined;
  /** For a delegated call: the calling call's tool calls, told when a tool of this call may change the world. */
  readonly parentTools?: ToolCallLog | undefined;
  /** For a delegated call: runs code in the async context of the application's call at the root of the tree. */
  readonly inCaller?: InCaller | undefined;
  /** For a delegated call: what the call tree it is part of shares (its request budget, the fetches' count and barrier). A call made by the application's code running for another call (see `runForCall`) takes that call's. */
  readonly tree?: CallTree | undefined;
  /**
   * For a call of the application's: the live agent for an agent the program handed back in its
   * value (see `AgentReference`). Without it (a delegated call, whose caller is a program),
   * such an agent is its text.
   */
  readonly handOutAgent?: ((reference: AgentReference) => unknown) | undefined;
  /** For a call of the application's: told each step of the call as it goes (`Agent.call`'s `onEvent`). */
  readonly onEvent?: ((event: CallEvent) => void) | undefined;
  /** For a call of the application's: its own limits and cancellation (`Agent.call`). */
  readonly limits?: { readonly callTimeoutMs?: number; readonly executionTimeoutMs?: number } | undefined;
}

/** Runs `work` in the async context a call was made in (the application's `AsyncLocalStorage` stores). */
export type InCaller = <T>(work: () => T) => T;

const runHere: InCaller = (work) => work();

/** Makes one dynamic call of an agent (`performCall` in `lifecycle.ts`). */
export type PerformCall = (state: AgentState, method: string, args: readonly unknown[], origin: CallOrigin) => Promise<Outcome>;

/** One dynamic call in progress: the agent it is for, and what it has learned so far. */
export interface Call {
  readonly state: AgentState;
  readonly draft: CallDraft;
  /** How a program's `delegate` makes a call of another agent: passed in, so the parts of a call do not import its story. */
  readonly perform: PerformCall;
}

/**
 * Everything a call learns along the way, for its record and log line: its identity and limits,
 * and a ledger per step, written by that step alone (`finalize.ts` maps them to the record and
 * the log line).
 */
export interface CallDraft {
  readonly callId: string;
  readonly role: string;
  readonly method: string;
  readonly speaker: Speaker;
  readonly traceId: string;
  readonly parentCallId: string | undefined;
  readonly depth: number;
  readonly startedAt: Date;
  readonly startedMs: number;
  /** When the call must have ended (`callTimeoutMs` after its start, or its caller's end if sooner; on `performance.now()`'s clock). */
  readonly endsAtMs: number;
  /** The call's own `callTimeoutMs` and `executionTimeoutMs`: the agent's, or what `Agent.call` gave this call. @unit ms */
  readonly callTimeoutMs: number;
  readonly executionTimeoutMs: number;
  /** Aborts when the call is cancelled: the agent's `signal`, or for a delegated call its calling program's run ending. */
  readonly signal: AbortSignal | undefined;
  args: readonly unknown[];
  kwargs: Readonly<Record<string, unknown>>;
  /** What asking the provider learned (`ask.ts`, `repair.ts`). */
  readonly asked: AskLedger;
  /** The call's program and its latest run (`commit.ts`, `run.ts`). */
  readonly program: ProgramLedger;
  /** The kept program the call ran, and whether a new one is kept (`reuse.ts`, `commit.ts`, `finalize.ts`). */
  readonly reuse: ReuseLedger;
  /** Where the call's time went, for its time-out messages and its log line. */
  readonly time: TimeLedger;
  /** The call's knowledge, assembled once before any program ran (`knowledge.ts`); undefined when the agent has none, or before. */
  knowledge: KnowledgeAssembly | undefined;
  /** The tool calls (and fetches) the call's programs made. */
  readonly tools: ToolCallLog;
  /** The call's attempts, each begun and ended by the step that makes it (`reuse.ts`, `lifecycle.ts`), for the record and the log line. */
  readonly attemptLog: AttemptLog;
  /** Tells the application each step of the call, when it asked (see `events.ts`). */
  readonly emit: EmitEvent;
  /** What was done about the call's effects once it failed (`effects.ts`). */
  readonly undo: UndoLedger;
  /** What the call tree this call is part of shares: its programs' request budget, the fetches' count and barrier. */
  readonly tree: CallTree;
  /** A durable agent's turn in its store while a program of this call runs and commits (see `AgentTurn`). */
  turn: AgentTurn | undefined;
  /** The call's `invoke_agent` span (delegated calls nest under its runs' spans); undefined when tracing is off. */
  span: Span | undefined;
  /** The agents whose programs wait for this call (through delegate chains and tools): a call of one of them would wait for itself. */
  readonly waitingAgents: ReadonlySet<string>;
  /** Runs application code of this call (a tool, its approval) in the async context the call was made in, not the bridge's. */
  readonly inCaller: InCaller;
  finalized: boolean;
}

/** What was done about a failed call's effects. */
export interface UndoLedger {
  /** Settles once the agent's `onFailure` was applied; set once, when the call is known to have failed with effects. */
  settled: Promise<void> | undefined;
  /** The `onFailure` applied: undefined when the call ended ok or had no effects. */
  rule: "keep" | "revert" | "function" | undefined;
  /** Why a function given as `onFailure` failed (it threw, or did not settle in time). */
  handlerError: string | undefined;
}

/** What asking the provider learned. */
export interface AskLedger {
  attempts: number;
  system: string | undefined;
  user: string | undefined;
  model: string | undefined;
  /** The name of the provider that wrote the call's program. */
  provider: string | undefined;
  /** Tokens the providers reported over the call's attempts; null while none was reported. */
  tokens: CallTokens | null;
  /** What the requests cost in US dollars, by the agent's `pricing`; null while none was priced. */
  costUsd: number | null;
  /** A request reported tokens for a model `pricing` has no price for: the call's cost is not known. */
  unpriced: boolean;
  /** Attempts that failed, oldest first: each one's error feeds the next attempt and the log line. */
  readonly failures: AttemptFailure[];
}

/** The call's program and its latest run. */
export interface ProgramLedger {
  code: string | null;
  /** Where `code` came from. */
  programSource: ProgramSource;
  /** The last program, parsed once and reused by the history scan. */
  parsed: ParsedProgram | undefined;
  /** The outcome of the latest program run, whatever the program (see {@link endedByKeptProgram}). */
  runOutcome: Outcome | undefined;
  console: readonly string[];
  /** The value of the program's last successful run, as the sandbox encoded it: kept for follow-ups. */
  valueText: string | undefined;
  /** The value the call ends with may hold agents its program handed back (see `AgentReference`). */
  agentsInValue: boolean;
  /** The span of the latest run (delegated calls nest under it); undefined when tracing is off. */
  runSpan: Span | undefined;
}

/** The kept program the call ran, and whether a new one is kept. */
export interface ReuseLedger {
  /** The kept program this call runs, under its key; `counted` once its commit counted the use. */
  keptRun: { readonly key: string; readonly code: string; counted: boolean } | undefined;
  /** Whether the program that worked was kept for reuse, and why; undefined when no new program worked. */
  reuseDecision: ReuseDecision | undefined;
  /** Whether the kept program that ran failed by its own mistake once too often in a row, and was dropped. */
  keptProgramDropped: boolean;
  /** Whether the kept program's run ended the call: set once, by `finalize`, from {@link endedByKeptProgram}. */
  artifactHit: boolean;
}

/** Where the call's time went: waiting for the provider, in runs, waiting for delegated calls within runs, and for other processes' turns. @unit ms */
export interface TimeLedger {
  providerMs: number;
  runMs: number;
  delegatedMs: number;
  /** Time a durable agent's call waited for other processes' turns on the agent (their lock). */
  turnWaitMs: number;
  /** When its caller was answered, for a call whose record is written after that (see `performOpenCall`); on `performance.now()`'s clock. */
  answeredMs?: number;
}

/** Tokens a call's provider requests reported, summed; `cached` and `cacheWrite` null when no request reported them. */
export interface CallTokens {
  readonly prompt: number;
  readonly completion: number;
  readonly cached: number | null;
  readonly cacheWrite: number | null;
}

/** A fresh draft for a call of `state`'s method. */
export function newDraft(state: AgentState, method: string, rawArgs: readonly unknown[], origin: CallOrigin): CallDraft {
  const startedMs = performance.now();
  const callId = randomUUID();
  const tool = toolRunningNow();
  // A call made by the application's code running for another call (a tool, toolApproval, …) belongs to that call (see `runForCall`).
  const caller = origin.tree === undefined ? toolCaller(tool?.caller) : undefined;
  return {
    callId,
    role: state.role,
    method,
    speaker: origin.speaker,
    traceId: origin.traceId ?? caller?.traceId ?? state.options.traceId ?? randomUUID(),
    parentCallId: origin.parentCallId ?? caller?.callId,
    depth: state.depth,
    startedAt: new Date(),
    startedMs,
    endsAtMs: Math.min(startedMs + (origin.limits?.callTimeoutMs ?? state.options.callTimeoutMs), origin.endsAtMs ?? Number.POSITIVE_INFINITY),
    callTimeoutMs: origin.limits?.callTimeoutMs ?? state.options.callTimeoutMs,
    executionTimeoutMs: origin.limits?.executionTimeoutMs ?? state.options.executionTimeoutMs,
    signal: origin.signal === undefined ? state.options.signal : state.options.signal === undefined ? origin.signal : AbortSignal.any([state.options.signal, origin.signal]),
    args: rawArgs,
    kwargs: {},
    asked: { attempts: 0, system: undefined, user: undefined, model: undefined, provider: undefined, tokens: null, costUsd: null, unpriced: false, failures: [] },
    program: { code: null, programSource: "generated", parsed: undefined, runOutcome: undefined, console: [], valueText: undefined, agentsInValue: false, runSpan: undefined },
    reuse: { keptRun: undefined, reuseDecision: undefined, keptProgramDropped: false, artifactHit: false },
    time: { providerMs: 0, runMs: 0, delegatedMs: 0, turnWaitMs: 0 },
    knowledge: undefined,
    tools: new ToolCallLog(origin.parentTools),
    undo: { settled: undefined, rule: undefined, handlerError: undefined },
    attemptLog: new AttemptLog(),
    emit: eventsFor(origin.onEvent, { callId, role: state.role, method, startedMs }),
    tree: origin.tree ?? caller?.tree ?? new CallTree(),
    turn: undefined,
    span: undefined,
    // Taken only where a tool may run: its code sees the stores the application's call set.
    inCaller: origin.inCaller ?? (state.options.tools.names.length > 0 || state.options.egress !== undefined ? (AsyncLocalStorage.snapshot() as InCaller) : runHere),
    waitingAgents: withAgents(origin.waitingAgents ?? new Set(), ...(tool === undefined ? [] : [tool.agents])),
    finalized: false,
  };
}

/**
 * How the application's code runs for a call. `agentWaits`: whether the call's agent waits for
 * it (its program, or its turn, held until the code ends), so that a call of the agent from it
 * is refused (default true). `tree`: the call tree the calls it makes join (default the call's).
 */
export interface CallCode {
  readonly agentWaits?: boolean;
  readonly tree?: CallTree;
}

/**
 * Runs the application's code for a call (a tool's `execute` or `revert`, its schema's check) in
 * the async context the call was made in, knowing which agents wait on this code (see
 * {@link CallCode}); `ended` must be called when the code is over.
 */
export function runForCall<T>(state: AgentState, draft: CallDraft, work: () => T, code: CallCode = {}): { readonly result: T; readonly ended: () => void } {
  const caller: ToolCaller = { tree: code.tree ?? draft.tree, traceId: draft.traceId, callId: draft.callId };
  const waiting = code.agentWaits === false ? draft.waitingAgents : withAgents(draft.waitingAgents, state.id);
  return draft.inCaller(() => runWhileWaiting(waiting, caller, work));
}

/**
 * The application's code for a call (a tool's `execute`, `toolApproval`, a `returns` check,
 * `onFailure`) as {@link runForCall} runs it, waited for as `within` does: known as the call's
 * until the wait ends, so an agent it calls meanwhile is part of the call's tree and trace.
 */
export async function withinCallCode<T>(state: AgentState, draft: CallDraft, limitMs: number, signal: AbortSignal | undefined, timeoutReason: () => unknown, work: (signal: AbortSignal) => T | PromiseLike<T>, code: CallCode = {}): Promise<Within<Awaited<T>>> {
  let ended: (() => void) | undefined;
  const answer = await within(limitMs, signal, timeoutReason, (given) => {
    const running = runForCall(state, draft, () => work(given), code);
    ended = running.ended;
    return running.result;
  });
  ended?.();
  return answer;
}

/** What a call made by the application's code running for another call takes from that call: its call tree, its trace, and itself as parent. */
interface ToolCaller {
  readonly tree: CallTree;
  readonly traceId: string;
  readonly callId: string;
}

function toolCaller(given: object | undefined): ToolCaller | undefined {
  const caller = given as Partial<ToolCaller> | undefined;
  return caller?.tree instanceof CallTree ? (caller as ToolCaller) : undefined;
}

/** What is left of the call's `callTimeoutMs`. @unit ms */
export function callTimeLeftMs(draft: CallDraft): number {
  return Math.max(0, draft.endsAtMs - performance.now());
}

/** The call's `timeout` outcome once its `callTimeoutMs` has passed; undefined before. */
export function callOverdue(_state: AgentState, draft: CallDraft): Outcome | undefined {
  return callTimeLeftMs(draft) > 0 ? undefined : failed(draft, "timeout", callTimeoutMessage(draft));
}

export function callTimeoutMessage(draft: CallDraft): string {
  return `The call took longer than callTimeoutMs (${draft.callTimeoutMs} ms)${timeSpent(draft)}.`;
}

/** Where a call's time went, for a time-out message: `: 1200 ms waiting for the provider, …`. */
export function timeSpent(draft: CallDraft): string {
  const { time } = draft;
  const waits = draft.tools.logFields().tool_ms + time.delegatedMs;
  const parts = [`${Math.round(time.providerMs)} ms waiting for the provider`, `${Math.round(time.runMs)} ms in its programs' runs`];
  if (waits > 0) parts.push(`${Math.round(waits)} ms of them waiting for tools, fetches and delegated calls`);
  // Rounded, a wait for an uncontended lock says nothing.
  if (time.turnWaitMs >= 1) parts.push(`${Math.round(time.turnWaitMs)} ms waiting for other processes' turns on this agent`);
  return `: ${parts.join(", ")}`;
}

/**
 * The call's `invalid_input` outcome when it would wait for itself: its agent's program waits
 * for the tool (or the delegated call) that made it. Undefined when it may go on.
 */
export function waitsForItself(state: AgentState, draft: CallDraft): Outcome | undefined {
  if (!draft.waitingAgents.has(state.id)) return undefined;
  return failed(
    draft,
    "invalid_input",
    `${state.role}.${draft.method}() was called from the application's code for a call of this same agent (a tool, toolApproval, a returns check, onFailure, a revert) while that call holds the agent; the call would wait for itself. Call the agent after that call ends, or use another agent.`,
  );
}

/** The call's error outcome. */
export function failed(draft: CallDraft, errorType: ErrorType, message: string, options: { retriable?: boolean } = {}): Outcome {
  return Outcome.failure(draft.callId, errorType, message, options);
}

/**
 * Whether the kept program's run ended the call (`artifact_hit`): the call's program is the kept
 * one and its outcome is that run's. Not when the kept program's own mistake sent the call on to
 * the provider (the outcome is then the provider's, or a new program's), nor when nothing ran.
 */
export function endedByKeptProgram(draft: CallDraft, outcome: Outcome): boolean {
  return draft.program.programSource === "reused" && draft.program.runOutcome === outcome;
}
