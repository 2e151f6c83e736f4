import type OpenAI from "openai";
import { apiKeyFrom, checkOptionNames, describeType, loadOpenAI, readEnv } from "../shared/index.ts";
import { extractProgram } from "../programs/index.ts";
import { sdkFetch, httpFailure, keyOf } from "./http-failure.ts";
import { checkSharedOptions, PROGRAM_JSON_SCHEMA, type HttpProviderOptions } from "./provider-options.ts";
import { DEFAULT_MAX_CONCURRENT_REQUESTS } from "./request-gate.ts";
import { ProviderError, type Generation, type GenerationRequest, type GenerationUsage, type Provider } from "./provider.ts";

/** The model used when neither the options nor `IMPROV_MODEL` name one. */
export const DEFAULT_OPENAI_MODEL = "gpt-4.1-mini";

/** Options of {@link OpenAIProvider}. Anything left out is read from the environment. */
export interface OpenAIProviderOptions extends HttpProviderOptions {
  /**
   * Ask for structured output (`{ code }`). Default: true. A server that rejects
   * `response_format` (HTTP 400 naming it) is asked plainly from then on.
   */
  readonly structuredOutput?: boolean | undefined;
  /** A ready client, for full control over the SDK. */
  readonly client?: OpenAI | undefined;
}

const OPTION_NAMES: { readonly [K in keyof OpenAIProviderOptions]-?: true } = {
  apiKey: true,
  baseURL: true,
  model: true,
  maxRetries: true,
  name: true,
  structuredOutput: true,
  maxConcurrentRequests: true,
  client: true,
};

/** The names `new OpenAIProvider()` accepts. */
export const OPENAI_PROVIDER_OPTION_NAMES = Object.keys(OPTION_NAMES) as (keyof OpenAIProviderOptions)[];

/** Checks options as `Agent.for()` does: unknown names and wrong types are a `TypeError` / `RangeError` at once. */
function validateOptions(options: unknown): OpenAIProviderOptions {
  const given = checkOptionNames<OpenAIProviderOptions>(options, OPENAI_PROVIDER_OPTION_NAMES, "new OpenAIProvider()", { baseurl: ' (it is spelled "baseURL")' }) as Record<string, unknown>;
  checkSharedOptions(given, "OpenAIProvider", "http://127.0.0.1:11434/v1");
  if (given.structuredOutput !== undefined && typeof given.structuredOutput !== "boolean") {
    throw new TypeError(`OpenAIProvider option "structuredOutput" must be true or false, got ${describeType(given.structuredOutput)}.`);
  }
  if (given.client !== undefined && (typeof given.client !== "object" || given.client === null)) {
    throw new TypeError(`OpenAIProvider option "client" must be an OpenAI client, got ${describeType(given.client)}.`);
  }
  return options as OpenAIProviderOptions;
}

const PROGRAM_SCHEMA = {
  name: "program",
  strict: true,
  schema: PROGRAM_JSON_SCHEMA,
} as const;

/**
 * A provider backed by the official `openai` SDK, so any OpenAI-compatible server works
 * (OpenAI, Azure, Ollama, vLLM, LM Studio) through `baseURL`.
 *
 * @example
 * const provider = new OpenAIProvider({ baseURL: "http://127.0.0.1:11434/v1", model: "qwen2.5-coder" });
 */
export class OpenAIProvider implements Provider {
  readonly name: string;
  readonly model: string;
  readonly maxConcurrentRequests: number;
  /** The client: the application's, or one made on the first request. */
  #client: OpenAI | Promise<OpenAI>;
  /** Turned off for good once the server rejects `response_format` (many compatible servers do). */
  #structuredOutput: boolean;

  constructor(options: OpenAIProviderOptions = {}) {
    options = validateOptions(options);
    this.name = options.name ?? "openai";
    this.model = options.model ?? readEnv("IMPROV_MODEL") ?? DEFAULT_OPENAI_MODEL;
    this.#structuredOutput = options.structuredOutput ?? true;
    this.maxConcurrentRequests = options.maxConcurrentRequests ?? DEFAULT_MAX_CONCURRENT_REQUESTS;
    if (options.client) {
      this.#client = options.client;
      return;
    }
    const apiKey = apiKeyFrom(options.apiKey, "OPENAI_API_KEY", "OpenAIProvider");
    const baseURL = options.baseURL ?? readEnv("OPENAI_BASE_URL");
    const settings = { apiKey, ...(baseURL === undefined ? {} : { baseURL }), maxRetries: options.maxRetries ?? 2, fetch: sdkFetch() };
    this.#client = loadOpenAI().then(({ default: Client }) => (this.#client = new Client(settings)));
    // A failure to load the SDK is the first request's to report.
    this.#client.catch(() => undefined);
  }

  /** One chat completion; falls back to a plain request once if the server rejects structured output. */
  async #complete(client: OpenAI, request: GenerationRequest, model: string, signal: AbortSignal): Promise<OpenAI.Chat.Completions.ChatCompletion> {
    const messages = [
      { role: "system" as const, content: request.system },
      { role: "user" as const, content: request.user },
    ];
    if (this.#structuredOutput) {
      try {
        return await client.chat.completions.create(
          { model, messages, response_format: { type: "json_schema", json_schema: PROGRAM_SCHEMA } },
          { signal },
        );
      } catch (error) {
        if (!rejectsResponseFormat(error, (await loadOpenAI()).APIError)) throw error;
        this.#structuredOutput = false;
      }
    }
    return client.chat.completions.create({ model, messages }, { signal });
  }

  async generate(request: GenerationRequest, signal: AbortSignal): Promise<Generation> {
    const model = request.model ?? this.model;
    const client = await this.#client;
    let completion: OpenAI.Chat.Completions.ChatCompletion;
    try {
      completion = await this.#complete(client, request, model, signal);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      const { APIError, APIConnectionError, APIConnectionTimeoutError } = await loadOpenAI();
      throw httpFailure(error, { APIError, APIConnectionError, APIConnectionTimeoutError }, { baseURL: client.baseURL, apiKey: keyOf(client), keySetting: "apiKey / OPENAI_API_KEY", urlSetting: "baseURL / OPENAI_BASE_URL" });
    }
    if (!completion || !Array.isArray(completion.choices)) {
      throw new ProviderError("The server's reply has no choices; it does not look like an OpenAI chat completion.", { kind: "reply" });
    }
    const content = completion.choices[0]?.message?.content ?? null;
    const usage = readUsage(completion.usage);
    return { code: extractProgram(content, request.method), model: completion.model ?? model, ...(usage === undefined ? {} : { usage }) };
  }
}

/** Token counts from a completion's `usage`; cached tokens from `prompt_tokens_details`. */
function readUsage(usage: OpenAI.CompletionUsage | undefined): GenerationUsage | undefined {
  if (typeof usage !== "object" || usage === null) return undefined;
  const cached = usage.prompt_tokens_details?.cached_tokens;
  return {
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
    totalTokens: usage.total_tokens,
    ...(typeof cached === "number" ? { cachedTokens: cached } : {}),
  };
}

/** A 400 that says the server does not support structured output. */
function rejectsResponseFormat(error: unknown, APIError: typeof import("openai").APIError): boolean {
  return error instanceof APIError && error.status === 400 && /response_format|json_schema|structured output/i.test(error.message);
}
