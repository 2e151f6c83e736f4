/**
 * What an application grants a program: tools, one named function at a time.
 * A tool has the shape of an AI SDK `tool()`, so those are accepted unchanged; a tool set (a
 * plain object of tools, or what `mcpTools` returns) appears one level down in programs.
 */
import { describeType, unknownNameMessage } from "../shared/index.ts";

/**
 * MCP's vocabulary for what a tool does. Hints only: improv assumes the worst where they are
 * absent, and a tool is read-only to improv only when `readOnlyHint` is `true` and
 * `destructiveHint` is not (see docs/tools.md, "Effects").
 */
export interface ToolAnnotations {
  readonly title?: string;
  /** The tool changes nothing in its environment. Default: false. */
  readonly readOnlyHint?: boolean;
  /** When not read-only: the tool may destroy or overwrite, rather than only add. Default: true. */
  readonly destructiveHint?: boolean;
  /** When not read-only: calling it again with the same input changes nothing more. It still changes the world. Default: false. */
  readonly idempotentHint?: boolean;
  /** The tool reaches entities outside (the web, other systems), not a closed domain. Default: true. */
  readonly openWorldHint?: boolean;
}

/** The hints of {@link ToolAnnotations}: true or false each. */
export const HINT_NAMES = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const;

/** The names {@link ToolAnnotations} may hold. */
const ANNOTATION_NAMES = ["title", ...HINT_NAMES] as const;

/**
 * The application's own annotations checked (never a server's: `mcpTools` reads those leniently):
 * a misspelled hint, or one such as "true" (a string), would otherwise be read as absent, and
 * the tool taken for a write. `where` names them in a `TypeError` (`tool "notes.append"`),
 * `field` one of their fields.
 */
export function checkAnnotations(annotations: object, where: string, field: (name: string) => string): void {
  const valid: readonly string[] = ANNOTATION_NAMES;
  for (const name of Object.keys(annotations)) if (!valid.includes(name)) throw new TypeError(unknownNameMessage(name, valid, where, "annotation"));
  for (const name of ANNOTATION_NAMES) {
    const value = (annotations as Record<string, unknown>)[name];
    const kind = name === "title" ? "string" : "boolean";
    if (value !== undefined && typeof value !== kind) throw new TypeError(`${field(name)} must be ${kind === "string" ? "a string" : "true or false"} (it is ${describeType(value)}).`);
  }
}

/** What `execute` is given beside the input. */
export interface ToolExecuteOptions {
  /** Aborts when the call that asked ends, for any reason, or when the tool's `timeoutMs` passes. */
  readonly signal: AbortSignal;
  /** The same signal, under the name AI SDK tools read. */
  readonly abortSignal: AbortSignal;
  /** The dynamic call whose program asked. */
  readonly callId: string;
  /** This tool call's own id (unique per call of the tool). */
  readonly toolCallId: string;
  /**
   * For a tool that may change the world: `<callId>:<n>`, the call's id and this write's place
   * among the call's writes (1, 2, …, over its attempts); a tool can use it to make its effect
   * once, and an undo to find an effect whose outcome was unknown.
   */
  readonly idempotencyKey?: string | undefined;
  /** Always empty: a program's tool call has no chat messages (AI SDK tools may read the field). */
  readonly messages: never[];
  /** Always an empty object (AI SDK tools may read the field). */
  readonly context: {};
}

/** What `revert` is given beside the input and the result. */
export interface ToolRevertOptions {
  /** Aborts when the revert's time (the tool's `timeoutMs`) is up. The call's own signal does not abort it: an undo runs to its end. */
  readonly signal: AbortSignal;
  /** The dynamic call whose program made the write. */
  readonly callId: string;
  /** The id `execute` was given for the write. */
  readonly toolCallId: string;
  /** The key `execute` was given (`<callId>:<n>`): how an undo finds an effect whose outcome was unknown. */
  readonly idempotencyKey: string;
}

/**
 * One tool. `inputSchema` is a Standard Schema (an object with a `~standard` property: zod 4,
 * valibot, arktype), an AI SDK schema (`jsonSchema()`, `zodSchema()`), or a plain JSON Schema
 * object. `execute` runs in the host process with the input once it passed the schema; a tool
 * without one cannot be granted (a `TypeError` at construction).
 */
export interface Tool<Input = any, Output = unknown> {
  /** What the tool does, for the prompt. An AI SDK tool's description function is asked once, at construction. */
  readonly description?: string | ((options: { context: any }) => string) | undefined;
  readonly inputSchema: unknown;
  execute?(input: Input, options: ToolExecuteOptions): Output | PromiseLike<Output>;
  /**
   * Undoes one effect of `execute` (a tool that may change the world), when a call that made it
   * fails and the agent's `onFailure` asks for it. `result` is what `execute` returned, or
   * `undefined` when its outcome is unknown (it timed out, or the call was cut off): find the
   * effect by `options.idempotencyKey` then. Runs in the host within the tool's `timeoutMs`, at
   * most once per effect; its return value is ignored, a throw is recorded as `revert_failed`.
   */
  revert?(input: Input, result: Output | undefined, options: ToolRevertOptions): unknown;
  readonly annotations?: ToolAnnotations | undefined;
  /** Longest wait for one call of the tool. Default: 30000. @unit milliseconds */
  readonly timeoutMs?: number | undefined;
  /** What the tool returns, for the prompt's declaration (a schema of any kind `inputSchema` takes). */
  readonly outputSchema?: unknown;
}

/**
 * A tool with the application's hints about what it does (MCP's vocabulary), over any it had:
 * `annotate(tool({ … }), { readOnlyHint: true })`. The AI SDK's `tool()` has no field for them,
 * and a tool without hints counts as one that may change the world (asked about by
 * `toolApproval`, never run again on its own). The tool itself is not changed.
 */
export function annotate<T extends object>(tool: T, annotations: ToolAnnotations): T & { readonly annotations: ToolAnnotations } {
  if (typeof annotations !== "object" || annotations === null) throw new TypeError("annotate(tool, annotations): annotations must be an object such as { readOnlyHint: true }.");
  checkAnnotations(annotations, "annotate(tool, annotations)", (name) => `annotate(tool, annotations): ${name}`);
  const own = (tool as { annotations?: unknown }).annotations;
  // Read name by name, so hints behind getters (a class's) are kept too.
  const given = Object.fromEntries(ANNOTATION_NAMES.flatMap((name) => (annotations[name] === undefined ? [] : [[name, annotations[name]]])));
  return { ...tool, annotations: { ...(typeof own === "object" && own !== null ? own : {}), ...given } };
}

/** Tools under one name: `tools.set.tool(input)` in programs. */
export interface ToolSet {
  readonly [name: string]: Tool;
}

/** The `tools` agent option: tools, and tool sets one level down. */
export interface Tools {
  readonly [name: string]: Tool | ToolSet;
}

/** How long a tool call may take when the tool does not say. @unit ms */
export const DEFAULT_TOOL_TIMEOUT_MS = 30_000;

// Tools whose description comes from a server (MCP): untrusted text, fenced in the prompt. An
// enumerable symbol, so a copy the application spreads (`{ ...set.append, execute }`) keeps it.
const FROM_SERVER = Symbol("improv.serverTool");

/** Marks a tool (before it is frozen) whose description and schema come from a server the application does not write. */
export function markServerTool<T extends Tool>(tool: T): T {
  Object.defineProperty(tool, FROM_SERVER, { value: true, enumerable: true });
  return tool;
}

/** Whether a tool's description comes from a server (see {@link markServerTool}). */
export function isServerTool(tool: Tool): boolean {
  try {
    return (tool as { [FROM_SERVER]?: unknown })[FROM_SERVER] === true;
  } catch {
    return true;
  }
}
