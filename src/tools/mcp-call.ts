/**
 * One call of an MCP server's tool: `tools/call` with the call's signal, its failures said in
 * terms of the tool and the server, and the value its result stands for.
 */
import { bounded, causeText, McpConnectionError, type Connection, type Session } from "./mcp-connection.ts";

const MAX_ERROR_CHARS = 2_000;
// The SDK's own error codes (ErrorCode in its types): its failures, not the server's.
const CONNECTION_CLOSED = -32000;
const REQUEST_TIMEOUT = -32001;

/** One call of a tool. */
export interface ToolCall {
  readonly connection: Connection;
  /** The server's name for the tool. */
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly signal: AbortSignal | undefined;
  readonly timeoutMs: number | undefined;
}

/** The value of the call's result; sent once more, on a new session, when the server no longer knew the old one. */
export async function callTool(call: ToolCall): Promise<unknown> {
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
