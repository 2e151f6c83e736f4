import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { APICallError } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { afterEach, describe, expect, test } from "vitest";
import { AISDKProvider, AnthropicProvider, OpenAIProvider, ProviderError, ScriptedProvider, type GenerationRequest, type Provider, type ScriptedEntry } from "../../src/index.ts";
import { OpenAITestServer, type ScriptedReply } from "../../test-support/openai-server.ts";

/**
 * One contract every Provider keeps, run against each implementation. Each is given the same
 * scripted replies: the HTTP ones through the real SDKs talking to a local server (OpenAI chat
 * completions, Anthropic messages, the AI SDK's OpenAI-compatible provider), the others
 * through their own stand-ins (ScriptedProvider's entries, the AI SDK's mock model).
 */
interface Implementation {
  readonly name: string;
  /** Talks HTTP to the test server. */
  readonly http: boolean;
  /** Reads a program out of a plain-text reply (model-backed providers do). */
  readonly readsText: boolean;
  /** Reports cache writes (not every API does). */
  readonly reportsCacheWrites: boolean;
  make(replies: ScriptedReply[]): Promise<Provider>;
}

let server: OpenAITestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(replies: ScriptedReply[]): Promise<OpenAITestServer> {
  server = await OpenAITestServer.start(replies);
  return server;
}

const implementations: Implementation[] = [
  {
    name: "ScriptedProvider",
    http: false,
    readsText: false,
    reportsCacheWrites: true,
    make: async (replies) => new ScriptedProvider({ programs: { one: replies.map(scriptedEntry) } }),
  },
  {
    name: "OpenAIProvider",
    http: true,
    readsText: true,
    reportsCacheWrites: false,
    make: async (replies) => new OpenAIProvider({ apiKey: "k", baseURL: (await serve(replies)).baseURL, model: "m", maxRetries: 0 }),
  },
  {
    name: "AnthropicProvider",
    http: true,
    readsText: true,
    reportsCacheWrites: true,
    make: async (replies) => new AnthropicProvider({ apiKey: "k", baseURL: (await serve(replies)).origin, model: "m", maxRetries: 0 }),
  },
  {
    name: "AISDKProvider (OpenAI-compatible)",
    http: true,
    readsText: true,
    reportsCacheWrites: false,
    make: async (replies) => {
      const local = createOpenAICompatible({ name: "local", baseURL: (await serve(replies)).baseURL, apiKey: "k", supportsStructuredOutputs: true });
      return new AISDKProvider({ model: local.chatModel("m"), maxRetries: 0 });
    },
  },
  {
    name: "AISDKProvider (mock model)",
    http: false,
    readsText: true,
    reportsCacheWrites: true,
    make: async (replies) => new AISDKProvider({ model: mockModel(replies), maxRetries: 0 }),
  },
];

const request = (method = "one"): GenerationRequest => ({ role: "r", method, attempt: 1, system: 'You write methods. The role is "r".', user: `Method: ${method}\nArguments: []` });
const signal = () => new AbortController().signal;

/** The provider's failure for one scripted reply. */
async function failureOf(implementation: Implementation, reply: ScriptedReply): Promise<ProviderError> {
  const provider = await implementation.make([reply]);
  const error = await provider.generate(request(), signal()).then(() => undefined, (thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

describe.each(implementations)("$name keeps the Provider contract", (implementation) => {
  test("generate resolves to { code, model } from a structured reply, and the prompts reach the model", async () => {
    const provider = await implementation.make([{ kind: "structured", code: "return 1" }]);
    const generation = await provider.generate(request(), signal());
    expect(generation.code).toBe("return 1");
    expect(typeof generation.model).toBe("string");
    if (implementation.http) {
      const text = JSON.stringify(server!.requests[0]!.body);
      expect(text).toContain('The role is \\"r\\"');
      expect(text).toContain("Method: one");
    }
  });

  test("generate rejects once its signal is aborted", async () => {
    const provider = await implementation.make([{ kind: "structured", code: "return 1" }]);
    const controller = new AbortController();
    controller.abort(new Error("aborted by test"));
    await expect(provider.generate(request(), controller.signal)).rejects.toBeDefined();
  });

  test("usage is reported, prompt-cache reads and writes included", async () => {
    const provider = await implementation.make([{ kind: "structured", code: "return 1", usage: { prompt: 1200, completion: 30, cached: 1024, cacheWrite: 100 } }]);
    const { usage } = await provider.generate(request(), signal());
    expect(usage).toMatchObject({ promptTokens: 1200, completionTokens: 30, cachedTokens: 1024 });
    if (implementation.reportsCacheWrites) expect(usage?.cacheWriteTokens).toBe(100);
  });

  test("a plain-text reply gives the program it holds", async (ctx) => {
    if (!implementation.readsText) ctx.skip(`${implementation.name} is given programs as structured data only: it has no plain text to read`);
    const provider = await implementation.make([{ kind: "content", content: "Here it is:\n```js\nreturn args[0] * 2;\n```" }]);
    expect((await provider.generate(request(), signal())).code).toBe("return args[0] * 2;");
  });

  test("a refused key is an auth failure that is not retriable", async () => {
    const error = await failureOf(implementation, { kind: "status", status: 401, body: { error: { message: "invalid x-api-key", type: "authentication_error" } } });
    expect(error).toMatchObject({ kind: "auth", retriable: false });
    if (implementation.http) expect(error.message).toContain("refused the API key (HTTP 401)");
  });

  test("a server failure (5xx) is a server failure, retriable", async () => {
    expect(await failureOf(implementation, { kind: "status", status: 503 })).toMatchObject({ kind: "server", retriable: true });
  });

  test("a rate limit (429) says how long the server asked to wait", async () => {
    expect(await failureOf(implementation, { kind: "status", status: 429, retryAfterMs: 1500 })).toMatchObject({ kind: "rate_limit", retryAfterMs: 1500, retriable: true });
  });

  test("a request the server refuses (another 4xx) is a request failure", async () => {
    expect(await failureOf(implementation, { kind: "status", status: 422, body: { error: { message: "bad field", type: "invalid_request_error" } } })).toMatchObject({ kind: "request" });
  });

  test("a server that cannot be reached is a connection failure", async (ctx) => {
    if (!implementation.http) ctx.skip(`${implementation.name} reaches no server`);
    const provider = await implementation.make([{ kind: "structured", code: "return 1" }]);
    await server!.close();
    server = undefined;
    const error = await provider.generate(request(), signal()).then(() => undefined, (thrown: unknown) => thrown);
    expect(error).toMatchObject({ name: "ProviderError", kind: "connection" });
  });
});

/** A scripted reply as a ScriptedProvider entry. */
function scriptedEntry(reply: ScriptedReply): ScriptedEntry {
  switch (reply.kind) {
    case "structured":
      return { code: reply.code, ...(reply.usage === undefined ? {} : { usage: { promptTokens: reply.usage.prompt, completionTokens: reply.usage.completion, cachedTokens: reply.usage.cached, cacheWriteTokens: reply.usage.cacheWrite } }) };
    case "status": {
      const kind = reply.status === 401 || reply.status === 403 ? "auth" : reply.status === 429 ? "rate_limit" : reply.status >= 500 ? "server" : "request";
      return { error: `scripted HTTP ${reply.status}`, kind, ...(reply.retryAfterMs === undefined ? {} : { retryAfterMs: reply.retryAfterMs }) };
    }
    default:
      throw new Error(`no ScriptedProvider entry for a ${reply.kind} reply`);
  }
}

/** An AI SDK mock model that answers each request with the next scripted reply (the last repeats). */
function mockModel(replies: ScriptedReply[]): MockLanguageModelV4 {
  let served = 0;
  return new MockLanguageModelV4({
    provider: "mock",
    modelId: "mock-model",
    doGenerate: async ({ abortSignal }) => {
      abortSignal?.throwIfAborted();
      const reply = replies[Math.min(served++, replies.length - 1)]!;
      const usage = "usage" in reply && reply.usage !== undefined ? reply.usage : { prompt: 10, completion: 5 };
      const text = reply.kind === "structured" ? JSON.stringify({ code: reply.code }) : reply.kind === "content" ? (reply.content ?? "") : "";
      if (reply.kind === "status") {
        throw new APICallError({ message: `scripted HTTP ${reply.status}`, url: "http://mock.invalid/v1", requestBodyValues: {}, statusCode: reply.status, responseHeaders: reply.retryAfterMs === undefined ? {} : { "retry-after-ms": String(reply.retryAfterMs) }, isRetryable: reply.status === 429 || reply.status >= 500 });
      }
      return {
        content: [{ type: "text", text }],
        finishReason: { unified: "stop", raw: "stop" },
        usage: {
          inputTokens: { total: usage.prompt, noCache: usage.prompt - (usage.cached ?? 0) - (usage.cacheWrite ?? 0), cacheRead: usage.cached, cacheWrite: usage.cacheWrite },
          outputTokens: { total: usage.completion, text: usage.completion, reasoning: undefined },
        },
        warnings: [],
      };
    },
  });
}
