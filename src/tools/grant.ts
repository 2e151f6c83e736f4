/**
 * The `tools` agent option, read once at construction: every tool checked (a `TypeError` naming
 * the tool and what is wrong), its schemas read, its effect decided, and a fingerprint of the
 * whole grant for the key of kept programs.
 */
import { createHash } from "node:crypto";
import { stringify } from "safe-stable-stringify";
import { describeError } from "../shared/index.ts";
import { readSchema, SchemaProblem, type ReadSchema } from "./schema.ts";
import { checkAnnotations, DEFAULT_TOOL_TIMEOUT_MS, isServerTool, type Tool, type ToolAnnotations } from "./tool.ts";

/** What a tool call may do to the world: `read` is read-only (safe to repeat), `write` may change something (see {@link effectOf}). */
export type ToolEffect = "read" | "write";

/** One granted tool, as calls use it. */
export interface GrantedTool {
  /** `weather`, or `notes.append` for a tool in a set. */
  readonly path: string;
  readonly tool: Tool;
  readonly description: string;
  readonly input: ReadSchema;
  /** The output schema as JSON Schema, when given and it can say. */
  readonly outputJsonSchema: object | undefined;
  readonly effect: ToolEffect;
  readonly timeoutMs: number;
  /** The tool has a `revert`: its effects can be undone. */
  readonly undoable: boolean;
  /** The description comes from a server, not the application. */
  readonly untrusted: boolean;
}

/** Every tool an agent grants its programs. */
export interface GrantedTools {
  readonly byPath: ReadonlyMap<string, GrantedTool>;
  /** Every tool's name in programs, in grant order. */
  readonly names: readonly string[];
  /** A hash of the names, schemas, descriptions and effects: part of a kept program's key. Empty when none are granted. */
  readonly fingerprint: string;
}

/** Most tools one agent may grant. */
export const MAX_TOOLS = 1_000;
const MAX_NAME_LENGTH = 64;
const MAX_DESCRIPTION_CHARS = 2_000;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
/** Names a program could not call as `tools.name(…)` safely, or that `await` would mistake for a promise. */
const REFUSED_NAMES = new Set(["__proto__", "constructor", "prototype", "then", "toString", "valueOf", "toJSON"]);

export const NO_TOOLS: GrantedTools = Object.freeze({ byPath: new Map(), names: Object.freeze([]), fingerprint: "" });

/** Reads the `tools` option; throws a `TypeError` naming the tool and what is wrong. */
export function grantTools(given: unknown): GrantedTools {
  if (given === undefined) return NO_TOOLS;
  if (!isPlainRecord(given)) throw new TypeError('Option "tools" must be an object of tools (and tool sets) by name.');
  const byPath = new Map<string, GrantedTool>();
  for (const [name, value] of Object.entries(given)) {
    checkName(name, name);
    if (isToolLike(value)) {
      byPath.set(name, grantOne(name, value));
      continue;
    }
    if (!isPlainRecord(value)) throw new TypeError(`Tool "${name}" must be a tool ({ description, inputSchema, execute }) or a tool set (an object of tools).`);
    for (const [inner, tool] of Object.entries(value)) {
      const path = `${name}.${inner}`;
      checkName(inner, path);
      if (!isToolLike(tool)) {
        const nested = isPlainRecord(tool) ? " Tool sets go one level down only." : "";
        throw new TypeError(`Tool "${path}" must be a tool: an object with an execute function and an inputSchema.${nested}`);
      }
      byPath.set(path, grantOne(path, tool));
    }
  }
  if (byPath.size > MAX_TOOLS) throw new TypeError(`Option "tools" grants ${byPath.size} tools; at most ${MAX_TOOLS} are allowed.`);
  if (byPath.size === 0) return NO_TOOLS;
  return Object.freeze({ byPath, names: Object.freeze([...byPath.keys()]), fingerprint: fingerprintOf(byPath) });
}

function checkName(name: string, path: string): void {
  if (!IDENTIFIER.test(name) || name.length > MAX_NAME_LENGTH) {
    throw new TypeError(`Tool name "${path}" must be an identifier (letters, digits, _ and $, not starting with a digit) of at most ${MAX_NAME_LENGTH} characters.`);
  }
  if (REFUSED_NAMES.has(name)) throw new TypeError(`Tool name "${path}" is not allowed: programs could not call it safely. Choose another name.`);
}

function grantOne(path: string, tool: Tool): GrantedTool {
  const { annotations, timeoutMs, outputSchema } = tool;
  if (typeof tool.execute !== "function") throw new TypeError(`Tool "${path}" has no execute function: only tools that run in this process can be granted.`);
  if (tool.revert !== undefined && typeof tool.revert !== "function") throw new TypeError(`Tool "${path}": revert must be a function (input, result, { signal, callId, toolCallId, idempotencyKey }) that undoes one call's effect.`);
  const description = describe(path, tool.description);
  if (annotations !== undefined && (typeof annotations !== "object" || annotations === null)) throw new TypeError(`Tool "${path}": annotations must be an object such as { readOnlyHint: true }.`);
  if (annotations !== undefined) checkAnnotations(annotations, `tool "${path}"`, (name) => `Tool "${path}": annotations.${name}`);
  if (timeoutMs !== undefined && (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 2 ** 31 - 1)) {
    throw new TypeError(`Tool "${path}": timeoutMs must be a whole number of milliseconds from 1 to ${2 ** 31 - 1}.`);
  }
  let input: ReadSchema;
  try {
    input = readSchema(tool.inputSchema);
  } catch (error) {
    if (error instanceof SchemaProblem) throw new TypeError(`Tool "${path}": inputSchema ${error.message}.`);
    throw error;
  }
  let outputJsonSchema: object | undefined;
  if (outputSchema !== undefined) {
    try {
      outputJsonSchema = readSchema(outputSchema).jsonSchema;
    } catch (error) {
      if (error instanceof SchemaProblem) throw new TypeError(`Tool "${path}": outputSchema ${error.message}.`);
      throw error;
    }
  }
  return Object.freeze({
    path,
    tool,
    description: (description ?? "").slice(0, MAX_DESCRIPTION_CHARS),
    input,
    outputJsonSchema,
    effect: effectOf(annotations),
    timeoutMs: timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
    undoable: typeof tool.revert === "function",
    untrusted: isServerTool(tool),
  });
}

/** A tool's description as text: an AI SDK description function is asked once, here. */
function describe(path: string, description: Tool["description"]): string | undefined {
  if (description === undefined || typeof description === "string") return description;
  if (typeof description === "function") {
    let text: unknown;
    try {
      text = description({ context: {} });
    } catch (error) {
      throw new TypeError(`Tool "${path}": its description function threw (${describeError(error)}).`);
    }
    if (typeof text === "string") return text;
  }
  throw new TypeError(`Tool "${path}": description must be a string.`);
}

/**
 * What a tool's calls may do, from the hints improv trusts: a tool's `annotations` are the
 * application's own (`mcpTools` keeps a server's there only when the application trusts it).
 * Only a tool that says it is read-only, and does not also say it is destructive, is a `read`:
 * improv may run it again (a repair, a re-run after a store conflict). An idempotent tool is not
 * read-only: repeating it with the same input changes nothing more, but a repair runs another
 * program, perhaps with other input. Every other tool is a `write` (MCP's defaults assume the
 * worst): `toolApproval` is asked before each of its calls, and improv never repeats it.
 */
export function effectOf(annotations: ToolAnnotations | undefined): ToolEffect {
  return annotations?.readOnlyHint === true && annotations.destructiveHint !== true ? "read" : "write";
}

function fingerprintOf(byPath: ReadonlyMap<string, GrantedTool>): string {
  const hash = createHash("sha256");
  for (const granted of byPath.values()) {
    hash.update(stringify([granted.path, granted.description, granted.effect, granted.input.jsonSchema ?? null, granted.outputJsonSchema ?? null]) ?? "");
    hash.update("\u0000");
  }
  return hash.digest("hex").slice(0, 12);
}

/**
 * Whether a value in `tools` is a tool rather than a tool set: it has an `execute` function, or
 * it looks like a tool that lacks one (so the error says so). An object whose values are all
 * tools is a set, even when one of them is named `execute` or `inputSchema`.
 */
function isToolLike(value: unknown): value is Tool {
  if (typeof value !== "object" || value === null) return false;
  if (typeof (value as { execute?: unknown }).execute === "function") return true;
  const values = Object.values(value);
  if (values.length > 0 && values.every((item) => typeof item === "object" && item !== null && typeof (item as { execute?: unknown }).execute === "function")) return false;
  return "execute" in value || "inputSchema" in value;
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}
