/**
 * The calls a report's call explorer shows: each call line the report covers, read
 * only where sane and cut to size, the characters that hide or reorder text shown as `\u{…}`,
 * the latest {@link MAX_EXPLORER_CALLS} of them within {@link MAX_EXPLORER_CHARS}; programs kept
 * once each by the hash of their text, so a log of kept-program runs does not repeat the same
 * text, and a line cannot put its text under another program's hash.
 */
import { programHash } from "../history/index.ts";
import { terminalText } from "../shared/index.ts";
import { EFFECT_STATES } from "../tools/index.ts";
import { saneDuration } from "./report-samples.ts";
import { count } from "./report-tools.ts";

/** Calls the explorer keeps: the latest ones read. */
export const MAX_EXPLORER_CALLS = 10_000;
/** Most characters the kept calls take in the page's JSON; past it the oldest read are left out too. */
export const MAX_EXPLORER_CHARS = 24_000_000;
/** Longest arguments (as JSON) and error message a call keeps. @unit characters */
const MAX_ARGS_CHARS = 2_000;
const MAX_MESSAGE_CHARS = 1_000;
/** Longest program text kept, and most characters the programs take in the page's JSON in all. @unit characters */
const MAX_PROGRAM_CHARS = 20_000;
const MAX_PROGRAMS_CHARS = 8_000_000;
const MAX_NAMES = 20;
const MAX_NAME_CHARS = 200;
/** Tool calls a call read from a store lists (records list at most 50). */
const MAX_TOOL_CALLS = 50;

/** One attempt of a call, as the explorer shows it. */
export interface ExplorerAttempt {
  readonly n: number;
  readonly source: string | null;
  readonly model: string | null;
  readonly errorType: string | null;
  readonly errorMessage: string | null;
  readonly toolCalls: number;
  /** The key of its program in {@link ExplorerData.programs}; null when it had none or it was not kept. */
  readonly program: string | null;
}

/** One tool call of a call read from a store. */
export interface ExplorerToolCall {
  readonly tool: string;
  readonly input: string;
  readonly ok: boolean;
  readonly state: string | null;
  readonly error: string | null;
  /** For a fetch: the URL that answered and its status. */
  readonly url: string | null;
  readonly status: number | null;
}

/** One call, as the explorer shows it. */
export interface ExplorerCall {
  readonly id: string;
  /** Where its line was read: `file:line`, or `<store>:<agent>:<n>` for a store's record. */
  readonly source: string;
  readonly parent: string | null;
  readonly trace: string | null;
  readonly depth: number;
  /** When the line was written (the call's end): ISO 8601. */
  readonly time: string | null;
  readonly role: string;
  readonly method: string;
  readonly durationMs: number | null;
  readonly status: string;
  readonly errorType: string | null;
  readonly errorMessage: string | null;
  /** The arguments as JSON text, cut to size. */
  readonly args: string;
  readonly kwargs: string;
  readonly programSource: string | null;
  readonly model: string | null;
  readonly program: string | null;
  readonly attempts: readonly ExplorerAttempt[];
  readonly repairSkipped: string | null;
  readonly tools: { readonly count: number; readonly names: readonly string[]; readonly errors: number; readonly failed: readonly string[] };
  readonly knowledge: { readonly sources: readonly string[]; readonly empty: readonly string[]; readonly failed: readonly string[]; readonly retrieved: number };
  readonly effects: Readonly<Record<string, number>> | null;
  /** Each tool call, for a call read from a store (a log line only counts them). */
  readonly toolCalls: readonly ExplorerToolCall[] | null;
  readonly onFailure: string | null;
  readonly tokens: { readonly prompt: number; readonly completion: number } | null;
}

/** What the explorer is given. */
export interface ExplorerData {
  readonly calls: readonly ExplorerCall[];
  /** Program texts by key. */
  readonly programs: Readonly<Record<string, string>>;
  /** Calls left out: the report covered more than {@link MAX_EXPLORER_CALLS}, or more than {@link MAX_EXPLORER_CHARS} of them. */
  readonly leftOut: number;
}

/** Collects the calls of a report for its explorer, in bounded memory. */
export class CallCollector {
  /** The calls kept, oldest read first, from {@link #first} on (those before it are left out), with their size in the page. */
  readonly #calls: { readonly call: ExplorerCall; readonly chars: number }[] = [];
  #first = 0;
  #chars = 0;
  #seen = 0;
  readonly #programs = new Map<string, string>();
  #programChars = 0;

  /** Takes one call line; `where` says where it was read. */
  add(line: Record<string, unknown>, where: string): void {
    this.#seen += 1;
    const call = this.#callOf(line, where);
    const chars = scriptJson(call).length;
    this.#calls.push({ call, chars });
    this.#chars += chars;
    while (this.#calls.length - this.#first > MAX_EXPLORER_CALLS || this.#chars > MAX_EXPLORER_CHARS) this.#dropOldest();
  }

  #dropOldest(): void {
    this.#chars -= this.#calls[this.#first]!.chars;
    this.#first += 1;
    // Let go of the calls left out once they are half the list, so each is moved at most once on average.
    if (this.#first * 2 > this.#calls.length) {
      this.#calls.splice(0, this.#first);
      this.#first = 0;
    }
  }

  /** The calls in time order (lines without a time last, in the order read), and the programs they name. */
  data(): ExplorerData {
    const keyed = this.#calls.slice(this.#first).map(({ call }, index) => ({ call, index, at: call.time === null ? Number.POSITIVE_INFINITY : Date.parse(call.time) }));
    keyed.sort((a, b) => (a.at === b.at ? a.index - b.index : (Number.isNaN(a.at) ? Infinity : a.at) - (Number.isNaN(b.at) ? Infinity : b.at)));
    const calls = keyed.map((entry) => entry.call);
    const used = new Set(calls.flatMap((call) => [call.program, ...call.attempts.map((attempt) => attempt.program)]).filter((key): key is string => key !== null));
    const programs: Record<string, string> = {};
    for (const [key, text] of this.#programs) if (used.has(key)) programs[key] = text;
    return { calls, programs, leftOut: this.#seen - calls.length };
  }

  #callOf(line: Record<string, unknown>, where: string): ExplorerCall {
    const code = typeof line.code === "string" ? this.#keep(line.code) : null;
    const attempts = Array.isArray(line.attempts) ? line.attempts.slice(-5).filter(isRecord).map((attempt) => this.#attemptOf(attempt)) : [];
    // The last attempt ran the line's code, though a record's code cut short no longer has the attempt's hash.
    const last = attempts.at(-1);
    if (last !== undefined && last.program === null && last.source !== null && code !== null) attempts[attempts.length - 1] = { ...last, program: code };
    const prompt = count(line.prompt_tokens);
    const completion = count(line.completion_tokens);
    return {
      id: text(line.call_id, 100) ?? "(no id)",
      source: shown(where, MAX_NAME_CHARS),
      parent: text(line.parent_call_id, 100),
      trace: text(line.trace_id, 100),
      depth: count(line.depth) ?? 0,
      time: typeof line.timestamp === "string" && !Number.isNaN(Date.parse(line.timestamp)) ? text(line.timestamp, 40) : null,
      role: text(line.role, MAX_NAME_CHARS) ?? "(unknown)",
      method: text(line.method, MAX_NAME_CHARS) ?? "(unknown)",
      durationMs: saneDuration(line.duration_ms),
      status: line.outcome_status === "ok" ? "ok" : "error",
      errorType: text(line.error_type, 40),
      errorMessage: text(line.error_message, MAX_MESSAGE_CHARS),
      args: json(line.args ?? []),
      kwargs: json(line.kwargs ?? {}),
      programSource: text(line.program_source, 20),
      model: text(line.model, MAX_NAME_CHARS),
      program: code,
      attempts,
      repairSkipped: text(line.repair_skipped, 20),
      tools: { count: count(line.tool_call_count) ?? 0, names: names(line.tool_names), errors: count(line.tool_error_count) ?? 0, failed: names(line.tool_failed_names) },
      knowledge: { sources: names(line.knowledge_sources), empty: names(line.knowledge_empty), failed: names(line.knowledge_failed), retrieved: count(line.retrieved_count) ?? 0 },
      effects: effectsOf(line.effects),
      toolCalls: Array.isArray(line.tool_calls) ? line.tool_calls.slice(0, MAX_TOOL_CALLS).filter(isRecord).map(toolCallOf) : null,
      onFailure: text(line.on_failure, 20),
      tokens: prompt === undefined && completion === undefined ? null : { prompt: prompt ?? 0, completion: completion ?? 0 },
    };
  }

  #attemptOf(attempt: Record<string, unknown>): ExplorerAttempt {
    // An attempt's program is on the line when it is not the line's code; else its hash names a
    // program kept already, found only if that program's text has that hash.
    const hash = attempt.program_hash;
    const program = typeof attempt.program === "string" ? this.#keep(attempt.program) : typeof hash === "string" && this.#programs.has(hash) ? hash : null;
    return {
      n: count(attempt.n) ?? 0,
      source: text(attempt.program_source, 20),
      model: text(attempt.model, MAX_NAME_CHARS),
      errorType: text(attempt.error_type, 40),
      errorMessage: text(attempt.error_message, MAX_MESSAGE_CHARS),
      toolCalls: count(attempt.tool_call_count) ?? 0,
      program,
    };
  }

  /**
   * Keeps a program's text once, under the hash records give it (its SHA-256's first 16 hex
   * digits), worked out from the text and never taken from the line; null once the programs'
   * budget is spent.
   */
  #keep(code: string): string | null {
    const key = programHash(code);
    if (this.#programs.has(key)) return key;
    const kept = terminalText(code.length > MAX_PROGRAM_CHARS ? `${code.slice(0, MAX_PROGRAM_CHARS)}\n…[cut: the program is ${code.length} characters]` : code);
    const chars = scriptJson(kept).length;
    if (this.#programChars + chars > MAX_PROGRAMS_CHARS) return null;
    this.#programChars += chars;
    this.#programs.set(key, kept);
    return key;
  }
}

function toolCallOf(call: Record<string, unknown>): ExplorerToolCall {
  return {
    tool: text(call.tool, MAX_NAME_CHARS) ?? "(unknown)",
    input: json(call.input ?? null),
    ok: call.ok === true,
    state: text(call.state, 20),
    error: text(call.error_message, MAX_MESSAGE_CHARS),
    url: text(call.url, 2_000),
    status: count(call.status) ?? null,
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function text(value: unknown, max: number): string | null {
  return typeof value === "string" ? shown(value, max) : null;
}

/** Text as the explorer shows it: cut to `max` characters, with what hides or reorders text made visible. */
function shown(value: string, max: number): string {
  return terminalText(value.length > max ? `${value.slice(0, max)}…` : value);
}

function names(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value.slice(0, MAX_NAMES).filter((name): name is string => typeof name === "string").map((name) => shown(name, MAX_NAME_CHARS));
}

function json(value: unknown): string {
  let textOf: string;
  try {
    textOf = JSON.stringify(value) ?? "null";
  } catch {
    textOf = "(not JSON)";
  }
  return terminalText(textOf.length > MAX_ARGS_CHARS ? `${textOf.slice(0, MAX_ARGS_CHARS)}…[cut: ${textOf.length} characters]` : textOf);
}

/**
 * JSON to put in a page's `<script type="application/json">`: `<` written `\u003c` where it
 * could end the element or open a comment (`</`, `<!`), and line and paragraph separators
 * escaped, so no text in it is read as anything but the JSON.
 */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/<(?=[/!])/g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

function effectsOf(value: unknown): Record<string, number> | null {
  if (!isRecord(value)) return null;
  const counts: Record<string, number> = {};
  for (const state of EFFECT_STATES) {
    const found = count(value[state]);
    if (found !== undefined && found > 0) counts[state] = found;
  }
  return Object.keys(counts).length === 0 ? null : counts;
}
