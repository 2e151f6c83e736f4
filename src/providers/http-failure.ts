/**
 * Failures of a model server reached through an HTTP SDK (`openai`, `@anthropic-ai/sdk`: both
 * made by the same generator, with the same error classes), told apart and worded once: what
 * kind of failure it was, how long a rate limit asks to wait, and a message that names the
 * server (without credentials) and the setting to check.
 */
import { causesOf, errorCode, innermostError } from "../shared/index.ts";
import { ProviderError } from "./provider.ts";

type ErrorClass<E> = abstract new (...args: never[]) => E;

/** The error classes of such an SDK. */
export interface SdkErrors {
  readonly APIError: ErrorClass<Error & { readonly status?: number | undefined; readonly headers?: Headers | undefined; readonly error?: unknown }>;
  readonly APIConnectionError: ErrorClass<Error>;
  readonly APIConnectionTimeoutError: ErrorClass<Error>;
}

/** The server asked and the settings that point to it, as a message names them. */
export interface ServerSettings {
  readonly baseURL: string;
  /** The key sent: taken out of what the server says, should it echo it. */
  readonly apiKey?: string | undefined;
  /** e.g. `"apiKey / OPENAI_API_KEY"`. */
  readonly keySetting: string;
  /** e.g. `"baseURL / OPENAI_BASE_URL"`. */
  readonly urlSetting: string;
}

/**
 * The {@link ProviderError} a failed request becomes; its message holds nothing of the key, nor
 * anything shaped like a credential, whatever the server said (a message that repeats the key it
 * refused, a proxy that echoes the request's headers).
 */
export function httpFailure(error: unknown, errors: SdkErrors, settings: ServerSettings): ProviderError {
  return withoutSecretsIn(describeFailure(error, errors, settings), settings.apiKey);
}

/** `failure` itself when its message holds nothing of `key` nor anything shaped like a credential; else the same failure with them taken out. */
export function withoutSecretsIn(failure: ProviderError, key?: string): ProviderError {
  const message = withoutSecrets(failure.message, key);
  return message === failure.message ? failure : new ProviderError(message, { cause: failure.cause, kind: failure.kind, retriable: failure.retriable, retryAfterMs: failure.retryAfterMs });
}

function describeFailure(error: unknown, errors: SdkErrors, settings: ServerSettings): ProviderError {
  const server = `The model server at ${withoutCredentials(settings.baseURL)}`;
  if (error instanceof errors.APIConnectionTimeoutError) {
    return new ProviderError(`${server} did not answer in time (the SDK's own timeout).`, { cause: error, kind: "connection" });
  }
  if (error instanceof errors.APIConnectionError) {
    const cause = rootCause(error);
    const detail = cause === undefined ? "" : ` (${cause})`;
    return new ProviderError(`${server} could not be reached${detail}. Check that it runs and that ${settings.urlSetting} points to it.`, { cause: error, kind: "connection" });
  }
  if (error instanceof errors.APIError) {
    const { status } = error;
    if (status === 401 || status === 403) {
      return new ProviderError(
        `${server} refused the API key (HTTP ${status}): ${detailOf(error)}. Check the key (${settings.keySetting}) and that it has access to the model; calling again will not help until it changes.`,
        { cause: error, kind: "auth" },
      );
    }
    if (status === 429) {
      const retryAfterMs = retryAfter(error.headers);
      const wait = retryAfterMs === undefined ? "" : `; it asks to wait ${formatWait(retryAfterMs)}`;
      return new ProviderError(`${server} is limiting the rate of requests (HTTP 429${wait}): ${detailOf(error)}`, { cause: error, kind: "rate_limit", retryAfterMs });
    }
    const code = status === undefined ? "" : ` (HTTP ${status})`;
    const kind = status === undefined || status >= 500 ? "server" : "request";
    return new ProviderError(`The model server failed${code}: ${detailOf(error)}`, { cause: error, kind });
  }
  if (error instanceof SyntaxError) return new ProviderError(`The model server sent a body that is not valid JSON: ${error.message}`, { cause: error, kind: "reply" });
  const causes = causesOf(error);
  const tooLarge = causes.find((cause) => cause instanceof ReplyTooLarge);
  if (tooLarge !== undefined) return new ProviderError(`${server} failed: ${tooLarge.message}.`, { cause: error, kind: "reply" });
  // undici's "terminated": the connection closed while the reply's body was read.
  if (causes.some((cause) => CUT_OFF_CODES.has(errorCode(cause) ?? "") || (cause instanceof TypeError && cause.message === "terminated"))) {
    return new ProviderError(`${server} cut its reply off: the connection closed while it was read.`, { cause: error, kind: "connection" });
  }
  return new ProviderError(`The model request failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}

/**
 * What the server said: the message inside its error body (`{ error: { message } }`, or
 * Anthropic's `{ type: "error", error: { message } }`), else the SDK's message without the
 * status it starts with.
 */
function detailOf(error: Error & { readonly error?: unknown }): string {
  const body = error.error as { message?: unknown; error?: { message?: unknown } } | undefined;
  const inner = body?.error?.message ?? body?.message;
  if (typeof inner === "string" && inner.trim() !== "") return inner;
  return error.message.replace(/^\d{3}\s+/, "");
}

/** What credentials look like in a server's words: an authorization value, an API key header, a key of the common `sk-…` form. */
const CREDENTIAL_SHAPES: readonly [RegExp, string][] = [
  [/\b(Bearer|Basic)\s+[\w.~+/=-]{8,}/gi, "$1 [redacted]"],
  [/\b(authorization|proxy-authorization|x-api-key|api-key)(["']?\s*[:=]\s*["']?)(?:Bearer\s+|Basic\s+)?[^\s"',;}]+/gi, "$1$2[redacted]"],
  [/\b(?:sk|pk|rk)-[\w-]{12,}/g, "[redacted]"],
];

/** The largest reply improv reads from a model server, as decoded: a program is far smaller. @unit bytes */
export const MAX_REPLY_BYTES = 16 * 1024 * 1024;

/** A reply past {@link MAX_REPLY_BYTES}, stopped as it was read. */
export class ReplyTooLarge extends Error {
  override readonly name = "ReplyTooLarge";
  constructor() {
    super(`the server's reply is larger than 16 MiB (${MAX_REPLY_BYTES} bytes, decoded), far more than any program; it was not read further`);
  }
}

/**
 * `fetch` for an SDK client. It tells the SDK not to retry a rate limit (`x-should-retry: false`,
 * which both SDKs heed): the SDK would sleep out a wait of up to a minute inside the request,
 * where improv waits it out, or goes to the next provider, as its own rules say. And it reads no
 * more than {@link MAX_REPLY_BYTES} of a reply: a small compressed body can decode to gigabytes.
 */
export function sdkFetch(): typeof fetch {
  return async (input, init) => {
    // The global one at each request, as instrumentation may wrap it after the client was made.
    const response = await globalThis.fetch(input, init);
    const headers = new Headers(response.headers);
    if (response.status === 429) headers.set("x-should-retry", "false");
    return new Response(response.body === null ? null : response.body.pipeThrough(boundedBody()), { status: response.status, statusText: response.statusText, headers });
  };
}

function boundedBody(): TransformStream<Uint8Array, Uint8Array> {
  let read = 0;
  return new TransformStream({
    transform(chunk, controller) {
      read += chunk.byteLength;
      if (read > MAX_REPLY_BYTES) controller.error(new ReplyTooLarge());
      else controller.enqueue(chunk);
    },
  });
}

/** The codes of a connection lost while a reply was read. */
const CUT_OFF_CODES = new Set(["UND_ERR_SOCKET", "ECONNRESET", "EPIPE", "UND_ERR_ABORTED"]);

/** The key an SDK client sends, when it holds one as a string. */
export function keyOf(client: object): string | undefined {
  const key = (client as { apiKey?: unknown }).apiKey;
  return typeof key === "string" ? key : undefined;
}

/** `text` without `key` (when one is known) and without anything shaped like a credential. */
export function withoutSecrets(text: string, key?: string): string {
  let cleaned = key !== undefined && key.length >= 8 ? text.split(key).join("[redacted]") : text;
  for (const [shape, replacement] of CREDENTIAL_SHAPES) cleaned = cleaned.replace(shape, replacement);
  return cleaned;
}

/** How long a response's `retry-after-ms` or `retry-after` (seconds or an HTTP date) asks to wait. @unit ms */
export function retryAfter(headers: Headers | undefined, now = Date.now()): number | undefined {
  if (headers === undefined || typeof headers.get !== "function") return undefined;
  const ms = Number.parseFloat(headers.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return Math.ceil(ms);
  const value = headers.get("retry-after")?.trim();
  if (value === undefined || value === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function formatWait(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`;
}

/** A URL fit for a message that lands in history and prompts: no user, password or query. */
export function withoutCredentials(url: string): string {
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
  if (!(error.cause instanceof Error)) return undefined;
  const innermost = innermostError(error.cause, 4) as Error;
  const code = errorCode(innermost);
  return code === undefined ? innermost.message : `${code}: ${innermost.message}`;
}
