/**
 * Reaching an MCP server: as a command run as a child process (stdio), at a
 * URL (Streamable HTTP), or through an SDK `Client` the application connected itself. The
 * official MCP TypeScript SDK, an optional peer dependency, is loaded only when a connection is
 * opened. The connection a tool set calls on reconnects once when the server went away.
 */
import { readFileSync } from "node:fs";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { causesOf, errorCode } from "../shared/index.ts";

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

const MAX_CAUSE_CHARS = 500;
const MAX_STDERR_CHARS = 1_000;
const MAX_SERVER_NAME_CHARS = 200;
const TERMINATE_WAIT_MS = 1_000;

/** One connection to the server. */
export interface Session {
  readonly client: McpClient;
  /** Whether the connection still stands, as far as is known. */
  readonly isLive: () => boolean;
  /** What is known of why it broke (the server's last words on stderr, the transport's error), or "". */
  readonly failure: () => string;
  readonly close: () => Promise<void>;
}

/** How to reach the server. */
export interface Endpoint {
  /** The server in messages: its command line, its URL (no query), or its name as its client knows it. */
  readonly name: string;
  readonly open: () => Promise<Session>;
  /** False for a client the application passed: it is never reopened here. */
  readonly reopens: boolean;
}

export function endpointFor(server: McpServer, connectTimeoutMs: number): Endpoint {
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
    const holdWhileClosing = holdOnlyWhileAsking(client, transport);
    try {
      await client.connect(transport, { timeout: connectTimeoutMs });
    } catch (error) {
      await client.close().catch(() => undefined);
      throw withDetail(error, stderr());
    }
    const close = () => {
      holdWhileClosing();
      return client.close();
    };
    return { client, isLive: () => client.transport !== undefined, failure: stderr, close };
  };
  return { name, reopens: true, open };
}

/**
 * A server process kept for later calls must not keep the application alive by itself (a script
 * that forgot `close()` would never exit): its process and pipes hold the event loop only while
 * a request to it waits for its answer.
 */
function holdOnlyWhileAsking(client: McpClient, transport: StdioClientTransport): () => void {
  type Handle = { ref?: () => void; unref?: () => void } | null | undefined;
  // The SDK keeps the child process to itself; read where it is, and do nothing if it moved.
  const handles = (): Handle[] => {
    const child = (transport as unknown as { _process?: { stdin?: Handle; stdout?: Handle; stderr?: Handle } & Handle })._process;
    return child === undefined ? [] : [child, child.stdin, child.stdout, child.stderr];
  };
  let waiting = 0;
  const hold = (held: boolean) => {
    for (const handle of handles()) (held ? handle?.ref : handle?.unref)?.call(handle);
  };
  // Closing waits for the process to end: the wait holds the application until it has.
  let closing = false;
  const holdWhileClosing = () => {
    closing = true;
    hold(true);
  };
  const sdk = client as { request?: (...args: unknown[]) => Promise<unknown> };
  const request = sdk.request;
  if (typeof request !== "function") return holdWhileClosing;
  sdk.request = async (...args: unknown[]) => {
    waiting += 1;
    if (waiting === 1) hold(true);
    try {
      return await request.apply(client, args);
    } finally {
      waiting -= 1;
      if (waiting === 0 && !closing) hold(false);
    }
  };
  return holdWhileClosing;
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
export interface Connection {
  readonly endpoint: Endpoint;
  readonly session: () => Promise<Session>;
  readonly close: () => Promise<void>;
}

export function connectionTo(endpoint: Endpoint, first: Session): Connection {
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
  return causesOf(error, 3).some((cause) => {
    const code = errorCode(cause);
    return code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND";
  });
}

function loadClient(): Promise<{ Client: typeof Client }> {
  return loadSdk(() => import("@modelcontextprotocol/sdk/client/index.js"));
}

export function isMissingSdk(error: unknown): boolean {
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
export function causeText(error: unknown, max = MAX_CAUSE_CHARS): string {
  const parts: string[] = [];
  for (const cause of causesOf(error, 3)) {
    const message = textOf(cause);
    if (message !== "" && !parts.includes(message)) parts.push(message);
  }
  return bounded(parts.join(": ") || "unknown error", max);
}

/** An error's message, or a value as text; "" for one that cannot be read (a getter that throws, no prototype). */
function textOf(value: unknown): string {
  try {
    return value instanceof Error ? String(value.message) : String(value);
  } catch {
    return "";
  }
}

/** At most `max` characters, the cut marked with an ellipsis and never inside a surrogate pair. */
export function bounded(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = max - 1;
  if (/[\uD800-\uDBFF]/.test(text.charAt(cut - 1))) cut--;
  return `${text.slice(0, cut)}…`;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
