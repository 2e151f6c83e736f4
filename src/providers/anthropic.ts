import { createRequire } from "node:module";
import type * as AnthropicSdk from "@anthropic-ai/sdk";
import type { Message, MessageCreateParamsNonStreaming, TextBlockParam, Tool, Usage } from "@anthropic-ai/sdk/resources/messages";
import { apiKeyFrom, checkOptionNames, describeType, readEnv } from "../shared/index.ts";
import { extractProgram } from "../programs/index.ts";
import { sdkFetch, httpFailure, keyOf } from "./http-failure.ts";
import { checkSharedOptions, PROGRAM_JSON_SCHEMA, type HttpProviderOptions } from "./provider-options.ts";
import { DEFAULT_MAX_CONCURRENT_REQUESTS } from "./request-gate.ts";
import { ProviderError, type Generation, type GenerationRequest, type GenerationUsage, type Provider } from "./provider.ts";

/** The model used when neither the options nor `IMPROV_MODEL` name one. */
export const DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-5-5";

/** The `max_tokens` of a request unless `maxTokens` says otherwise: room for a long method body. */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 8192;

/**
 * How the reply is asked for: a structured `{ code }` object, a forced `write_program` tool
 * call, or plain text (the program taken from it as from any model's reply).
 */
export type AnthropicReplyMode = "structured" | "tool" | "text";

/** Options of {@link AnthropicProvider}. Anything left out is read from the environment. */
export interface AnthropicProviderOptions extends HttpProviderOptions {
  /** `max_tokens` of each request. Default: {@link DEFAULT_ANTHROPIC_MAX_TOKENS}. */
  readonly maxTokens?: number | undefined;
  /**
   * How to ask for the reply first. Default: `"structured"`. A server or model that refuses it
   * (HTTP 400 naming it) is asked the next way from then on: a forced tool, then plain text.
   */
  readonly replyMode?: AnthropicReplyMode | undefined;
  /** Put `cache_control` on the system prompt, which is the same for every call of a role. Default: true. */
  readonly promptCaching?: boolean | undefined;
  /** A ready `@anthropic-ai/sdk` client, for full control over the SDK. */
  readonly client?: AnthropicClient | undefined;
}

/** What improv uses of an `@anthropic-ai/sdk` client. */
export interface AnthropicClient {
  readonly baseURL: string;
  readonly messages: { create(body: never, options?: { signal?: AbortSignal }): PromiseLike<unknown> };
}

const OPTION_NAMES: { readonly [K in keyof AnthropicProviderOptions]-?: true } = {
  apiKey: true,
  baseURL: true,
  model: true,
  maxTokens: true,
  maxRetries: true,
  name: true,
  replyMode: true,
  promptCaching: true,
  maxConcurrentRequests: true,
  client: true,
};

/** The names `new AnthropicProvider()` accepts. */
export const ANTHROPIC_PROVIDER_OPTION_NAMES = Object.keys(OPTION_NAMES) as (keyof AnthropicProviderOptions)[];

const REPLY_MODES: readonly AnthropicReplyMode[] = ["structured", "tool", "text"];

function validateOptions(options: unknown): AnthropicProviderOptions {
  const given = checkOptionNames<AnthropicProviderOptions>(options, ANTHROPIC_PROVIDER_OPTION_NAMES, "new AnthropicProvider()", { baseurl: ' (it is spelled "baseURL")', max_tokens: ' (it is spelled "maxTokens")' }) as Record<string, unknown>;
  checkSharedOptions(given, "AnthropicProvider", "http://127.0.0.1:8080");
  if (given.maxTokens !== undefined && (typeof given.maxTokens !== "number" || !Number.isSafeInteger(given.maxTokens) || given.maxTokens < 1)) {
    throw new RangeError(`AnthropicProvider option "maxTokens" must be a whole number of at least 1, got ${describeType(given.maxTokens)}.`);
  }
  if (given.replyMode !== undefined && !REPLY_MODES.includes(given.replyMode as AnthropicReplyMode)) {
    throw new TypeError(`AnthropicProvider option "replyMode" must be one of ${REPLY_MODES.map((mode) => `"${mode}"`).join(", ")}, got ${describeType(given.replyMode)}.`);
  }
  if (given.promptCaching !== undefined && typeof given.promptCaching !== "boolean") {
    throw new TypeError(`AnthropicProvider option "promptCaching" must be true or false, got ${describeType(given.promptCaching)}.`);
  }
  if (given.client !== undefined && (typeof (given.client as AnthropicClient | null)?.messages?.create !== "function")) {
    throw new TypeError(`AnthropicProvider option "client" must be an Anthropic client (new Anthropic() from @anthropic-ai/sdk), got ${describeType(given.client)}.`);
  }
  return options as AnthropicProviderOptions;
}

/** The SDK, loaded when the first provider is made: it is an optional dependency. */
function loadSdk(): typeof AnthropicSdk {
  try {
    return createRequire(import.meta.url)("@anthropic-ai/sdk") as typeof AnthropicSdk;
  } catch (error) {
    if ((error as { code?: unknown }).code === "MODULE_NOT_FOUND") {
      throw new TypeError("AnthropicProvider needs the @anthropic-ai/sdk package, which is not installed. Install it: npm install @anthropic-ai/sdk", { cause: error });
    }
    throw error;
  }
}

const TOOL_NAME = "write_program";

/**
 * A provider backed by the official `@anthropic-ai/sdk` (Claude models, or any server that speaks
 * Anthropic's Messages API). It asks for a structured `{ code }` reply; a model that cannot give
 * one is asked through a forced tool, and one that refuses forced tools (thinking) in plain text.
 * The system prompt carries `cache_control`, so repeated calls of a role read it from the cache.
 *
 * @example
 * const provider = new AnthropicProvider({ model: "claude-sonnet-5-5" }); // ANTHROPIC_API_KEY
 * const calc = Agent.for("calculator", { provider });
 */
export class AnthropicProvider implements Provider {
  readonly name: string;
  readonly model: string;
  readonly maxConcurrentRequests: number;
  readonly #client: AnthropicClient;
  readonly #sdk: typeof AnthropicSdk;
  readonly #maxTokens: number;
  readonly #promptCaching: boolean;
  /** Moves on (structured → tool → text) for good once the server refuses a way of asking. */
  #mode: AnthropicReplyMode;

  constructor(options: AnthropicProviderOptions = {}) {
    options = validateOptions(options);
    this.name = options.name ?? "anthropic";
    this.#sdk = loadSdk();
    this.model = options.model ?? readEnv("IMPROV_MODEL") ?? DEFAULT_ANTHROPIC_MODEL;
    this.maxConcurrentRequests = options.maxConcurrentRequests ?? DEFAULT_MAX_CONCURRENT_REQUESTS;
    this.#maxTokens = options.maxTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS;
    this.#promptCaching = options.promptCaching ?? true;
    this.#mode = options.replyMode ?? "structured";
    if (options.client) {
      this.#client = options.client;
      return;
    }
    const apiKey = apiKeyFrom(options.apiKey, "ANTHROPIC_API_KEY", "AnthropicProvider");
    const baseURL = options.baseURL ?? readEnv("ANTHROPIC_BASE_URL");
    this.#client = new this.#sdk.Anthropic({ apiKey, ...(baseURL === undefined ? {} : { baseURL }), maxRetries: options.maxRetries ?? 2, fetch: sdkFetch() }) as unknown as AnthropicClient;
  }

  /** The way of asking in use now. */
  get replyMode(): AnthropicReplyMode {
    return this.#mode;
  }

  async generate(request: GenerationRequest, signal: AbortSignal): Promise<Generation> {
    const model = request.model ?? this.model;
    let message: Message;
    try {
      message = await this.#create(request, model, signal);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw httpFailure(error, this.#sdk, { baseURL: this.#client.baseURL, apiKey: keyOf(this.#client), keySetting: "apiKey / ANTHROPIC_API_KEY", urlSetting: "baseURL / ANTHROPIC_BASE_URL" });
    }
    if (typeof message !== "object" || message === null || !Array.isArray(message.content)) {
      throw new ProviderError("The server's reply has no content blocks; it does not look like an Anthropic message.", { kind: "reply" });
    }
    const usage = readUsage(message.usage);
    return { code: programOf(message.content, request.method), model: typeof message.model === "string" ? message.model : model, ...(usage === undefined ? {} : { usage }) };
  }

  /** One request in the current mode; a refusal of that mode moves to the next and asks again. */
  async #create(request: GenerationRequest, model: string, signal: AbortSignal): Promise<Message> {
    for (;;) {
      const mode = this.#mode;
      try {
        return (await this.#client.messages.create(this.#body(request, model, mode) as never, { signal })) as Message;
      } catch (error) {
        const next = mode === "text" ? undefined : refusedMode(error, mode, this.#sdk);
        if (next === undefined || signal.aborted) throw error;
        if (this.#mode === mode) this.#mode = next;
      }
    }
  }

  #body(request: GenerationRequest, model: string, mode: AnthropicReplyMode): MessageCreateParamsNonStreaming {
    const system: TextBlockParam = { type: "text", text: request.system, ...(this.#promptCaching ? { cache_control: { type: "ephemeral" as const } } : {}) };
    const body: MessageCreateParamsNonStreaming = { model, max_tokens: this.#maxTokens, system: [system], messages: [{ role: "user", content: request.user }] };
    if (mode === "structured") return { ...body, output_config: { format: { type: "json_schema", schema: PROGRAM_JSON_SCHEMA } } };
    if (mode === "tool") {
      return {
        ...body,
        tools: [{ name: TOOL_NAME, description: "Hand over the JavaScript body of the method.", input_schema: PROGRAM_JSON_SCHEMA as unknown as Tool["input_schema"] }],
        tool_choice: { type: "tool", name: TOOL_NAME },
      };
    }
    return body;
  }
}

/** The mode to try after a 400 that refuses `mode`, or undefined when the 400 is about something else. */
function refusedMode(error: unknown, mode: AnthropicReplyMode, sdk: typeof AnthropicSdk): AnthropicReplyMode | undefined {
  if (!(error instanceof sdk.APIError) || error.status !== 400) return undefined;
  if (mode === "structured" && /output_config|output_format|json_schema|structured output/i.test(error.message)) return "tool";
  if (mode === "tool" && /tool_choice|tool use|tools?\b|thinking|forced/i.test(error.message)) return "text";
  return undefined;
}

/** The program in a reply: the forced tool's `code`, else the text blocks read as any reply is. */
function programOf(content: readonly unknown[], method: string): string | null {
  for (const block of content) {
    const { type, name, input } = block as { type?: unknown; name?: unknown; input?: { code?: unknown } };
    if (type === "tool_use" && name === TOOL_NAME && typeof input?.code === "string") return input.code.trim() === "" ? null : input.code;
  }
  const text = content
    .filter((block): block is { type: "text"; text: string } => (block as { type?: unknown }).type === "text" && typeof (block as { text?: unknown }).text === "string")
    .map((block) => block.text)
    .join("\n");
  return extractProgram(text, method);
}

/** Token counts; Anthropic's `input_tokens` leaves out the tokens read from or written to the cache, which `promptTokens` counts. */
function readUsage(usage: Usage | undefined): GenerationUsage | undefined {
  if (typeof usage !== "object" || usage === null) return undefined;
  const count = (value: unknown) => (typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined);
  const input = count(usage.input_tokens);
  const completionTokens = count(usage.output_tokens);
  // No usable count is no report, not a request that cost nothing.
  if (input === undefined && completionTokens === undefined) return undefined;
  const cachedTokens = count(usage.cache_read_input_tokens) ?? 0;
  const cacheWriteTokens = count(usage.cache_creation_input_tokens) ?? 0;
  const promptTokens = (input ?? 0) + cachedTokens + cacheWriteTokens;
  return { promptTokens, ...(completionTokens === undefined ? {} : { completionTokens }), totalTokens: promptTokens + (completionTokens ?? 0), cachedTokens, cacheWriteTokens };
}
