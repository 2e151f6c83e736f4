import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { lexicalEmbedder } from "../src/knowledge/embedders.ts";

/** One embedding of a reply, as OpenAI's endpoint writes it (before base64 encoding). */
export interface EmbeddingItem {
  object: "embedding";
  index: number;
  embedding: number[];
}

/** A request the server received. */
export interface EmbeddingsRequest {
  readonly path: string;
  readonly authorization: string | undefined;
  readonly body: { readonly model?: string; readonly input?: string | string[]; readonly dimensions?: number; readonly encoding_format?: string } & Record<string, unknown>;
}

export interface EmbeddingsServerOptions {
  /** The length of the vectors when a request does not say (`dimensions`). Default: 384. */
  readonly dimensions?: number;
  /** Send the embeddings last first (each still with its `index`), as a server may. Default: false. */
  readonly reversed?: boolean;
  /** Changes the embeddings before they are sent: a server that answers wrongly. */
  readonly tamper?: (items: EmbeddingItem[], request: EmbeddingsRequest) => unknown[];
  /** Waits this long before answering. @unit ms */
  readonly delayMs?: number;
}

/**
 * A small OpenAI-compatible embeddings server on 127.0.0.1 (port 0): `POST /v1/embeddings`
 * answers deterministically with lexicalEmbedder()'s vectors of each input, of the requested
 * `dimensions`, as floats or base64 as asked (the `openai` SDK asks for base64).
 */
export class EmbeddingsTestServer {
  readonly requests: EmbeddingsRequest[] = [];
  readonly #options: EmbeddingsServerOptions;
  readonly #server: Server;

  private constructor(options: EmbeddingsServerOptions) {
    this.#options = options;
    this.#server = createServer((request, response) => void this.#handle(request, response));
  }

  static async start(options: EmbeddingsServerOptions = {}): Promise<EmbeddingsTestServer> {
    const server = new EmbeddingsTestServer(options);
    await new Promise<void>((resolve) => server.#server.listen(0, "127.0.0.1", resolve));
    return server;
  }

  /** The base URL for the `openai` SDK (ends in `/v1`). */
  get baseURL(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/v1`;
  }

  /** The texts of every request, one list per request. */
  get batches(): string[][] {
    return this.requests.map((request) => (typeof request.body.input === "string" ? [request.body.input] : [...(request.body.input ?? [])]));
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (request.method !== "POST" || request.url !== "/v1/embeddings") return send(response, 404, { error: { message: `no route ${request.method} ${request.url}` } });
    let body: EmbeddingsRequest["body"];
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as EmbeddingsRequest["body"];
    } catch {
      return send(response, 400, { error: { message: "the body is not JSON" } });
    }
    const received: EmbeddingsRequest = { path: request.url, authorization: request.headers.authorization, body };
    this.requests.push(received);
    const inputs = typeof body.input === "string" ? [body.input] : body.input;
    if (!Array.isArray(inputs) || inputs.length === 0) return send(response, 400, { error: { message: "'input' must be a non-empty string or array of strings" } });
    const dimensions = body.dimensions ?? this.#options.dimensions ?? 384;
    const vectors = await lexicalEmbedder({ dimensions }).embed(inputs);
    let items: EmbeddingItem[] = vectors.map((embedding, index) => ({ object: "embedding", index, embedding }));
    if (this.#options.reversed) items.reverse();
    const data = this.#options.tamper ? this.#options.tamper(items, received) : items;
    if (this.#options.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, this.#options.delayMs));
    const encoded =
      body.encoding_format === "base64"
        ? data.map((item) => {
            const embedding = (item as { embedding?: unknown }).embedding;
            if (!Array.isArray(embedding)) return item;
            return { ...(item as object), embedding: Buffer.from(new Float32Array(embedding as number[]).buffer).toString("base64") };
          })
        : data;
    const tokens = inputs.reduce((sum, text) => sum + text.split(/\s+/).length, 0);
    send(response, 200, { object: "list", data: encoded, model: body.model ?? "?", usage: { prompt_tokens: tokens, total_tokens: tokens } });
  }
}

function send(response: ServerResponse, status: number, body: unknown): void {
  if (response.destroyed) return;
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify(body));
}
