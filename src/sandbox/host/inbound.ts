/**
 * Everything that arrives from the sandbox process is read here, and only here. Values come
 * as encoded text and are measured against their limits before anything is built from them
 * (`../value-size.ts`), so no record, log line, prompt or outcome is ever made from a value
 * whose JSON would be larger than its limit, however cheaply the program built it. Strings
 * (console lines, error names and messages) are bounded again, and types checked: the
 * sandbox's own runtime bounds them too, but the host trusts nothing that crossed.
 */
import type { ErrorType } from "../../shared/index.ts";
import { SANDBOX_LIMITS } from "../limits.ts";
import type { DelegateRequest, IsolateResult, RunReport, ToolRequest } from "../protocol.ts";
import { decodeValue, MalformedValueError, type StandIn } from "../value-codec.ts";

export { StandIn } from "../value-codec.ts";
import { ValueTooLargeError } from "../value-size.ts";

/** How the program ended, with its value and context decoded. */
export type ProgramResult =
  | {
      readonly status: "ok";
      readonly value: unknown;
      /** The value as the sandbox encoded it (within the result limit), which is what kept values hold. */
      readonly valueText: string;
      readonly context: Record<string, unknown>;
      /** The context as the sandbox encoded it. */
      readonly contextText: string;
      readonly console: string[];
    }
  | {
      readonly status: "error";
      readonly errorType: ErrorType;
      readonly message: string;
      readonly console: string[];
      /** Set when the failure was not the program's doing (the sandbox process was lost), so calling again may work. */
      readonly retriable?: boolean;
      /** The name of what the program threw (`TypeError`, …), when it threw something. */
      readonly thrownName?: string;
      /** Where in the program as run the error was made, when known. 1-based. */
      readonly location?: ProgramLocation;
    };

/** A line and column in a program's text, 1-based. */
export interface ProgramLocation {
  readonly line: number;
  readonly column: number;
}

/** Why limits count what they count, in every message that names one. */
const SHARED_PARTS = "as JSON (shared parts count each time they appear)";

/** The messages that name a value limit, in one place. */
export const LIMIT_MESSAGES = {
  result: `The program's return value is larger than the ${SANDBOX_LIMITS.maxResultChars}-character result limit ${SHARED_PARTS}. Return a smaller value.`,
  context: `The program left context larger than the ${SANDBOX_LIMITS.maxResultChars}-character limit ${SHARED_PARTS}. Keep less in context.`,
  delegateArguments: (role: string, method: string) =>
    `The arguments to ${role}.${method}() are larger than the ${SANDBOX_LIMITS.maxDelegateArgumentChars}-character limit for delegate arguments (shared parts count each time they appear). Pass less data.`,
  delegateOptions: `delegate options are larger than the ${SANDBOX_LIMITS.maxDelegateOptionChars}-character limit ${SHARED_PARTS}. Pass a small plain object.`,
} as const;

/** Error types a program's own run may end with inside the isolate. */
const ISOLATE_ERROR_TYPES: ReadonlySet<string> = new Set<ErrorType>(["invalid_code", "execution", "memory_limit", "budget_exceeded", "tool"]);

const CONSOLE_MARKER = "… console output truncated";

/** A sandbox process's report on a run, read into a {@link ProgramResult}. */
export function readRunReport(report: RunReport): ProgramResult {
  if (report.kind === "resync") {
    return { status: "error", errorType: "execution", message: "The sandbox could not rebuild the agent's history mirror. Call again.", console: [], retriable: true };
  }
  if (report.kind === "failed") {
    return { status: "error", errorType: report.errorType, message: report.message, console: [], ...(report.retriable ? { retriable: true } : {}) };
  }
  return readIsolateResult(report.result);
}

function readIsolateResult(result: IsolateResult): ProgramResult {
  const console = readConsole(result.console);
  if (result.status === "error") {
    if (result.limit === "result" || result.limit === "context") return { status: "error", errorType: "execution", message: LIMIT_MESSAGES[result.limit], console };
    const errorType = ISOLATE_ERROR_TYPES.has(result.errorType) ? result.errorType : "execution";
    const name = bounded(result.name, 200);
    const message = bounded(result.message, SANDBOX_LIMITS.maxErrorMessageChars + 100);
    const location = readLocation(result.location);
    return {
      status: "error",
      errorType,
      message: name === "Thrown" ? message : `${name}: ${message}`,
      console,
      ...(name === "Thrown" ? {} : { thrownName: name }),
      ...(location === undefined ? {} : { location }),
      // Only a tool's failure says whether it may pass; nothing else a program ends with does.
      ...(errorType === "tool" && result.retriable === true ? { retriable: true } : {}),
    };
  }
  let value: unknown;
  try {
    value = decodeValue(result.value, SANDBOX_LIMITS.maxResultChars);
  } catch (error) {
    return unreadable(error, LIMIT_MESSAGES.result, "result", console);
  }
  let context: unknown;
  try {
    context = decodeValue(result.context, SANDBOX_LIMITS.maxResultChars);
  } catch (error) {
    return unreadable(error, LIMIT_MESSAGES.context, "context", console);
  }
  if (typeof context !== "object" || context === null || Array.isArray(context)) {
    return unreadable(new MalformedValueError("The sandbox sent back a context that is not an object."), LIMIT_MESSAGES.context, "context", console);
  }
  return { status: "ok", value, valueText: result.value, context: context as Record<string, unknown>, contextText: result.context, console };
}

/**
 * A program's result with its value and context rewritten as the sandbox encoded them (by
 * `rewrite`, which takes out what must not be kept: see `egress/at-rest.ts`) and read again under
 * the same limits, with its console lines and error message rewritten by `rewriteText`. A value or
 * context that outgrows its limit once rewritten fails the run, as one too large to return would.
 */
export function rewriteResult(result: ProgramResult, rewrite: (encoded: string) => string, rewriteText: (text: string) => string, why: string): ProgramResult {
  const console = result.console.map(rewriteText);
  if (result.status === "error") return { ...result, message: rewriteText(result.message), console };
  const valueText = rewrite(result.valueText);
  const contextText = rewrite(result.contextText);
  try {
    const value = valueText === result.valueText ? result.value : decodeValue(valueText, SANDBOX_LIMITS.maxResultChars);
    const context = contextText === result.contextText ? result.context : (decodeValue(contextText, SANDBOX_LIMITS.maxResultChars) as Record<string, unknown>);
    return { ...result, value, valueText, context, contextText, console };
  } catch {
    const message = `The program's value or context, ${why}, is larger than the ${SANDBOX_LIMITS.maxResultChars}-character result limit. Return and keep less.`;
    return { status: "error", errorType: "execution", message, console };
  }
}

function unreadable(error: unknown, tooLarge: string, what: string, console: string[]): ProgramResult {
  const message = error instanceof ValueTooLargeError ? tooLarge : `The program's ${what} could not be decoded: ${(error as Error).message}`;
  return { status: "error", errorType: "execution", message, console };
}

/** A delegate request's arguments and options, or the reason they are refused (an `invalid_input` outcome). */
export type DelegateInput =
  | { readonly ok: true; readonly args: unknown[]; readonly kwargs: Record<string, unknown> | undefined; readonly options: Record<string, unknown> | undefined }
  | { readonly ok: false; readonly message: string };

/** Reads the arguments and options of a program's `delegate(role, options).method(...args)`. */
export function readDelegateInput(request: DelegateRequest): DelegateInput {
  const { role, method } = request;
  if (request.args === null) return { ok: false, message: LIMIT_MESSAGES.delegateArguments(role, method) };
  let args: unknown;
  try {
    args = decodeValue(request.args, SANDBOX_LIMITS.maxDelegateArgumentChars);
  } catch (error) {
    return { ok: false, message: error instanceof ValueTooLargeError ? LIMIT_MESSAGES.delegateArguments(role, method) : `The arguments to ${role}.${method}() could not be read.` };
  }
  if (!Array.isArray(args)) return { ok: false, message: `The arguments to ${role}.${method}() must be a list.` };
  let kwargs: unknown;
  if (request.kwargs !== null) {
    try {
      kwargs = decodeValue(request.kwargs, SANDBOX_LIMITS.maxDelegateArgumentChars);
    } catch (error) {
      return { ok: false, message: error instanceof ValueTooLargeError ? LIMIT_MESSAGES.delegateArguments(role, method) : `The named arguments to ${role}.${method}() could not be read.` };
    }
    if (typeof kwargs !== "object" || kwargs === null || Array.isArray(kwargs)) return { ok: false, message: `The named arguments to ${role}.${method}() must be an object.` };
  }
  const named = kwargs as Record<string, unknown> | undefined;
  if (request.optionsTooLarge) return { ok: false, message: LIMIT_MESSAGES.delegateOptions };
  if (request.options === null) return { ok: true, args, kwargs: named, options: undefined };
  let options: unknown;
  try {
    options = decodeValue(request.options, SANDBOX_LIMITS.maxDelegateOptionChars);
  } catch (error) {
    return { ok: false, message: error instanceof ValueTooLargeError ? LIMIT_MESSAGES.delegateOptions : "delegate options could not be read." };
  }
  if (typeof options !== "object" || options === null || Array.isArray(options)) return { ok: false, message: "delegate options must be an object." };
  return { ok: true, args, kwargs: named, options: options as Record<string, unknown> };
}

/** The options of an agent a program handed back (as its `delegate` encoded them): undefined for none, null when they cannot be read. */
export function readHandedBackOptions(text: string | null): Record<string, unknown> | undefined | null {
  if (text === null) return undefined;
  try {
    const options = decodeValue(text, SANDBOX_LIMITS.maxDelegateOptionChars);
    return typeof options === "object" && options !== null && !Array.isArray(options) ? (options as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** A tool call's input from a program: decoded within its limit, or why it cannot be read. */
/**
 * A tool's input as the program passed it; `markStandIns` (the default) keeps what the sandbox
 * could only write as text as {@link StandIn}s, so that the input's copy refuses them; without it,
 * they are their text (for the record of an input refused).
 */
export function readToolInput(request: ToolRequest, markStandIns = true): { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly message: string } {
  const tooLarge = `The input of tools.${request.tool}() is larger than the ${SANDBOX_LIMITS.maxToolInputChars}-character limit for a tool's input ${SHARED_PARTS}. Pass less data.`;
  if (request.input === null) return { ok: false, message: tooLarge };
  try {
    return { ok: true, value: decodeValue(request.input, SANDBOX_LIMITS.maxToolInputChars, { markStandIns }) };
  } catch (error) {
    return { ok: false, message: error instanceof ValueTooLargeError ? tooLarge : `The input of tools.${request.tool}() could not be read.` };
  }
}

function readConsole(lines: unknown): string[] {
  if (!Array.isArray(lines)) return [];
  const kept: string[] = [];
  let chars = 0;
  for (const line of lines) {
    if (typeof line !== "string") continue;
    if (kept.length > SANDBOX_LIMITS.maxConsoleLines || chars + line.length > SANDBOX_LIMITS.maxConsoleChars + CONSOLE_MARKER.length) {
      kept.push(CONSOLE_MARKER);
      break;
    }
    chars += line.length;
    kept.push(line);
  }
  return kept;
}

function readLocation(location: unknown): ProgramLocation | undefined {
  if (typeof location !== "object" || location === null) return undefined;
  const { line, column } = location as Record<string, unknown>;
  const valid = (n: unknown): n is number => typeof n === "number" && Number.isSafeInteger(n) && n >= 1;
  return valid(line) && valid(column) ? { line, column } : undefined;
}

function bounded(text: unknown, limit: number): string {
  if (typeof text !== "string") return "";
  return text.length > limit ? `${text.slice(0, limit)}… [truncated]` : text;
}

/**
 * A kept value's encoded text (kept in memory or in a store, where it could have been changed)
 * read back into a fresh copy, measured against the result limit like any result.
 */
export function readKeptValue(text: string): unknown {
  return decodeValue(text, SANDBOX_LIMITS.maxResultChars);
}
