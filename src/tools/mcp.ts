/**
 * An MCP server's tools as a tool set. `mcpTools` connects with the official
 * MCP TypeScript SDK, an optional peer dependency loaded only when it is called, lists the
 * server's tools and returns one `Tool` per tool, each calling `tools/call` on the server.
 */
import { callTool } from "./mcp-call.ts";
import { bounded, causeText, connectionTo, endpointFor, isMissingSdk, McpConnectionError, type Connection, type McpClient, type McpListedTool, type McpServer, type Session } from "./mcp-connection.ts";
import { describeType } from "../shared/index.ts";
import { checkAnnotations, HINT_NAMES, markServerTool, type Tool, type ToolAnnotations, type ToolExecuteOptions, type ToolRevertOptions, type ToolSet } from "./tool.ts";

export { McpConnectionError } from "./mcp-connection.ts";
export type { McpClient, McpHttpServer, McpListedTool, McpRequestOptions, McpServer, McpStdioServer } from "./mcp-connection.ts";

/** How `mcpTools` treats the server's tools. */
export interface McpToolsOptions {
  /**
   * The application's own hints for the server's tools, trusted as any tool's `annotations`,
   * over the server's field by field. Keyed by the server's name for the tool or by its name in
   * the set (the latter wins).
   */
  readonly annotations?: Readonly<Record<string, ToolAnnotations>> | undefined;
  /**
   * Whether the server's own annotations are trusted as if the application wrote them: `true`
   * for every tool of the server, or by tool (keyed as `annotations` is). Default: none. An
   * untrusted server's hints are only its claims (the tool's `serverAnnotations`): they never
   * make a tool read-only, and the prompt does not show them.
   */
  readonly trustAnnotations?: boolean | Readonly<Record<string, boolean>> | undefined;
  /**
   * Undoes for the server's tools, keyed as `annotations` is: each becomes the tool's
   * `revert`, given the input, what the tool returned (undefined when its outcome is unknown) and
   * the revert options, with `callTool(name, args)` to call another tool of the same server (a
   * `cancel_order` for a `place_order`, say).
   */
  readonly reverts?: Readonly<Record<string, McpRevert>> | undefined;
  /** Every tool's `timeoutMs`; also the SDK's own limit for the request, 60 s when not given. @unit milliseconds */
  readonly timeoutMs?: number | undefined;
  /** Longest wait to connect (or reconnect) and for each page of the tool list. Default: 30000. @unit milliseconds */
  readonly connectTimeoutMs?: number | undefined;
}

/** An undo for a server's tool: see {@link McpToolsOptions.reverts}. */
export type McpRevert = (input: any, result: unknown, options: McpRevertOptions) => unknown;

/** What an MCP tool's undo is given: a tool's revert options, and a way to call the same server. */
export interface McpRevertOptions extends ToolRevertOptions {
  /** Calls a tool of the same server by its server name, within the revert's signal and the set's `timeoutMs`; resolves with what it returns, as a tool call would. */
  callTool(name: string, args?: Record<string, unknown>): Promise<unknown>;
}

/**
 * The server's tools, one enumerable property each (so the set's keys are exactly its tools),
 * and `close()`, not enumerable, which ends the connection `mcpTools` opened (a `Client` the
 * application passed stays open). Closing twice is safe.
 */
export type McpToolSet = McpToolsByName & { readonly close: () => Promise<void> };

/** The tools of a set by name. */
export interface McpToolsByName extends ToolSet {
  readonly [name: string]: McpTool;
}

/** One tool of a server, as `mcpTools` makes it. */
export interface McpTool extends Tool {
  /**
   * The hints the application trusts: its own (`options.annotations`), over the server's when
   * the application trusts the server (`options.trustAnnotations`); undefined when none.
   */
  readonly annotations?: ToolAnnotations | undefined;
  /** What the server says of the tool (its title and hints, read as given): its claims, whether trusted or not. */
  readonly serverAnnotations?: ToolAnnotations | undefined;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;
const MAX_DESCRIPTION_CHARS = 1_000;
const MAX_PAGES = 1_000;
const MAX_TOOL_NAME_CHARS = 64;
const MAX_TITLE_CHARS = 200;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
// Names the set cannot hold: its own `close`, and those the `tools` option refuses (grant.ts).
const UNUSABLE_NAMES = new Set(["close", "__proto__", "constructor", "prototype", "then", "toString", "valueOf", "toJSON"]);

/**
 * Connects to an MCP server and returns its tools as a tool set (all pages of `tools/list`).
 * Rejects with an {@link McpConnectionError} naming the server and the cause when it cannot be
 * reached. Each tool calls `tools/call` with the call's signal; a result with `isError` throws
 * an `Error` with the result's text; `structuredContent` is returned when present, else the
 * text content (joined with newlines), else the content items. When the server process died or
 * the HTTP connection is gone, the next call reconnects once (a call in flight then fails and
 * is not sent again: it may have had an effect); if that fails it throws an McpConnectionError.
 */
export async function mcpTools(server: McpServer, options: McpToolsOptions = {}): Promise<McpToolSet> {
  checkOptions(options);
  const endpoint = endpointFor(server, options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS);
  let first: Session;
  try {
    first = await endpoint.open();
  } catch (error) {
    if (isMissingSdk(error)) throw error;
    throw new McpConnectionError(`Could not connect to MCP server ${endpoint.name}: ${causeText(error)}`, endpoint.name, { cause: error });
  }
  const connection = connectionTo(endpoint, first);
  let listed: readonly McpListedTool[];
  try {
    listed = await listAllTools(first.client, options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS);
  } catch (error) {
    await connection.close().catch(() => undefined);
    throw new Error(`Could not list the tools of MCP server ${endpoint.name}: ${causeText(error)}`, { cause: error });
  }
  return toolSet(listed, connection, options);
}

function checkOptions(options: McpToolsOptions): void {
  for (const key of ["timeoutMs", "connectTimeoutMs"] as const) {
    const value = options[key];
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 1 || value > 2 ** 31 - 1)) {
      throw new TypeError(`mcpTools: ${key} must be a whole number of milliseconds from 1 to ${2 ** 31 - 1}.`);
    }
  }
  const { annotations, trustAnnotations, reverts } = options;
  if (reverts !== undefined) {
    if (!isRecord(reverts)) throw new TypeError("mcpTools: reverts must be an object of functions by tool name.");
    for (const [name, revert] of Object.entries(reverts)) {
      if (typeof revert !== "function") throw new TypeError(`mcpTools: reverts.${name} must be a function (input, result, options) that undoes one call of the tool (it is ${describeType(revert)}).`);
    }
  }
  if (annotations !== undefined) {
    if (!isRecord(annotations)) throw new TypeError("mcpTools: annotations must be an object of hints by tool name.");
    for (const [name, hints] of Object.entries(annotations)) {
      if (!isRecord(hints)) throw new TypeError(`mcpTools: annotations.${name} must be an object of hints such as { readOnlyHint: true }.`);
      checkAnnotations(hints, `mcpTools annotations.${name}`, (field) => `mcpTools: annotations.${name}.${field}`);
    }
  }
  if (trustAnnotations !== undefined && typeof trustAnnotations !== "boolean") {
    if (!isRecord(trustAnnotations)) throw new TypeError("mcpTools: trustAnnotations must be true, false, or an object of true/false by tool name.");
    for (const [name, value] of Object.entries(trustAnnotations)) {
      if (typeof value !== "boolean") throw new TypeError(`mcpTools: trustAnnotations.${name} must be true or false (it is ${describeType(value)}).`);
    }
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

async function listAllTools(client: McpClient, timeoutMs: number): Promise<McpListedTool[]> {
  const tools: McpListedTool[] = [];
  const cursors = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: timeoutMs });
    if (!Array.isArray(result?.tools)) throw new Error("its tools/list answer has no tools array");
    tools.push(...result.tools.filter((tool): tool is McpListedTool => typeof tool?.name === "string"));
    cursor = typeof result.nextCursor === "string" ? result.nextCursor : undefined;
    if (cursor === undefined) return tools;
    if (cursors.has(cursor)) throw new Error(`its tools/list gave the cursor ${JSON.stringify(bounded(cursor, 100))} twice`);
    cursors.add(cursor);
  }
  throw new Error(`its tools/list has more than ${MAX_PAGES} pages`);
}

function toolSet(listed: readonly McpListedTool[], connection: Connection, options: McpToolsOptions): McpToolSet {
  const set: Record<string, McpTool> = Object.create(null);
  const byName = new Map(listed.map((tool) => [tool.name, tool]));
  for (const [name, original] of identifierNames(listed.map((tool) => tool.name))) {
    const listing = byName.get(original) as McpListedTool;
    Object.defineProperty(set, name, { value: toolFor(listing, name, connection, options), enumerable: true });
  }
  Object.defineProperty(set, "close", { value: connection.close, enumerable: false });
  return Object.freeze(set) as McpToolSet;
}

/**
 * A name programs can call for each server name, mapped to the server's name. A name that is
 * not an identifier has its other characters replaced with `_`; a name that then collides with
 * another, is empty, too long or unusable is left out.
 */
function identifierNames(names: readonly string[]): Map<string, string> {
  const groups = new Map<string, string[]>();
  for (const name of names) {
    const id = toIdentifier(name);
    if (id === "" || id.length > MAX_TOOL_NAME_CHARS || UNUSABLE_NAMES.has(id)) continue;
    groups.set(id, [...(groups.get(id) ?? []), name]);
  }
  const chosen = new Map<string, string>();
  for (const [id, members] of groups) {
    // A name that is an identifier already keeps it over a name made into the same one.
    const exact = members.filter((name) => name === id);
    if (exact.length === 1) chosen.set(id, id);
    else if (exact.length === 0 && members.length === 1) chosen.set(id, members[0] as string);
  }
  return chosen;
}

function toIdentifier(name: string): string {
  if (IDENTIFIER.test(name)) return name;
  const replaced = name.replace(/[^\w$]/g, "_");
  return /^\d/.test(replaced) ? `_${replaced}` : replaced;
}

function toolFor(listing: McpListedTool, name: string, connection: Connection, options: McpToolsOptions): McpTool {
  const timeoutMs = options.timeoutMs;
  const serverAnnotations = annotationsFor([listing.annotations]);
  const own = (record: Readonly<Record<string, unknown>> | undefined, key: string) => (record !== undefined && typeof record === "object" && Object.hasOwn(record, key) ? record[key] : undefined);
  // The set's name wins over the server's name, as for the application's own hints.
  const trustedValue = typeof options.trustAnnotations === "boolean" ? options.trustAnnotations : (own(options.trustAnnotations, name) ?? own(options.trustAnnotations, listing.name));
  const annotations = annotationsFor([trustedValue === true ? listing.annotations : undefined, own(options.annotations, listing.name), own(options.annotations, name)]);
  const outputSchema = plainObject(listing.outputSchema);
  const revert = (own(options.reverts, name) ?? own(options.reverts, listing.name)) as McpRevert | undefined;
  const tool: McpTool = {
    description: bounded(typeof listing.description === "string" ? listing.description : "", MAX_DESCRIPTION_CHARS),
    inputSchema: plainObject(listing.inputSchema) ?? { type: "object" },
    ...(outputSchema === undefined ? {} : { outputSchema }),
    ...(annotations === undefined ? {} : { annotations }),
    ...(serverAnnotations === undefined ? {} : { serverAnnotations }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    execute: (input: unknown, callOptions?: Partial<ToolExecuteOptions>) => callTool({ connection, tool: listing.name, args: (input ?? {}) as Record<string, unknown>, signal: callOptions?.signal ?? callOptions?.abortSignal, timeoutMs }),
    ...(revert === undefined
      ? {}
      : {
          revert: (input: unknown, result: unknown, revertOptions: ToolRevertOptions) =>
            revert(input, result, { ...revertOptions, callTool: (other: string, args: Record<string, unknown> = {}) => callTool({ connection, tool: other, args, signal: revertOptions.signal, timeoutMs }) }),
        }),
  };
  return Object.freeze(markServerTool(tool));
}

/** Title and hints from each source in turn, field by field (the later wins); undefined when none says anything. */
function annotationsFor(sources: readonly unknown[]): ToolAnnotations | undefined {
  const merged: { -readonly [K in keyof ToolAnnotations]: ToolAnnotations[K] } = {};
  for (const source of sources) {
    if (typeof source !== "object" || source === null) continue;
    const fields = source as Record<string, unknown>;
    if (typeof fields.title === "string") merged.title = bounded(fields.title, MAX_TITLE_CHARS);
    for (const field of HINT_NAMES) if (typeof fields[field] === "boolean") merged[field] = fields[field];
  }
  return Object.keys(merged).length === 0 ? undefined : Object.freeze(merged);
}

/** A copy as plain JSON data, or undefined for anything but an object. */
function plainObject(value: unknown): object | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  try {
    return JSON.parse(JSON.stringify(value)) as object;
  } catch {
    return undefined;
  }
}
