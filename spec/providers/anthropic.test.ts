import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, test, vi } from "vitest";
import { Agent, AnthropicProvider, DEFAULT_ANTHROPIC_MAX_TOKENS, DEFAULT_ANTHROPIC_MODEL } from "../../src/index.ts";
import { OpenAITestServer, type ScriptedReply } from "../../test-support/openai-server.ts";
import { readLogLines, tempLogPath } from "../../test-support/logs.ts";

let server: OpenAITestServer | undefined;

afterEach(async () => {
  vi.unstubAllEnvs();
  await server?.close();
  server = undefined;
});

async function providerAgainst(replies: ScriptedReply[], options: Record<string, unknown> = {}): Promise<AnthropicProvider> {
  server = await OpenAITestServer.start(replies);
  return new AnthropicProvider({ apiKey: "test-key", baseURL: server.origin, model: "claude-test", maxRetries: 0, ...options });
}


describe("AnthropicProvider over HTTP", () => {
  test("asks for a structured { code } reply, with max_tokens and the system prompt marked for the prompt cache", async () => {
    const provider = await providerAgainst([{ kind: "structured", code: "return args[0] * 2" }]);
    const calc = Agent.for("calculator", { provider });
    expect((await calc.double(21)).value).toBe(42);
    const { path, body } = server!.requests[0]!;
    expect(path).toBe("/v1/messages");
    expect(body).toMatchObject({ model: "claude-test", max_tokens: DEFAULT_ANTHROPIC_MAX_TOKENS, output_config: { format: { type: "json_schema" } } });
    const system = body.system as { type: string; text: string; cache_control?: unknown }[];
    expect(system).toHaveLength(1);
    expect(system[0]).toMatchObject({ type: "text", cache_control: { type: "ephemeral" } });
    expect(system[0]!.text).toContain('role is "calculator"');
    expect(body.messages).toEqual([{ role: "user", content: expect.stringContaining("Method: double") }]);
  });

  test("a server that refuses structured output is asked through a forced tool, and one that refuses forced tools in plain text, for good", async () => {
    const provider = await providerAgainst([
      { kind: "status", status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "output_config.format: structured outputs are not supported for this model" } } },
      { kind: "structured", code: "return 'by tool'" },
      { kind: "status", status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "Thinking may not be enabled when tool_choice forces tool use." } } },
      { kind: "content", content: "```js\nreturn 'in text'\n```" },
      { kind: "content", content: "```js\nreturn 'still text'\n```" },
    ]);
    const agent = Agent.for("writer", { provider, reuse: false });
    expect((await agent.first()).value).toBe("by tool");
    expect(provider.replyMode).toBe("tool");
    expect(server!.requests[1]!.body).toMatchObject({ tool_choice: { type: "tool", name: "write_program" }, tools: [{ name: "write_program" }] });
    expect(server!.requests[1]!.body.output_config).toBeUndefined();
    expect((await agent.second()).value).toBe("in text");
    expect(provider.replyMode).toBe("text");
    expect((await agent.third()).value).toBe("still text");
    const last = server!.requests.at(-1)!.body;
    expect(last.tool_choice).toBeUndefined();
    expect(last.output_config).toBeUndefined();
    expect(server!.requests).toHaveLength(5);
  });

  test("another 400 is the provider's failure, and does not change how it asks", async () => {
    const provider = await providerAgainst([{ kind: "status", status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "messages: too long" } } }]);
    const r = await Agent.for("calculator", { provider, maxGenerationAttempts: 1 }).add(1, 2);
    expect(r).toMatchObject({ ok: false, errorType: "provider" });
    // What the server said, without the raw body around it.
    expect(r.errorMessage).toBe(`The provider failed: The model server failed (HTTP 400): messages: too long`);
    expect(provider.replyMode).toBe("structured");
  });

  test("cached tokens reach the log line, the record names the provider and the model", async () => {
    const provider = await providerAgainst([{ kind: "structured", code: "return 1", usage: { prompt: 2000, completion: 40, cached: 1500, cacheWrite: 200 } }]);
    const log = tempLogPath("improv-anthropic-");
    const agent = Agent.for("calculator", { provider, log });
    await agent.one();
    const [line] = readLogLines(log);
    expect(line).toMatchObject({ provider: "anthropic", model: "claude-test", prompt_tokens: 2000, completion_tokens: 40, cached_tokens: 1500, cache_write_tokens: 200 });
    expect(Agent.history(agent)[0]).toMatchObject({ provider: "anthropic", model: "claude-test" });
  });

  test("reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL, and is the default provider when only ANTHROPIC_API_KEY is set", async () => {
    server = await OpenAITestServer.start([{ kind: "structured", code: "return 'from env'" }]);
    vi.stubEnv("OPENAI_API_KEY", "");
    vi.stubEnv("ANTHROPIC_API_KEY", "env-key");
    vi.stubEnv("ANTHROPIC_BASE_URL", server.origin);
    vi.stubEnv("IMPROV_MODEL", "");
    expect(new AnthropicProvider().model).toBe(DEFAULT_ANTHROPIC_MODEL);
    const r = await Agent.for("greeter").hello();
    expect(r.value).toBe("from env");
    expect(server.requests[0]!.body.model).toBe(DEFAULT_ANTHROPIC_MODEL);
  });

  test("the default model is one the installed SDK knows and does not call deprecated", () => {
    // The SDK warns about the models in this list (with their end-of-life date) on every request; its file is not exported, so it is read by path.
    const sdk = createRequire(import.meta.url).resolve("@anthropic-ai/sdk");
    const deprecated = createRequire(sdk)(join(dirname(sdk), "internal/data/deprecated-models.js")) as { DEPRECATED_MODELS: Record<string, string> };
    expect(Object.keys(deprecated.DEPRECATED_MODELS).length).toBeGreaterThan(0);
    expect(Object.keys(deprecated.DEPRECATED_MODELS)).not.toContain(DEFAULT_ANTHROPIC_MODEL);
    const models = readFileSync(join(dirname(sdk), "resources/messages/messages.d.ts"), "utf8");
    expect(models).toContain(`'${DEFAULT_ANTHROPIC_MODEL}'`);
  });

  test("options are checked at construction", () => {
    expect(() => new AnthropicProvider({ apiKey: "k", max_tokens: 10 } as never)).toThrow('Unknown option "max_tokens" for new AnthropicProvider() (it is spelled "maxTokens").');
    expect(() => new AnthropicProvider({ apiKey: "k", maxTokens: 0 })).toThrow('AnthropicProvider option "maxTokens" must be a whole number of at least 1, got the number 0.');
    expect(() => new AnthropicProvider({ apiKey: "k", replyMode: "json" as never })).toThrow('AnthropicProvider option "replyMode" must be one of "structured", "tool", "text"');
    expect(() => new AnthropicProvider({ apiKey: "k", baseURL: "not a url" })).toThrow('AnthropicProvider option "baseURL" must be a URL');
    expect(() => new AnthropicProvider({ apiKey: "k", maxConcurrentRequests: 0 })).toThrow('AnthropicProvider option "maxConcurrentRequests" must be a whole number of at least 1');
    vi.stubEnv("ANTHROPIC_API_KEY", "");
    expect(() => new AnthropicProvider()).toThrow("AnthropicProvider has no API key. Pass { apiKey } or set the ANTHROPIC_API_KEY environment variable.");
  });

  test("promptCaching: false leaves cache_control out", async () => {
    const provider = await providerAgainst([{ kind: "structured", code: "return 1" }], { promptCaching: false, maxTokens: 512 });
    await Agent.for("calculator", { provider }).one();
    const { body } = server!.requests[0]!;
    expect((body.system as { cache_control?: unknown }[])[0]!.cache_control).toBeUndefined();
    expect(body.max_tokens).toBe(512);
  });
});
