/**
 * What a call's programs did with tools (and `fetch`, listed as the tool `"fetch"`), for its
 * record, log line and effects rule: each call in order (the first {@link MAX_LISTED_TOOL_CALLS}
 * kept in full), with totals over all, and the sources each attempt fetched.
 */
import { type ErrorType, type JsonValue, toJsonSafe, truncateString } from "../shared/index.ts";
import type { ToolEffect } from "./grant.ts";

/** Tool calls a record lists; `tool_call_count` has the total. */
export const MAX_LISTED_TOOL_CALLS = 50;
/** Longest input a record shows of one tool call, as JSON. @unit characters */
export const MAX_LISTED_INPUT_CHARS = 1_000;
const MAX_LISTED_ERROR_CHARS = 1_000;
/** Distinct tool names a log line names. */
const MAX_LOGGED_NAMES = 100;
/** Sources a record's `outcome_summary` lists; `source_count` has the total. */
export const MAX_LISTED_SOURCES = 20;

/** One tool call as a record lists it. */
export interface ToolCallRecord {
  readonly tool: string;
  readonly input: JsonValue;
  readonly ok: boolean;
  readonly duration_ms: number;
  readonly effect: ToolEffect;
  readonly attempt: number;
  readonly error_type?: ErrorType;
  readonly error_message?: string;
  /** For a fetch: the URL that answered (after redirects, cleaned), its status and the bytes of its body. */
  readonly url?: string;
  readonly status?: number;
  readonly bytes?: number;
  /** For a call of a tool that may change the world that reached the tool: what became of its effect. */
  readonly state?: EffectState;
  /** With `state`: whether the effect could be undone (the tool has a `revert`; a fetch never does). */
  readonly undoable?: boolean;
  /** With state `revert_failed`: why the undo failed. */
  readonly revert_error?: string;
}

/** What a fetch that got an answer adds to its entry. */
export interface FetchedEntry {
  readonly url: string;
  readonly status: number;
  readonly bytes: number;
}

/** What became of an effect: see {@link ToolCallEntry.state}. */
export type EffectState = "applied" | "failed" | "unknown" | "reverted" | "revert_failed";

/** Every effect state, in the order log lines and reports count them. */
export const EFFECT_STATES: readonly EffectState[] = ["applied", "failed", "unknown", "reverted", "revert_failed"];

/** Each effect state counted 0: the counts of a call that made no write. */
export function noEffects(): Record<EffectState, number> {
  return Object.fromEntries(EFFECT_STATES.map((state) => [state, 0])) as Record<EffectState, number>;
}

/** What an undo of one write needs: what `execute` was given and returned, and how to reach the tool's `revert`. */
export interface WriteEffect {
  /** The input `execute` was given (checked by the tool's schema). */
  readonly input: unknown;
  /** What `execute` returned, once it did. */
  result?: unknown;
  readonly toolCallId: string;
  readonly idempotencyKey: string;
  /** The tool's `revert`, bound to it; undefined for a tool without one (and a fetch). */
  readonly revert: ((input: unknown, result: unknown, options: { signal: AbortSignal; callId: string; toolCallId: string; idempotencyKey: string }) => unknown) | undefined;
  /** The tool's `timeoutMs`: how long its revert, and a late answer of its `execute`, are waited for. @unit ms */
  readonly timeoutMs: number;
  /** For an `execute` that had not answered when its call stopped waiting: settles when it does (the entry's state follows). */
  late?: Promise<void>;
}

/** One tool call in progress or done. */

export interface ToolCallEntry {
  readonly tool: string;
  readonly effect: ToolEffect;
  readonly attempt: number;
  readonly startedMs: number;
  /** The input as the record shows it. */
  input: JsonValue;
  /** In the record's list: one of the first calls, or a write that reached its tool (listed in the place of a read). */
  listed: boolean;
  /**
   * For a call of a tool that may change the world that reached `execute`: `applied`
   * (it answered), `failed` (it threw), or `unknown` (it did not answer: timed out, cut off).
   */
  state?: EffectState;
  /** For a write: what undoing it needs (see {@link ToolCallLog.wrote}). */
  write?: WriteEffect;
  /** With state `revert_failed`: why. */
  revertError?: string;
  /** Set when the call settles; until then the record says it did not answer in time. */
  ended?: { readonly ok: boolean; readonly durationMs: number; readonly errorType?: ErrorType; readonly errorMessage?: string; readonly fetched?: FetchedEntry };
}

/** The tool calls of one dynamic call. */
export class ToolCallLog {
  readonly #listed: ToolCallEntry[] = [];
  #count = 0;
  #errors = 0;
  #ms = 0;
  readonly #names = new Set<string>();
  /** Tools of which a call failed, for the log line (bounded as `#names` is). */
  readonly #failedNames = new Set<string>();
  readonly #open = new Set<ToolCallEntry>();
  readonly #wrote = new Set<string>();
  /** Calls of tools that may change the world this call's own programs made (not its delegated calls'). */
  #writes = 0;
  /** Writes checked against `maxWriteCalls` and not yet made or given up (waiting for approval, say). */
  #heldWrites = 0;
  /**
   * Writes made and held by this call and the calls below it (delegated by its programs, and by
   * theirs): every level's are held to `maxWriteCalls`, so a program cannot multiply the limit
   * by delegating.
   */
  #treeWrites = 0;
  #treeHeld = 0;
  /** The writes that reached the tool (or the server), in order: the call's effect ledger. */
  readonly #effects: ToolCallEntry[] = [];
  /** By attempt: how many tool calls its program made. */
  readonly #byAttempt = new Map<number, number>();
  /** By attempt: the distinct URLs that answered a fetch with a 2xx status. */
  readonly #sources = new Map<number, Set<string>>();
  /** The tool calls of the call whose program delegated to this one: its programs must not run again either. */
  readonly #parent: ToolCallLog | undefined;

  constructor(parent?: ToolCallLog) {
    this.#parent = parent;
  }

  /**
   * A tool that may change the world is about to run: from now on the call's programs are not
   * run again on their own, nor those of the calls whose programs delegated to it.
   */
  markWrote(tool: string): void {
    this.#writes += 1;
    for (const log of this.#andCallers()) log.#treeWrites += 1;
    this.#noteWrote(tool);
  }

  /**
   * Holds one of the call's `max` writes for a write on its way (to its approval, then its tool):
   * false when all are made or held, by this call or, counted together, by the calls its programs
   * delegated and the calls that delegated to it. Writes made in parallel are so counted before
   * any of them waits. Each hold is let go once ({@link letGoWrite}), after {@link markWrote} or
   * instead of it.
   */
  holdWrite(max: number): boolean {
    if (this.#full(max) !== undefined) return false;
    this.#heldWrites += 1;
    for (const log of this.#andCallers()) log.#treeHeld += 1;
    return true;
  }

  letGoWrite(): void {
    if (this.#heldWrites === 0) return;
    this.#heldWrites -= 1;
    for (const log of this.#andCallers()) log.#treeHeld -= 1;
  }

  /** Why {@link holdWrite} said no, as the middle of a sentence: the writes made, those on their way, and the limit. */
  writeLimitReached(max: number): string {
    const full = this.#full(max) ?? this;
    const onTheirWay = full.#treeHeld === 0 ? "" : ` (and has ${full.#treeHeld} more on their way)`;
    const who = full === this && this.#treeWrites === this.#writes && this.#treeHeld === this.#heldWrites ? "this call" : "this call, counting the calls it delegated and those that delegated to it,";
    return `${who} has made ${full.#treeWrites} calls of tools that may change the world${onTheirWay}, the most it may make (maxWriteCalls: ${max})`;
  }

  /** The nearest level (this call, or one that delegated to it) whose writes made and held reach `max`. */
  #full(max: number): ToolCallLog | undefined {
    for (const log of this.#andCallers()) if (log.#treeWrites + log.#treeHeld >= max) return log;
    return undefined;
  }

  /** This call's tool calls, then those of each call that delegated to it, nearest first. */
  *#andCallers(): Generator<ToolCallLog> {
    for (let log: ToolCallLog | undefined = this; log !== undefined; log = log.#parent) yield log;
  }

  /** Puts a write that is about to reach its tool in the effect ledger, its outcome unknown until it answers. */
  addEffect(entry: ToolCallEntry, write?: WriteEffect): void {
    entry.state = "unknown";
    if (write !== undefined) entry.write = write;
    this.#effects.push(entry);
    // However many calls came before it, what may have changed the world is in the record: in
    // the place of the latest read listed (the list stays in call order, and within its bound).
    if (!entry.listed) {
      const read = this.#listed.findLastIndex((listed) => listed.state === undefined);
      if (read === -1) return;
      const [left] = this.#listed.splice(read, 1);
      if (left !== undefined) left.listed = false;
      entry.listed = true;
      this.#listed.push(entry);
    }
  }

  /** The call's effect ledger: its writes that reached their tool, oldest first. */
  get effects(): readonly ToolCallEntry[] {
    return this.#effects;
  }

  /** How many of the call's effects are in each state, for its log line. */
  effectCounts(): Record<EffectState, number> {
    const counts = noEffects();
    for (const entry of this.#effects) counts[entry.state ?? "unknown"] += 1;
    return counts;
  }

  #noteWrote(tool: string): void {
    if (this.#wrote.size < MAX_LOGGED_NAMES) this.#wrote.add(tool);
    const parent = this.#parent;
    if (parent !== undefined) parent.#noteWrote(tool);
  }

  /** Calls of tools that may change the world that this call's programs made (not its delegated calls', which count against its limit all the same). */
  get writes(): number {
    return this.#writes;
  }

  /** Whether a tool that may change the world was run (or set to run). */
  get wrote(): boolean {
    return this.#wrote.size > 0;
  }

  /** The tools that may change the world that were run, by name. */
  get wroteWith(): readonly string[] {
    return [...this.#wrote];
  }

  /** Starts an entry for a tool call. */
  start(tool: string, input: unknown, effect: ToolEffect, attempt: number): ToolCallEntry {
    const listed = this.#listed.length < MAX_LISTED_TOOL_CALLS;
    // A write's input is kept past the list's bound too: should it reach its tool, it is listed.
    const entry: ToolCallEntry = { tool, effect, attempt, startedMs: performance.now(), input: listed || effect === "write" ? listedInput(input) : null, listed };
    this.#count += 1;
    this.#byAttempt.set(attempt, (this.#byAttempt.get(attempt) ?? 0) + 1);
    if (this.#names.size < MAX_LOGGED_NAMES) this.#names.add(tool);
    if (listed) this.#listed.push(entry);
    this.#open.add(entry);
    return entry;
  }

  /** Ends an entry (once; later ends are ignored). A fetch that got an answer says what answered; a 2xx one is a source of its attempt. */
  end(entry: ToolCallEntry, ok: boolean, failure?: { errorType: ErrorType; message: string }, fetched?: FetchedEntry): void {
    if (entry.ended !== undefined) return;
    this.#open.delete(entry);
    const durationMs = performance.now() - entry.startedMs;
    entry.ended = {
      ok,
      durationMs,
      ...(failure === undefined ? {} : { errorType: failure.errorType, errorMessage: truncateString(failure.message, MAX_LISTED_ERROR_CHARS) }),
      ...(fetched === undefined ? {} : { fetched }),
    };
    this.#ms += durationMs;
    if (!ok) {
      this.#errors += 1;
      if (this.#failedNames.size < MAX_LOGGED_NAMES) this.#failedNames.add(entry.tool);
    }
    if (fetched !== undefined && fetched.status >= 200 && fetched.status <= 299) {
      let sources = this.#sources.get(entry.attempt);
      if (sources === undefined) this.#sources.set(entry.attempt, (sources = new Set()));
      sources.add(fetched.url);
    }
  }

  /** The record's `outcome_summary.sources` and `source_count` for the attempt that produced the outcome; empty when it fetched nothing that answered 2xx. */
  sourcesOf(attempt: number): { sources?: string[]; source_count?: number } {
    const sources = this.#sources.get(attempt);
    if (sources === undefined || sources.size === 0) return {};
    return { sources: [...sources].slice(0, MAX_LISTED_SOURCES), source_count: sources.size };
  }

  get count(): number {
    return this.#count;
  }

  /** Tool calls attempt `attempt`'s program made (0: a kept program's). */
  countIn(attempt: number): number {
    return this.#byAttempt.get(attempt) ?? 0;
  }

  /** The record's `tool_calls` and `tool_call_count`; empty when no tool was called. */
  recordFields(): { tool_calls?: ToolCallRecord[]; tool_call_count?: number } {
    if (this.#count === 0) return {};
    const now = performance.now();
    return { tool_calls: this.#listed.map((entry) => recordOf(entry, now)), tool_call_count: this.#count };
  }

  /** The log line's tool fields. Calls still in flight count as failed, for the time they had. */
  logFields(): { tool_call_count: number; tool_names: string[]; tool_error_count: number; tool_failed_names: string[]; tool_ms: number } {
    const now = performance.now();
    let errors = this.#errors;
    let ms = this.#ms;
    const failed = new Set(this.#failedNames);
    for (const entry of this.#open) {
      errors += 1;
      ms += now - entry.startedMs;
      if (failed.size < MAX_LOGGED_NAMES) failed.add(entry.tool);
    }
    return { tool_call_count: this.#count, tool_names: [...this.#names], tool_error_count: errors, tool_failed_names: [...failed], tool_ms: Math.round(ms * 1000) / 1000 };
  }
}

function recordOf(entry: ToolCallEntry, now: number): ToolCallRecord {
  const ended = entry.ended ?? { ok: false, durationMs: now - entry.startedMs, errorType: "cancelled" as const, errorMessage: "The call ended before the tool answered." };
  return {
    tool: entry.tool,
    input: entry.input,
    ok: ended.ok,
    duration_ms: Math.round(ended.durationMs * 1000) / 1000,
    effect: entry.effect,
    attempt: entry.attempt,
    ...(ended.errorType === undefined ? {} : { error_type: ended.errorType }),
    ...(ended.errorMessage === undefined ? {} : { error_message: ended.errorMessage }),
    ...(ended.fetched === undefined ? {} : { url: ended.fetched.url, status: ended.fetched.status, bytes: ended.fetched.bytes }),
    ...(entry.state === undefined ? {} : { state: entry.state, undoable: entry.write?.revert !== undefined }),
    ...(entry.revertError === undefined ? {} : { revert_error: truncateString(entry.revertError, MAX_LISTED_ERROR_CHARS) }),
  };
}

/** The input as a record shows it: JSON-safe, within {@link MAX_LISTED_INPUT_CHARS}. */
function listedInput(input: unknown): JsonValue {
  return boundedInput(toJsonSafe(input, MAX_LISTED_INPUT_CHARS * 2), MAX_LISTED_INPUT_CHARS);
}

/**
 * A JSON-safe input as it is when its JSON fits `maxChars`; else with its long strings cut (so
 * that its keys and short values, a recipient and an amount, say, still show), when that fits;
 * else a string of its JSON's start with a marker (within `maxChars` too).
 */
export function boundedInput(input: JsonValue, maxChars: number): JsonValue {
  const json = JSON.stringify(input) ?? "null";
  if (json.length <= maxChars) return input;
  if (typeof input === "object" && input !== null) {
    for (const longest of [200, 60, 20]) {
      const cut = cutStrings(input, longest);
      if ((JSON.stringify(cut) ?? "").length <= maxChars) return cut;
    }
  }
  return `${json.slice(0, maxChars - 60)}…[truncated: input was ${json.length} chars as JSON]`;
}

/** `value` with every string longer than `longest` cut to it, marked (keys kept). */
function cutStrings(value: JsonValue, longest: number): JsonValue {
  if (typeof value === "string") return value.length <= longest ? value : `${value.slice(0, longest)}…[${value.length} chars]`;
  if (Array.isArray(value)) return value.map((item) => cutStrings(item, longest));
  if (typeof value === "object" && value !== null) {
    const cut: Record<string, JsonValue> = {};
    for (const [key, item] of Object.entries(value)) Object.defineProperty(cut, key, { value: cutStrings(item, longest), enumerable: true, writable: true, configurable: true });
    return cut;
  }
  return value;
}
