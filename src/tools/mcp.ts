/**
 * An MCP server's tools as a tool set (DESIGN section 13). `mcpTools` connects with the official
 * MCP TypeScript SDK, an optional peer dependency loaded only when it is called, lists the
 * server's tools and returns one `Tool` per tool, each calling `tools/call` on the server.
 */
import { readFileSync } from "node:fs";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { markServerTool, type Tool, type ToolAnnotations, type ToolExecuteOptions, type ToolSet } from "./tool.ts";

/** An MCP server run as a child process, spoken to over its stdin and stdout. */
export interface McpStdioServer {
  readonly command: string;
  readonly args?: readonly string[];
  /** Added to the few variables the SDK passes on by default (PATH, HOME, USER, SHELL, TERM, LOGNAME). */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
}

/** An MCP server reached over Streamable HTTP. */
export interface McpHttpServer {
  readonly url: string | URL;
  /** Sent with every request (an API key, say). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** A tool as a server lists it. */
export interface McpListedTool {
  readonly name: string;
  readonly description?: string;
  readonly inputSchema?: unknown;
  readonly outputSchema?: unknown;
  readonly annotations?: unknown;
}

/** What is given with each request to the server. @unit timeout: milliseconds */
export interface McpRequestOptions {
  readonly signal?: AbortSignal;
  readonly timeout?: number;
}

/** An SDK `Client` the application connected itself: the part of it `mcpTools` uses. */
export interface McpClient {
  listTools(params?: { cursor?: string }, options?: McpRequestOptions): Promise<{ readonly tools: readonly McpListedTool[]; readonly nextCursor?: string }>;
  callTool(params: { name: string; arguments?: Record<string, unknown> }, resultSchema?: undefined, options?: McpRequestOptions): Promise<unknown>;
}

/** Where the tools are: a command to run (stdio), a URL (Streamable HTTP), or a connected SDK `Client`. */
export type McpServer = McpStdioServer | McpHttpServer | McpClient;

/** How `mcpTools` treats the server's tools. */
export interface McpToolsOptions {
  /**
   * Overrides of the server's annotations, which are only hints, field by field. Keyed by the
   * server's name for the tool or by its name in the set (the latter wins).
   */
  readonly annotations?: Readonly<Record<string, ToolAnnotations>>;
  /** Every tool's `timeoutMs`; also the SDK's own limit for the request, 60 s when not given. @unit milliseconds */
  readonly timeoutMs?: number;
  /** Longest wait to connect (or reconnect) and for each page of the tool list. Default: 30000. @unit milliseconds */
  readonly connectTimeoutMs?: number;
}

/**
 * The server's tools, one enumerable property each (so the set's keys are exactly its tools),
 * and `close()`, not enumerable, which ends the connection `mcpTools` opened (a `Client` the
 * application passed stays open). Closing twice is safe.
 */
export type McpToolSet = ToolSet & { readonly close: () => Promise<void> };

/** The server could not be reached, went away and could not be reached again, or the set is closed. */
export class McpConnectionError extends Error {
  override readonly name = "McpConnectionError";
  /** The server: its command line, its URL, or the name of the application client's server. */
  readonly server: string;

  constructor(message: string, server: string, options?: ErrorOptions) {
    super(message, options);
    this.server = server;
  }
}

const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;
const MAX_DESCRIPTION_CHARS = 1_000;
const MAX_ERROR_CHARS = 2_000;
const MAX_CAUSE_CHARS = 500;
const MAX_STDERR_CHARS = 1_000;
const MAX_SERVER_NAME_CHARS = 200;
const MAX_PAGES = 1_000;
const MAX_TOOL_NAME_CHARS = 64;
const TERMINATE_WAIT_MS = 1_000;
// The SDK's own error codes (ErrorCode in its types): its failures, not the server's.
const CONNECTION_CLOSED = -32000;
const REQUEST_TIMEOUT = -32001;
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
}

/** One connection to the server. */
interface Session {
  readonly client: McpClient;
  /** Whether the connection still stands, as far as is known. */
  readonly isLive: () => boolean;
  /** What is known of why it broke (the server's last words on stderr, the transport's error), or "". */
  readonly failure: () => string;
  readonly close: () => Promise<void>;
}

/** How to reach the server. */
interface Endpoint {
  /** The server in messages: its command line, its URL (no query), or its name as its client knows it. */
  readonly name: string;
  readonly open: () => Promise<Session>;
  /** False for a client the application passed: it is never reopened here. */
  readonly reopens: boolean;
}

function endpointFor(server: McpServer, connectTimeoutMs: number): Endpoint {
  if (typeof server !== "object" || server === null) throw new TypeError("mcpTools: expected { command, args? }, { url } or a connected MCP Client.");
  if (isClient(server)) return clientEndpoint(server);
  if ("command" in server && typeof server.command === "string" && server.command !== "") return stdioEndpoint(server, connectTimeoutMs);
  if ("url" in server && (typeof server.url === "string" || server.url instanceof URL)) return httpEndpoint(server, connectTimeoutMs);
  throw new TypeError("mcpTools: expected { command, args? }, { url } or a connected MCP Client.");
}

function isClient(server: object): server is McpClient {
  const candidate = server as { callTool?: unknown; listTools?: unknown };
  return typeof candidate.callTool === "function" && typeof candidate.listTools === "function";
}

function clientEndpoint(client: McpClient): Endpoint {
  const info = (client as { getServerVersion?: () => { name?: unknown } | undefined }).getServerVersion?.();
  const name = bounded(typeof info?.name === "string" ? `"${info.name}" (the application's client)` : "(the application's client)", MAX_SERVER_NAME_CHARS);
  // An SDK client has no transport once closed; anything else is taken to be connected.
  const isLive = () => !("transport" in client) || (client as { transport?: unknown }).transport !== undefined;
  const session: Session = { client, isLive, failure: () => "", close: async () => undefined };
  return { name, reopens: false, open: async () => session };
}

function stdioEndpoint(server: McpStdioServer, connectTimeoutMs: number): Endpoint {
  const name = bounded([server.command, ...(server.args ?? [])].join(" "), MAX_SERVER_NAME_CHARS);
  const open = async (): Promise<Session> => {
    const [{ Client }, { StdioClientTransport }] = await Promise.all([loadClient(), loadSdk(() => import("@modelcontextprotocol/sdk/client/stdio.js"))]);
    const transport: StdioClientTransport = new StdioClientTransport({
      command: server.command,
      args: [...(server.args ?? [])],
      env: server.env === undefined ? undefined : { ...server.env },
      cwd: server.cwd,
      // Read, not inherited: the application's stderr is its own; the last lines say why a server failed.
      stderr: "pipe",
    });
    const stderr = tailOf(transport.stderr);
    const client = newClient(Client);
    try {
      await client.connect(transport, { timeout: connectTimeoutMs });
    } catch (error) {
      await client.close().catch(() => undefined);
      throw withDetail(error, stderr());
    }
    return { client, isLive: () => client.transport !== undefined, failure: stderr, close: () => client.close() };
  };
  return { name, reopens: true, open };
}

function httpEndpoint(server: McpHttpServer, connectTimeoutMs: number): Endpoint {
  let url: URL;
  try {
    url = new URL(server.url);
  } catch {
    throw new TypeError(`mcpTools: ${bounded(String(server.url), MAX_SERVER_NAME_CHARS)} is not a URL.`);
  }
  // The query and credentials may hold secrets: messages show the rest.
  const name = bounded(`${url.origin}${url.pathname}`, MAX_SERVER_NAME_CHARS);
  const open = async (): Promise<Session> => {
    const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([loadClient(), loadSdk(() => import("@modelcontextprotocol/sdk/client/streamableHttp.js"))]);
    const client = newClient(Client);
    let lost: unknown;
    let closing = false;
    const markLost = (error: unknown) => {
      if (closing || lost !== undefined) return;
      lost = error;
      // Later, so the call whose request failed sees that failure rather than "connection closed".
      setImmediate(() => void client.close().catch(() => undefined));
    };
    const transport: StreamableHTTPClientTransport = new StreamableHTTPClientTransport(url, {
      requestInit: server.headers === undefined ? undefined : { headers: { ...server.headers } },
      fetch: watchedFetch(markLost),
    });
    watchSends(transport, markLost);
    try {
      await client.connect(transport, { timeout: connectTimeoutMs });
    } catch (error) {
      closing = true;
      await client.close().catch(() => undefined);
      throw error;
    }
    return {
      client,
      isLive: () => lost === undefined && client.transport !== undefined,
      failure: () => (lost === undefined ? "" : causeText(lost)),
      close: async () => {
        closing = true;
        // Ends the session on the server (a DELETE), as the protocol asks of a client that leaves; bounded, as the server may be gone.
        if (lost === undefined) await Promise.race([transport.terminateSession().catch(() => undefined), delay(TERMINATE_WAIT_MS)]);
        await client.close();
      },
    };
  };
  return { name, reopens: true, open };
}

/** A request the transport could not send (no answer, or an HTTP error): the connection is gone. */
function watchSends(transport: StreamableHTTPClientTransport, markLost: (error: unknown) => void): void {
  const send = transport.send.bind(transport);
  transport.send = async (message, options) => {
    try {
      await send(message, options);
    } catch (error) {
      markLost(error);
      throw error;
    }
  };
}

/**
 * `fetch` that reports a response stream that breaks. The SDK only logs a broken stream, so a
 * call whose answer was to come on it would wait for its timeout; reporting it ends the call now.
 */
function watchedFetch(markLost: (error: unknown) => void): (url: string | URL, init?: RequestInit) => Promise<Response> {
  return async (url, init) => {
    const response = await fetch(url, init);
    if (init?.method !== "POST" || response.body === null || !(response.headers.get("content-type") ?? "").includes("text/event-stream")) return response;
    return new Response(watchedBody(response.body, markLost), { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

function watchedBody(body: ReadableStream<Uint8Array>, markLost: (error: unknown) => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        markLost(error);
        controller.error(error);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

/** The session to call on, reconnecting once first when the last one is gone; and the end of it all. */
interface Connection {
  readonly endpoint: Endpoint;
  readonly session: () => Promise<Session>;
  readonly close: () => Promise<void>;
}

function connectionTo(endpoint: Endpoint, first: Session): Connection {
  let current: Promise<Session> = Promise.resolve(first);
  let closing: Promise<void> | undefined;
  const closedError = () => new McpConnectionError(`The tools of MCP server ${endpoint.name} are closed.`, endpoint.name);
  const session = async (): Promise<Session> => {
    if (closing !== undefined) throw closedError();
    const seen = current;
    const found = await seen.catch(() => undefined);
    if (found?.isLive()) return found;
    if (!endpoint.reopens) throw new McpConnectionError(`The client of MCP server ${endpoint.name} is no longer connected.`, endpoint.name);
    // One attempt per call that finds the connection gone; calls waiting meanwhile share it.
    if (current === seen) {
      void found?.close().catch(() => undefined);
      current = endpoint.open();
    }
    let reopened: Session;
    try {
      reopened = await current;
    } catch (error) {
      throw new McpConnectionError(`MCP server ${endpoint.name} went away and could not be reached again: ${causeText(error)}`, endpoint.name, { cause: error });
    }
    if (closing !== undefined) throw closedError();
    return reopened;
  };
  const close = () => {
    closing ??= current.then(
      (last) => last.close(),
      () => undefined,
    );
    return closing;
  };
  return { endpoint, session, close };
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
  const set: Record<string, Tool> = Object.create(null);
  const byName = new Map(listed.map((tool) => [tool.name, tool]));
  for (const [name, original] of identifierNames(listed.map((tool) => tool.name))) {
    const listing = byName.get(original) as McpListedTool;
    Object.defineProperty(set, name, { value: markServerTool(toolFor(listing, name, connection, options)), enumerable: true });
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

function toolFor(listing: McpListedTool, name: string, connection: Connection, options: McpToolsOptions): Tool {
  const timeoutMs = options.timeoutMs;
  const annotations = annotationsFor(listing.annotations, options.annotations?.[listing.name], options.annotations?.[name]);
  const outputSchema = plainObject(listing.outputSchema);
  const tool: Tool = {
    description: bounded(typeof listing.description === "string" ? listing.description : "", MAX_DESCRIPTION_CHARS),
    inputSchema: plainObject(listing.inputSchema) ?? { type: "object" },
    ...(outputSchema === undefined ? {} : { outputSchema }),
    ...(annotations === undefined ? {} : { annotations }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    execute: (input: unknown, callOptions?: Partial<ToolExecuteOptions>) => callTool({ connection, tool: listing.name, args: (input ?? {}) as Record<string, unknown>, signal: callOptions?.signal ?? callOptions?.abortSignal, timeoutMs }),
  };
  return Object.freeze(tool);
}

const HINT_FIELDS = ["readOnlyHint", "idempotentHint", "destructiveHint", "openWorldHint"] as const;

/** The server's hints, with the application's overrides field by field; undefined when neither says anything. */
function annotationsFor(fromServer: unknown, ...overrides: (ToolAnnotations | undefined)[]): ToolAnnotations | undefined {
  const merged: { -readonly [K in keyof ToolAnnotations]: ToolAnnotations[K] } = {};
  for (const source of [fromServer, ...overrides]) {
    if (typeof source !== "object" || source === null) continue;
    const fields = source as Record<string, unknown>;
    if (typeof fields.title === "string") merged.title = bounded(fields.title, MAX_SERVER_NAME_CHARS);
    for (const field of HINT_FIELDS) if (typeof fields[field] === "boolean") merged[field] = fields[field];
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

/** One call of a tool. */
interface ToolCall {
  readonly connection: Connection;
  /** The server's name for the tool. */
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly signal: AbortSignal | undefined;
  readonly timeoutMs: number | undefined;
}

async function callTool(call: ToolCall): Promise<unknown> {
  call.signal?.throwIfAborted();
  let result: unknown;
  try {
    result = await request(call, await call.connection.session(), true);
  } catch (error) {
    if (!(error instanceof SessionExpired)) throw error;
    // The server no longer knows the session (it restarted): the request never ran, so it is sent once more, on a new one.
    result = await request(call, await call.connection.session(), false);
  }
  return resultValue(result, call.tool);
}

/** The server refused a request for not knowing its session: the request never ran. */
class SessionExpired extends Error {}

/** One `tools/call`, its failures said in terms of the tool and the server. */
async function request(call: ToolCall, session: Session, mayResend: boolean): Promise<unknown> {
  const { tool, args, signal, timeoutMs } = call;
  // A signal of the call's own: the SDK never removes its abort listener, so a signal that
  // outlives the request would later send the server a cancellation for an answered request.
  const controller = new AbortController();
  const forward = () => controller.abort(signal?.reason);
  signal?.addEventListener("abort", forward, { once: true });
  try {
    return await session.client.callTool({ name: tool, arguments: args }, undefined, { signal: controller.signal, ...(timeoutMs === undefined ? {} : { timeout: timeoutMs }) });
  } catch (error) {
    throw callFailure(error, call, session, mayResend);
  } finally {
    signal?.removeEventListener("abort", forward);
  }
}

function callFailure(error: unknown, call: ToolCall, session: Session, mayResend: boolean): Error {
  const { tool, signal, timeoutMs } = call;
  const { name, reopens } = call.connection.endpoint;
  if (signal?.aborted) return signal.reason instanceof Error ? signal.reason : new Error(`The call of MCP tool "${tool}" was aborted.`, { cause: signal.reason });
  if (isSessionExpired(error)) {
    if (mayResend && reopens) return new SessionExpired("session expired", { cause: error });
    return new McpConnectionError(`MCP server ${name} does not know the session (HTTP 404); the call of tool "${tool}" did not run.`, name, { cause: error });
  }
  const code = (error as { code?: unknown } | undefined)?.code;
  if (!session.isLive() || code === CONNECTION_CLOSED) {
    const failure = session.failure();
    return new McpConnectionError(
      `MCP server ${name} closed the connection during the call of tool "${tool}"; the call is not sent again, as it may have had an effect${failure === "" ? "" : ` (${failure})`}.`,
      name,
      { cause: error },
    );
  }
  if (code === REQUEST_TIMEOUT) return new Error(`MCP tool "${tool}" on ${name} did not answer within ${timeoutMs ?? "the SDK's default of 60000"} ms.`, { cause: error });
  const issues = issuesOf(error);
  if (issues !== undefined) return new Error(`MCP tool "${tool}" on ${name} answered a malformed result: ${bounded(issues, MAX_ERROR_CHARS)}`, { cause: error });
  return new Error(`MCP tool "${tool}" on ${name} failed: ${causeText(error, MAX_ERROR_CHARS)}`, { cause: error });
}

/** The problems a schema error lists (the SDK checks results with zod), as one line. */
function issuesOf(error: unknown): string | undefined {
  const issues = (error as { issues?: unknown } | undefined)?.issues;
  if (!Array.isArray(issues) || issues.length === 0) return undefined;
  return issues
    .map((issue: { path?: unknown; message?: unknown }) => {
      const path = Array.isArray(issue?.path) && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
      return `${path}${String(issue?.message ?? "invalid")}`;
    })
    .join("; ");
}

/** A Streamable HTTP server answers 404 to a session it does not know. */
function isSessionExpired(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === 404;
}

/** The value of a `tools/call` result: structured content, else the text, else the content items. */
function resultValue(result: unknown, tool: string): unknown {
  if (typeof result !== "object" || result === null) throw new Error(`MCP tool "${tool}" answered with no result.`);
  const { content, structuredContent, isError } = result as { content?: unknown; structuredContent?: unknown; isError?: unknown };
  const items: unknown[] = Array.isArray(content) ? content : [];
  if (isError === true) {
    const text = items.filter(isTextItem).map((item) => item.text).join("\n");
    throw new Error(bounded(text === "" ? `MCP tool "${tool}" reported an error.` : text, MAX_ERROR_CHARS));
  }
  if (typeof structuredContent === "object" && structuredContent !== null) return structuredContent;
  if (items.every(isTextItem)) return items.map((item) => item.text).join("\n");
  return items;
}

function isTextItem(item: unknown): item is { type: "text"; text: string } {
  return typeof item === "object" && item !== null && (item as { type?: unknown }).type === "text" && typeof (item as { text?: unknown }).text === "string";
}

const MISSING_SDK = "mcpTools needs the MCP TypeScript SDK, an optional peer dependency of improv: npm install @modelcontextprotocol/sdk";

async function loadSdk<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isModuleNotFound(error)) throw new Error(MISSING_SDK, { cause: error });
    throw error;
  }
}

/** Node's "cannot find module", here or among the causes of an error wrapping it. */
function isModuleNotFound(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 3; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") return true;
  }
  return false;
}

function loadClient(): Promise<{ Client: typeof Client }> {
  return loadSdk(() => import("@modelcontextprotocol/sdk/client/index.js"));
}

function isMissingSdk(error: unknown): boolean {
  return error instanceof Error && error.message === MISSING_SDK;
}

let clientVersion: string | undefined;
function newClient(ClientClass: typeof Client): Client {
  clientVersion ??= readVersion();
  return new ClientClass({ name: "improv", version: clientVersion });
}

function readVersion(): string {
  try {
    const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: unknown };
    return typeof version === "string" ? version : "0.0.0";
  } catch {
    return "0.0.0";
  }
}

/** The last characters a stream wrote, read as they come. */
function tailOf(stream: Pick<NodeJS.EventEmitter, "on"> | null): () => string {
  let text = "";
  stream?.on("data", (chunk: unknown) => {
    text = (text + String(chunk)).slice(-MAX_STDERR_CHARS);
  });
  return () => (text.trim() === "" ? "" : `its stderr ends: ${text.trim()}`);
}

function withDetail(error: unknown, detail: string): unknown {
  if (detail === "") return error;
  return new Error(`${causeText(error)} (${detail})`, { cause: error });
}

/** An error's message with those of its causes (fetch says "fetch failed" and puts the reason in `cause`). */
function causeText(error: unknown, max = MAX_CAUSE_CHARS): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 3 && current !== undefined && current !== null; depth++) {
    const message = current instanceof Error ? current.message : String(current);
    if (message !== "" && !parts.includes(message)) parts.push(message);
    current = current instanceof Error ? current.cause : undefined;
  }
  return bounded(parts.join(": ") || "unknown error", max);
}

/** At most `max` characters, the cut marked with an ellipsis and never inside a surrogate pair. */
function bounded(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = max - 1;
  if (/[\uD800-\uDBFF]/.test(text.charAt(cut - 1))) cut--;
  return `${text.slice(0, cut)}…`;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
