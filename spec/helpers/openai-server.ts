import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One scripted reply of the test server. */
export type ScriptedReply =
  | { readonly kind: "structured"; readonly code: string }
  | { readonly kind: "content"; readonly content: string | null }
  | { readonly kind: "status"; readonly status: number; readonly body?: unknown; readonly retryAfterMs?: number }
  | { readonly kind: "raw"; readonly body: string }
  | { readonly kind: "hang" };

/** A request the server received. */
export interface ReceivedRequest {
  readonly path: string;
  readonly body: Record<string, unknown>;
}

/**
 * A small OpenAI-compatible server on 127.0.0.1 (port 0) that answers
 * `POST /v1/chat/completions` from a queue of scripted replies (the last one repeats).
 */
/** Replies chosen per `role.method`, read from the prompts; a list is consumed in order, its last entry repeating. */
export type RoutedReplies = Record<string, ScriptedReply | ScriptedReply[]>;

/** The `role.method` a chat request asks for, read from improv's prompts. */
export function routeOf(body: Record<string, unknown>): string {
  const messages = (body.messages ?? []) as { content?: string }[];
  const role = /role is "([^"]+)"/.exec(messages[0]?.content ?? "")?.[1] ?? "?";
  const method = /^Method: (.+)$/m.exec(messages[1]?.content ?? "")?.[1] ?? "?";
  return `${role}.${method}`;
}

export class OpenAITestServer {
  readonly requests: ReceivedRequest[] = [];
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

  get baseURL(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/v1`;
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
    const json = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      response.writeHead(status, { "content-type": "application/json", ...headers });
      response.end(JSON.stringify(payload));
    };
    switch (reply.kind) {
      case "structured":
        json(200, completion(JSON.stringify({ code: reply.code }), String(body.model ?? "test-model")));
        return;
      case "content":
        json(200, completion(reply.content, String(body.model ?? "test-model")));
        return;
      case "status":
        json(reply.status, reply.body ?? { error: { message: `scripted HTTP ${reply.status}`, type: "server_error" } }, {
          ...(reply.retryAfterMs === undefined ? {} : { "retry-after-ms": String(reply.retryAfterMs) }),
        });
        return;
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

function completion(content: string | null, model: string): Record<string, unknown> {
  return {
    id: "chatcmpl-test",
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content } }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  };
}
