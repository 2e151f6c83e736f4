import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** Token counts a reply reports, written in each API's own shape. */
export interface ScriptedUsage {
  readonly prompt: number;
  readonly completion: number;
  readonly cached?: number;
  readonly cacheWrite?: number;
}

/**
 * One scripted reply of the test server. `structured` answers in the form the request asked
 * for (a `{ code }` object, or the forced tool's call on the Messages API).
 */
export type ScriptedReply =
  | { readonly kind: "structured"; readonly code: string; readonly usage?: ScriptedUsage; readonly delayMs?: number }
  | { readonly kind: "content"; readonly content: string | null; readonly usage?: ScriptedUsage }
  | { readonly kind: "status"; readonly status: number; readonly body?: unknown; readonly retryAfterMs?: number }
  | { readonly kind: "raw"; readonly body: string }
  | { readonly kind: "hang" };

/** A request the server received. */
export interface ReceivedRequest {
  readonly path: string;
  readonly body: Record<string, unknown>;
}

/** Replies chosen per `role.method`, read from the prompts; a list is consumed in order, its last entry repeating. */
export type RoutedReplies = Record<string, ScriptedReply | ScriptedReply[]>;

/** The `role.method` a chat request asks for, read from improv's prompts. */
export function routeOf(body: Record<string, unknown>): string {
  const { system, user } = promptsOf(body);
  const role = /role is "([^"]+)"/.exec(system)?.[1] ?? "?";
  const method = /^Method: (.+)$/m.exec(user)?.[1] ?? "?";
  return `${role}.${method}`;
}

/** The system and user prompts of a chat completions or Messages API request. */
export function promptsOf(body: Record<string, unknown>): { system: string; user: string } {
  const text = (content: unknown) => (typeof content === "string" ? content : Array.isArray(content) ? content.map((block) => (block as { text?: string }).text ?? "").join("") : "");
  const messages = (body.messages ?? []) as { role?: string; content?: unknown }[];
  if (body.system !== undefined) return { system: text(body.system), user: text(messages[0]?.content) };
  return { system: text(messages[0]?.content), user: text(messages[1]?.content) };
}

/**
 * A small model server on 127.0.0.1 (port 0) that answers OpenAI's `POST /v1/chat/completions`
 * and Anthropic's `POST /v1/messages` from scripted replies: a queue (the last one repeats) or
 * lists per `role.method`.
 */
export class OpenAITestServer {
  readonly requests: ReceivedRequest[] = [];
  /** Requests being answered now, and the most there ever were at once. */
  inFlight = 0;
  maxInFlight = 0;
  readonly #replies: ScriptedReply[] | RoutedReplies;
  readonly #served = new Map<string, number>();
  readonly #server: Server;
  readonly #hung = new Set<ServerResponse>();

  private constructor(replies: ScriptedReply[] | RoutedReplies) {
    this.#replies = replies;
    this.#server = createServer((request, response) => void this.#handle(request, response));
  }

  static async start(replies: ScriptedReply[] | RoutedReplies): Promise<OpenAITestServer> {
    const server = new OpenAITestServer(replies);
    await new Promise<void>((resolve) => server.#server.listen(0, "127.0.0.1", resolve));
    return server;
  }

  /** The base URL for OpenAI's SDK (ends in `/v1`). */
  get baseURL(): string {
    return `${this.origin}/v1`;
  }

  /** The base URL for Anthropic's SDK, which adds `/v1/messages` itself. */
  get origin(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  async close(): Promise<void> {
    for (const response of this.#hung) response.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #replyFor(body: Record<string, unknown>): ScriptedReply {
    const missing: ScriptedReply = { kind: "status", status: 404, body: { error: { message: `no scripted reply for ${routeOf(body)}` } } };
    if (Array.isArray(this.#replies)) return this.#replies[Math.min(this.requests.length - 1, this.#replies.length - 1)] ?? missing;
    const route = routeOf(body);
    const entry = this.#replies[route];
    if (entry === undefined) return missing;
    if (!Array.isArray(entry)) return entry;
    const index = this.#served.get(route) ?? 0;
    this.#served.set(route, index + 1);
    return entry[Math.min(index, entry.length - 1)] ?? missing;
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // Recorded as empty.
    }
    this.requests.push({ path: request.url ?? "", body });
    const reply = this.#replyFor(body);
    if (reply.kind === "structured" && reply.delayMs !== undefined) {
      this.inFlight += 1;
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
      await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
      this.inFlight -= 1;
    }
    const messagesApi = (request.url ?? "").endsWith("/messages");
    const json = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      response.writeHead(status, { "content-type": "application/json", ...headers });
      response.end(JSON.stringify(payload));
    };
    const model = String(body.model ?? "test-model");
    switch (reply.kind) {
      case "structured":
        if (messagesApi) json(200, message(body.tool_choice === undefined ? [{ type: "text", text: JSON.stringify({ code: reply.code }) }] : [{ type: "tool_use", id: "toolu_test", name: (body.tool_choice as { name: string }).name, input: { code: reply.code } }], model, reply.usage));
        else json(200, completion(JSON.stringify({ code: reply.code }), model, reply.usage));
        return;
      case "content":
        if (messagesApi) json(200, message(reply.content === null ? [] : [{ type: "text", text: reply.content }], model, reply.usage));
        else json(200, completion(reply.content, model, reply.usage));
        return;
      case "status": {
        const fallback = messagesApi ? { type: "error", error: { type: "api_error", message: `scripted HTTP ${reply.status}` } } : { error: { message: `scripted HTTP ${reply.status}`, type: "server_error" } };
        json(reply.status, reply.body ?? fallback, {
          ...(reply.retryAfterMs === undefined ? {} : { "retry-after-ms": String(reply.retryAfterMs) }),
        });
        return;
      }
      case "raw":
        response.writeHead(200, { "content-type": "application/json" });
        response.end(reply.body);
        return;
      case "hang":
        this.#hung.add(response);
        return;
    }
  }
}

const DEFAULT_USAGE: ScriptedUsage = { prompt: 10, completion: 5 };

function completion(content: string | null, model: string, usage = DEFAULT_USAGE): Record<string, unknown> {
  return {
    id: "chatcmpl-test",
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content } }],
    usage: {
      prompt_tokens: usage.prompt,
      completion_tokens: usage.completion,
      total_tokens: usage.prompt + usage.completion,
      ...(usage.cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: usage.cached } }),
    },
  };
}

/** A Messages API reply; its `input_tokens` leaves out the cached ones, as Anthropic's does. */
function message(content: unknown[], model: string, usage = DEFAULT_USAGE): Record<string, unknown> {
  const cached = usage.cached ?? 0;
  const cacheWrite = usage.cacheWrite ?? 0;
  return {
    id: "msg_test",
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: content.some((block) => (block as { type: string }).type === "tool_use") ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage: { input_tokens: usage.prompt - cached - cacheWrite, output_tokens: usage.completion, cache_read_input_tokens: cached, cache_creation_input_tokens: cacheWrite },
  };
}
