/** The options every HTTP provider shares (key, server, model, retries, concurrency), checked the same way. */
import { describeType } from "../shared/index.ts";
import type { ProviderOptions } from "./provider.ts";
import { checkMaxConcurrentRequests } from "./request-gate.ts";

/** The options the HTTP providers (`OpenAIProvider`, `AnthropicProvider`) share. Anything left out is read from the environment. */
export interface HttpProviderOptions extends ProviderOptions {
  /** API key. Default: the provider's environment variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`). */
  readonly apiKey?: string | undefined;
  /** Base URL of the server. Default: the provider's environment variable (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`), else the vendor's. */
  readonly baseURL?: string | undefined;
  /** Model name. Default: `IMPROV_MODEL`, else the provider's default model. */
  readonly model?: string | undefined;
  /** HTTP retries inside one generation attempt (5xx, connection errors; a rate limit is improv's to wait out). Default: 2. */
  readonly maxRetries?: number | undefined;
  /**
   * The name it goes by on spans, log lines and records: give two providers of one kind in a
   * list names of their own, so a record says which answered. Default: `openai` / `anthropic`.
   */
  readonly name?: string | undefined;
}

/** Checks the shared options present in `given`: a `TypeError` / `RangeError` naming `owner` (`"OpenAIProvider"`). */
export function checkSharedOptions(given: Readonly<Record<string, unknown>>, owner: string, exampleURL: string): void {
  for (const name of ["apiKey", "baseURL", "model"] as const) {
    if (given[name] !== undefined && typeof given[name] !== "string") {
      throw new TypeError(`${owner} option "${name}" must be a string, got ${describeType(given[name])}.`);
    }
  }
  if (given.baseURL !== undefined && !URL.canParse(given.baseURL as string)) {
    throw new TypeError(`${owner} option "baseURL" must be a URL such as ${exampleURL}, got ${describeType(given.baseURL)}.`);
  }
  if (given.maxRetries !== undefined && (typeof given.maxRetries !== "number" || !Number.isInteger(given.maxRetries) || given.maxRetries < 0)) {
    throw new RangeError(`${owner} option "maxRetries" must be an integer of at least 0, got ${describeType(given.maxRetries)}.`);
  }
  checkMaxConcurrentRequests(given.maxConcurrentRequests, owner);
  if (given.name !== undefined && (typeof given.name !== "string" || given.name.trim() === "" || given.name.length > 200)) {
    throw new TypeError(`${owner} option "name" must be a non-empty string of at most 200 characters, got ${describeType(given.name)}.`);
  }
}

/** The JSON Schema of a structured reply: `{ code }`, the method body. */
export const PROGRAM_JSON_SCHEMA = {
  type: "object",
  properties: { code: { type: "string", description: "The JavaScript body of the async method." } },
  required: ["code"],
  additionalProperties: false,
} as const;
