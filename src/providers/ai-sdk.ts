import { createRequire } from "node:module";
import type * as Ai from "ai";
import { checkOptionNames, describeType } from "../shared/index.ts";
import { extractProgram } from "../programs/index.ts";
import { retryAfter, withoutCredentials, withoutSecretsIn } from "./http-failure.ts";
import { PROGRAM_JSON_SCHEMA } from "./provider-options.ts";
import { checkMaxConcurrentRequests, DEFAULT_MAX_CONCURRENT_REQUESTS } from "./request-gate.ts";
import { ProviderError, type Generation, type GenerationRequest, type GenerationUsage, type Provider, type ProviderOptions } from "./provider.ts";

/** What improv reads of an AI SDK language model (`openai("gpt-4.1-mini")`, `anthropic("…")`, `ollama("…")`, …). */
export interface AISDKLanguageModel {
  readonly specificationVersion: string;
  readonly provider: string;
  readonly modelId: string;
}

/** Options of {@link AISDKProvider}. */
export interface AISDKProviderOptions extends ProviderOptions {
  /** Any AI SDK language model. */
  readonly model: AISDKLanguageModel;
  /**
   * Ask for a structured `{ code }` reply. Default: true. When the model cannot give one, the
   * program is taken from its text, and a model that refuses structured output is asked plainly
   * from then on.
   */
  readonly structuredOutput?: boolean | undefined;
  /** The AI SDK's own retries inside one generation attempt. Default: 2. */
  readonly maxRetries?: number | undefined;
  /** The name it goes by on spans, log lines and records. Default: the model's provider (`openai.chat`, `anthropic.messages`, …). */
  readonly name?: string | undefined;
}

const OPTION_NAMES: { readonly [K in keyof AISDKProviderOptions]-?: true } = {
  model: true,
  structuredOutput: true,
  maxRetries: true,
  maxConcurrentRequests: true,
  name: true,
};

/** The names `new AISDKProvider()` accepts. */
export const AI_SDK_PROVIDER_OPTION_NAMES = Object.keys(OPTION_NAMES) as (keyof AISDKProviderOptions)[];

function validateOptions(options: unknown): AISDKProviderOptions {
  if (options === undefined) throw new TypeError('new AISDKProvider() needs { model }: an AI SDK language model such as openai("gpt-4.1-mini").');
  const given = checkOptionNames<AISDKProviderOptions>(options, AI_SDK_PROVIDER_OPTION_NAMES, "new AISDKProvider()") as Record<string, unknown>;
  const model = given.model as Partial<AISDKLanguageModel> | undefined;
  if (typeof model !== "object" || model === null || typeof model.modelId !== "string" || typeof model.specificationVersion !== "string") {
    throw new TypeError(`AISDKProvider option "model" must be an AI SDK language model such as openai("gpt-4.1-mini") (an object with specificationVersion and modelId), got ${describeType(model)}.`);
  }
  if (given.structuredOutput !== undefined && typeof given.structuredOutput !== "boolean") {
    throw new TypeError(`AISDKProvider option "structuredOutput" must be true or false, got ${describeType(given.structuredOutput)}.`);
  }
  if (given.maxRetries !== undefined && (typeof given.maxRetries !== "number" || !Number.isInteger(given.maxRetries) || given.maxRetries < 0)) {
    throw new RangeError(`AISDKProvider option "maxRetries" must be an integer of at least 0, got ${describeType(given.maxRetries)}.`);
  }
  checkMaxConcurrentRequests(given.maxConcurrentRequests, "AISDKProvider");
  if (given.name !== undefined && (typeof given.name !== "string" || given.name === "")) {
    throw new TypeError(`AISDKProvider option "name" must be a non-empty string, got ${describeType(given.name)}.`);
  }
  return options as AISDKProviderOptions;
}

/** The AI SDK, loaded when the first provider is made: it is an optional dependency. */
function loadAi(): typeof Ai {
  try {
    return createRequire(import.meta.url)("ai") as typeof Ai;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "MODULE_NOT_FOUND" || code === "ERR_MODULE_NOT_FOUND") {
      throw new TypeError("AISDKProvider needs the ai package (the AI SDK), which is not installed. Install it: npm install ai", { cause: error });
    }
    throw error;
  }
}

/**
 * A provider for any AI SDK language model: OpenAI, Anthropic, Google, Mistral, Ollama, any
 * OpenAI-compatible server through `createOpenAICompatible`, or a test's mock model.
 *
 * @example
 * import { anthropic } from "@ai-sdk/anthropic";
 * const provider = new AISDKProvider({ model: anthropic("claude-sonnet-5-5") });
 */
export class AISDKProvider implements Provider {
  readonly name: string;
  readonly model: string;
  readonly maxConcurrentRequests: number;
  readonly #model: AISDKLanguageModel;
  readonly #ai: typeof Ai;
  readonly #maxRetries: number;
  #structuredOutput: boolean;

  constructor(options: AISDKProviderOptions) {
    options = validateOptions(options);
    this.#ai = loadAi();
    this.#model = options.model;
    this.model = options.model.modelId;
    this.name = options.name ?? (typeof options.model.provider === "string" && options.model.provider !== "" ? options.model.provider : "ai-sdk");
    this.maxConcurrentRequests = options.maxConcurrentRequests ?? DEFAULT_MAX_CONCURRENT_REQUESTS;
    this.#maxRetries = options.maxRetries ?? 2;
    this.#structuredOutput = options.structuredOutput ?? true;
  }

  async generate(request: GenerationRequest, signal: AbortSignal): Promise<Generation> {
    const { generateText, Output, jsonSchema } = this.#ai;
    const common = { model: this.#model as Ai.LanguageModel, system: request.system, prompt: request.user, abortSignal: signal, maxRetries: this.#maxRetries };
    let result: TextResult;
    try {
      if (this.#structuredOutput) {
        try {
          result = await generateText({ ...common, output: Output.object({ schema: jsonSchema<{ code: string }>(PROGRAM_JSON_SCHEMA as never) }) });
        } catch (error) {
          // A reply that is not the object asked for is still read, as text.
          if (this.#ai.NoObjectGeneratedError.isInstance(error)) result = { text: error.text ?? "", usage: error.usage, response: error.response };
          else if (signal.aborted || !refusesStructuredOutput(error, this.#ai)) throw error;
          else {
            this.#structuredOutput = false;
            result = await generateText(common);
          }
        }
      } else {
        result = await generateText(common);
      }
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      // The model's key is the application's own setting, unknown here: what looks like one is taken out.
      throw withoutSecretsIn(sdkFailure(error, this.#ai));
    }
    const usage = readUsage(result.usage);
    const model = typeof result.response?.modelId === "string" && result.response.modelId !== "" ? result.response.modelId : this.model;
    return { code: programOf(result, request.method), model, ...(usage === undefined ? {} : { usage }) };
  }
}

/** What improv reads of a `generateText` result (reading `output` throws when the text is not the object asked for). */
interface TextResult {
  readonly text: string;
  readonly output?: unknown;
  readonly usage?: Ai.LanguageModelUsage | undefined;
  readonly response?: { readonly modelId?: string | undefined } | undefined;
}

/** The structured reply's `code`, else the program in the reply's text. */
function programOf(result: TextResult, method: string): string | null {
  try {
    const output = result.output as { code?: unknown } | undefined;
    if (typeof output?.code === "string") return output.code.trim() === "" ? null : output.code;
  } catch {
    // The text is not the object asked for: read it as any reply is.
  }
  return extractProgram(result.text, method);
}

/** A refusal of structured output: the model does not support it, or the server rejected the response format. */
function refusesStructuredOutput(error: unknown, ai: typeof Ai): boolean {
  if (ai.UnsupportedFunctionalityError.isInstance(error)) return true;
  const call = lastCallError(error, ai);
  return call !== undefined && call.statusCode === 400 && /response_format|json_schema|structured output|output_config/i.test(`${call.message} ${call.responseBody ?? ""}`);
}

/** The API call error behind `error` (the AI SDK wraps the last one in a RetryError after its retries). */
function lastCallError(error: unknown, ai: typeof Ai): Ai.APICallError | undefined {
  const inner = ai.RetryError.isInstance(error) ? error.lastError : error;
  return ai.APICallError.isInstance(inner) ? inner : undefined;
}

/** The {@link ProviderError} an AI SDK failure becomes. */
function sdkFailure(error: unknown, ai: typeof Ai): ProviderError {
  if (ai.LoadAPIKeyError.isInstance(error)) {
    return new ProviderError(`The AI SDK model has no API key: ${error.message}`, { cause: error, kind: "auth" });
  }
  const call = lastCallError(error, ai);
  if (call === undefined) return new ProviderError(`The model request failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  const server = `The model server at ${withoutCredentials(call.url)}`;
  const status = call.statusCode;
  if (status === undefined) return new ProviderError(`${server} could not be reached: ${call.message}`, { cause: error, kind: "connection" });
  if (status === 401 || status === 403) {
    return new ProviderError(`${server} refused the API key (HTTP ${status}): ${call.message}. Check the model's API key and that it has access to the model; calling again will not help until it changes.`, { cause: error, kind: "auth" });
  }
  if (status === 429) {
    const retryAfterMs = retryAfter(call.responseHeaders === undefined ? undefined : new Headers(call.responseHeaders));
    return new ProviderError(`${server} is limiting the rate of requests (HTTP 429): ${call.message}`, { cause: error, kind: "rate_limit", retryAfterMs });
  }
  return new ProviderError(`The model server failed (HTTP ${status}): ${call.message}`, { cause: error, kind: status >= 500 ? "server" : "request" });
}

function readUsage(usage: Ai.LanguageModelUsage | undefined): GenerationUsage | undefined {
  if (typeof usage !== "object" || usage === null) return undefined;
  const details = usage.inputTokenDetails;
  return {
    promptTokens: usage.inputTokens,
    completionTokens: usage.outputTokens,
    totalTokens: usage.totalTokens,
    ...(typeof details?.cacheReadTokens === "number" ? { cachedTokens: details.cacheReadTokens } : {}),
    ...(typeof details?.cacheWriteTokens === "number" ? { cacheWriteTokens: details.cacheWriteTokens } : {}),
  };
}
