/** The contract between a dynamic call and whatever writes its program. */

/** What a provider is asked for: one method body for one agent. */
export interface GenerationRequest {
  /** The agent's role, e.g. `"calculator"`. */
  readonly role: string;
  /** The method being called, e.g. `"add"`. */
  readonly method: string;
  /** 1 for the first attempt of a call, 2 for its first retry, and so on. */
  readonly attempt: number;
  /** The rendered system prompt. */
  readonly system: string;
  /** The rendered user prompt. */
  readonly user: string;
  /** The model named in the agent's options, if any. */
  readonly model?: string | undefined;
  /**
   * The call's positional and named arguments (for providers that script by them; a model gets
   * them in `user`). Like the prompts, redacted once the call's tree sent credentials:
   * then they are JSON data, as the call's record holds them (a `Map`, `Date` or `BigInt` a
   * marker such as `"[Map(1)]"`, a long string cut).
   */
  readonly args?: readonly unknown[] | undefined;
  readonly kwargs?: Readonly<Record<string, unknown>> | undefined;
  /** For a retry after a failed program: that program and how it failed (also in `user`'s feedback block). */
  readonly feedback?: { readonly code: string; readonly error: string } | undefined;
}

/** Token counts, when the provider reports them. */
export interface GenerationUsage {
  /** Every input token, those read from or written to a prompt cache included. */
  readonly promptTokens?: number | undefined;
  readonly completionTokens?: number | undefined;
  readonly totalTokens?: number | undefined;
  /** Input tokens read from the server's prompt cache (part of `promptTokens`). */
  readonly cachedTokens?: number | undefined;
  /** Input tokens written to the server's prompt cache (part of `promptTokens`). */
  readonly cacheWriteTokens?: number | undefined;
}

/** A provider's answer: the program text, or `null` when it produced none. */
export interface Generation {
  readonly code: string | null;
  readonly model: string;
  readonly usage?: GenerationUsage;
}

/**
 * Anything that can write a method body. Implementations reject (or throw) to report a
 * provider failure; a dynamic call turns that into a `provider` outcome.
 *
 * @example
 * const echo: Provider = { generate: async () => ({ code: "return args[0]", model: "echo" }) };
 */
export interface Provider {
  /** How it is named on spans (`gen_ai.provider.name`), records and log lines. Default: `"custom"`. */
  readonly name?: string | undefined;
  /** The model it asks when a call names none (`gen_ai.request.model` on chat spans). */
  readonly model?: string | undefined;
  /** Requests it is sent at once, from all agents; more wait their turn in improv. Default: 16. */
  readonly maxConcurrentRequests?: number | undefined;
  generate(request: GenerationRequest, signal: AbortSignal): Promise<Generation>;
}

/**
 * The options every provider of improv's takes. A provider written by the application is read
 * through {@link Provider}'s own members (`name`, `model`, `maxConcurrentRequests`).
 */
export interface ProviderOptions {
  /** Requests this provider sends at once, from all agents; more wait their turn in improv. Default: 16 (`ScriptedProvider`: no cap). */
  readonly maxConcurrentRequests?: number | undefined;
}

/** How `provider` is named on spans, log lines and records: its `name`, else `custom` (a provider of the application's may be plain JavaScript). */
export function providerName(provider: Provider): string {
  const { name } = provider;
  return typeof name === "string" && name !== "" ? name : "custom";
}

/** The model `provider` says it asks when a call names none, if it says. */
export function providerModel(provider: Provider): string | undefined {
  const { model } = provider;
  return typeof model === "string" ? model : undefined;
}

/** Whether `value` looks like a {@link Provider}. */
export function isProvider(value: unknown): value is Provider {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { generate?: unknown }).generate === "function"
  );
}

/**
 * What kind of failure a provider met, when it knows: the server could not be reached
 * (`connection`), failed itself (`server`, HTTP 5xx), asked to slow down (`rate_limit`, HTTP
 * 429), refused the key (`auth`, HTTP 401/403), refused the request (`request`, another 4xx), or
 * sent a reply that is not what was asked for (`reply`). With several providers, the next one is
 * asked after `connection`, `server` and a `rate_limit` whose wait is long.
 */
export type ProviderFailureKind = "connection" | "server" | "rate_limit" | "auth" | "request" | "reply";

/** A failure a provider reports on purpose (as opposed to a bug in it). */
export class ProviderError extends Error {
  override readonly name = "ProviderError";
  /** What kind of failure it was, when the provider knows. */
  readonly kind: ProviderFailureKind | undefined;
  /** For a `rate_limit`: how long the server asked to wait before asking again, when it said. @unit ms */
  readonly retryAfterMs: number | undefined;
  /**
   * False when asking again cannot help until something outside changes (an authentication
   * failure: the key is wrong or lacks access): improv then makes no further attempt, and the
   * call's outcome is not retriable. Default true.
   */
  readonly retriable: boolean;

  constructor(message: string, options: { cause?: unknown; retriable?: boolean | undefined; kind?: ProviderFailureKind | undefined; retryAfterMs?: number | undefined } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = options.kind;
    this.retriable = options.retriable ?? options.kind !== "auth";
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** Settles after `ms` milliseconds, or rejects with the signal's reason when it aborts first. */
export function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
