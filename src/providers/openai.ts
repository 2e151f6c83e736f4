import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from "openai";
import { readEnv } from "../env.ts";
import { checkOptionNames, describeType } from "../option-check.ts";
import { extractProgram } from "../programs/extract.ts";
import { ProviderError, type Generation, type GenerationRequest, type Provider } from "./provider.ts";

/** The model used when neither the options nor `IMPROV_MODEL` name one. */
export const DEFAULT_OPENAI_MODEL = "gpt-4.1-mini";

/** Options of {@link OpenAIProvider}. Anything left out is read from the environment. */
export interface OpenAIProviderOptions {
  /** API key. Default: `OPENAI_API_KEY`. */
  readonly apiKey?: string | undefined;
  /** Base URL of any OpenAI-compatible server. Default: `OPENAI_BASE_URL`, else OpenAI's. */
  readonly baseURL?: string | undefined;
  /** Model name. Default: `IMPROV_MODEL`, else {@link DEFAULT_OPENAI_MODEL}. */
  readonly model?: string | undefined;
  /** HTTP retries inside one generation attempt (429, 5xx, connection errors). Default: 2. */
  readonly maxRetries?: number | undefined;
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
  structuredOutput: true,
  client: true,
};

/** The names `new OpenAIProvider()` accepts. */
export const OPENAI_PROVIDER_OPTION_NAMES = Object.keys(OPTION_NAMES) as (keyof OpenAIProviderOptions)[];

/** Checks options as `Agent.for()` does: unknown names and wrong types are a `TypeError` / `RangeError` at once. */
function validateOptions(options: unknown): OpenAIProviderOptions {
  const given = checkOptionNames<OpenAIProviderOptions>(options, OPENAI_PROVIDER_OPTION_NAMES, "new OpenAIProvider()", { baseurl: ' (it is spelled "baseURL")' }) as Record<string, unknown>;
  for (const name of ["apiKey", "baseURL", "model"] as const) {
    if (given[name] !== undefined && typeof given[name] !== "string") {
      throw new TypeError(`OpenAIProvider option "${name}" must be a string, got ${describeType(given[name])}.`);
    }
  }
  if (given.baseURL !== undefined && !URL.canParse(given.baseURL as string)) {
    throw new TypeError(`OpenAIProvider option "baseURL" must be a URL such as http://127.0.0.1:11434/v1, got ${describeType(given.baseURL)}.`);
  }
  if (given.maxRetries !== undefined && (typeof given.maxRetries !== "number" || !Number.isInteger(given.maxRetries) || given.maxRetries < 0)) {
    throw new RangeError(`OpenAIProvider option "maxRetries" must be an integer of at least 0, got ${describeType(given.maxRetries)}.`);
  }
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
  schema: {
    type: "object",
    properties: { code: { type: "string", description: "The JavaScript body of the async method." } },
    required: ["code"],
    additionalProperties: false,
  },
} as const;

/**
 * A provider backed by the official `openai` SDK, so any OpenAI-compatible server works
 * (OpenAI, Azure, Ollama, vLLM, LM Studio) through `baseURL`.
 *
 * @example
 * const provider = new OpenAIProvider({ baseURL: "http://127.0.0.1:11434/v1", model: "qwen2.5-coder" });
 */
export class OpenAIProvider implements Provider {
  readonly model: string;
  readonly #client: OpenAI;
  /** Turned off for good once the server rejects `response_format` (many compatible servers do). */
  #structuredOutput: boolean;

  constructor(options: OpenAIProviderOptions = {}) {
    options = validateOptions(options);
    this.model = options.model ?? readEnv("IMPROV_MODEL") ?? DEFAULT_OPENAI_MODEL;
    this.#structuredOutput = options.structuredOutput ?? true;
    if (options.client) {
      this.#client = options.client;
      return;
    }
    const apiKey = options.apiKey?.trim() || readEnv("OPENAI_API_KEY");
    if (apiKey === undefined) {
      const given = options.apiKey === undefined ? "" : " (the apiKey given is blank)";
      throw new TypeError(`OpenAIProvider has no API key${given}. Pass { apiKey } or set the OPENAI_API_KEY environment variable.`);
    }
    const baseURL = options.baseURL ?? readEnv("OPENAI_BASE_URL");
    this.#client = new OpenAI({
      apiKey,
      ...(baseURL === undefined ? {} : { baseURL }),
      maxRetries: options.maxRetries ?? 2,
    });
  }

  /** One chat completion; falls back to a plain request once if the server rejects structured output. */
  async #complete(request: GenerationRequest, model: string, signal: AbortSignal): Promise<OpenAI.Chat.Completions.ChatCompletion> {
    const messages = [
      { role: "system" as const, content: request.system },
      { role: "user" as const, content: request.user },
    ];
    if (this.#structuredOutput) {
      try {
        return await this.#client.chat.completions.create(
          { model, messages, response_format: { type: "json_schema", json_schema: PROGRAM_SCHEMA } },
          { signal },
        );
      } catch (error) {
        if (!rejectsResponseFormat(error)) throw error;
        this.#structuredOutput = false;
      }
    }
    return this.#client.chat.completions.create({ model, messages }, { signal });
  }

  async generate(request: GenerationRequest, signal: AbortSignal): Promise<Generation> {
    const model = request.model ?? this.model;
    let completion: OpenAI.Chat.Completions.ChatCompletion;
    try {
      completion = await this.#complete(request, model, signal);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      // A key the server refuses stays refused: asking again cannot help until it changes.
      const refused = error instanceof APIError && (error.status === 401 || error.status === 403);
      throw new ProviderError(describeFailure(error, this.#client.baseURL), { cause: error, retriable: !refused });
    }
    if (!completion || !Array.isArray(completion.choices)) {
      throw new ProviderError("The server's reply has no choices; it does not look like an OpenAI chat completion.");
    }
    const content = completion.choices[0]?.message?.content ?? null;
    const usage = completion.usage;
    return {
      code: extractProgram(content, request.method),
      model: completion.model ?? model,
      ...(usage
        ? { usage: { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, totalTokens: usage.total_tokens } }
        : {}),
    };
  }
}

/** A 400 that says the server does not support structured output. */
function rejectsResponseFormat(error: unknown): boolean {
  return error instanceof APIError && error.status === 400 && /response_format|json_schema|structured output/i.test(error.message);
}

function describeFailure(error: unknown, baseURL: string): string {
  if (error instanceof APIConnectionTimeoutError) {
    return `The model server at ${withoutCredentials(baseURL)} did not answer in time (the SDK's own timeout).`;
  }
  if (error instanceof APIConnectionError) {
    const cause = rootCause(error);
    const detail = cause === undefined ? "" : ` (${cause})`;
    return `The model server at ${withoutCredentials(baseURL)} could not be reached${detail}. Check that it runs and that baseURL / OPENAI_BASE_URL points to it.`;
  }
  if (error instanceof APIError) {
    if (error.status === 401 || error.status === 403) {
      return `The model server at ${withoutCredentials(baseURL)} refused the API key (HTTP ${error.status}): ${error.message}. Check the key (apiKey / OPENAI_API_KEY) and that it has access to the model; calling again will not help until it changes.`;
    }
    const status = error.status === undefined ? "" : ` (HTTP ${error.status})`;
    return `The model server failed${status}: ${error.message}`;
  }
  if (error instanceof SyntaxError) return `The model server sent a body that is not valid JSON: ${error.message}`;
  return `The model request failed: ${error instanceof Error ? error.message : String(error)}`;
}

/** A URL fit for a message that lands in history and prompts: no user, password or query. */
function withoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = "";
    parsed.password = "";
    parsed.search = "";
    return parsed.href.replace(/\/$/, "");
  } catch {
    return "(the configured base URL)";
  }
}

/** The innermost cause of a connection failure, as "CODE: message" (e.g. ECONNREFUSED). */
function rootCause(error: Error): string | undefined {
  let current: unknown = error.cause;
  let found: string | undefined;
  for (let depth = 0; depth < 5 && current instanceof Error; depth += 1) {
    const code = (current as { code?: unknown }).code;
    found = typeof code === "string" ? `${code}: ${current.message}` : current.message;
    current = current.cause;
  }
  return found;
}
