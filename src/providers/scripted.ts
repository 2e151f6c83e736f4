import { checkOptionNames, describeType, unknownNameMessage } from "../shared/index.ts";
import { delay, ProviderError, type Generation, type GenerationRequest, type GenerationUsage, type Provider, type ProviderFailureKind, type ProviderOptions } from "./provider.ts";
import { checkMaxConcurrentRequests } from "./request-gate.ts";

/**
 * One scripted answer:
 * - a program string;
 * - `null` or `""`: an invalid payload (the call retries, then ends `invalid_code`);
 * - `{ error, kind?, retryAfterMs? }`: a provider failure with that message (and, to stand in
 *   for a server, what kind of failure it was: `kind: "rate_limit", retryAfterMs: 2000`);
 * - `{ code, delayMs?, usage? }`: the program `code`, answered after `delayMs` milliseconds,
 *   reporting `usage` tokens.
 */
export type ScriptedEntry =
  | string
  | null
  | { readonly error: string; readonly kind?: ProviderFailureKind | undefined; readonly retryAfterMs?: number | undefined }
  | { readonly code: string | null; readonly delayMs?: number | undefined; readonly usage?: GenerationUsage | undefined };

/** A key's answer: one entry, a list consumed one entry per request (the last repeats), or a function that picks the entry for each request. */
export type ScriptedProgram = ScriptedEntry | readonly ScriptedEntry[] | ((request: GenerationRequest) => ScriptedEntry);

/** Options of {@link ScriptedProvider}. */
export interface ScriptedProviderOptions extends ProviderOptions {
  /**
   * Programs by `method` or `role.method` (role-qualified wins), or a function that picks the
   * entry for each request.
   */
  readonly programs: Readonly<Record<string, ScriptedProgram>> | ((request: GenerationRequest) => ScriptedEntry);
  /** The model name reported in generations. Default: `"scripted"`. */
  readonly model?: string | undefined;
  /** The name it goes by on spans, log lines and records. Default: `"improv.scripted"`. */
  readonly name?: string | undefined;
}

/** A request as {@link ScriptedProvider} recorded it. */
export interface ScriptedCall {
  readonly role: string;
  readonly method: string;
  readonly attempt: number;
  readonly system: string;
  readonly user: string;
  readonly args: readonly unknown[];
  readonly kwargs: Readonly<Record<string, unknown>>;
  /** For a retry after a failed program: that program and how it failed. */
  readonly feedback: { readonly code: string; readonly error: string } | undefined;
}

/**
 * The deterministic provider for tests, examples and the offline demo.
 *
 * @example
 * const provider = new ScriptedProvider({
 *   programs: { add: "return args[0] + args[1]", "calculator.answer": [null, "return 42"] },
 * });
 * const calc = Agent.for("calculator", { provider });
 */
export class ScriptedProvider implements Provider {
  readonly name: string;
  readonly maxConcurrentRequests: number;
  /** Every request received, in order. */
  readonly calls: ScriptedCall[] = [];
  readonly #programs: ScriptedProviderOptions["programs"];
  readonly #model: string;
  readonly #consumed = new Map<string, number>();

  constructor(options: ScriptedProviderOptions) {
    if (typeof options !== "object" || options === null) {
      throw new TypeError("ScriptedProvider needs an options object: new ScriptedProvider({ programs: { add: \"return args[0] + args[1]\" } }).");
    }
    checkOptionNames(options, ["programs", "model", "name", "maxConcurrentRequests"], "new ScriptedProvider()");
    const { programs } = options;
    if (typeof programs !== "function" && (typeof programs !== "object" || programs === null || Array.isArray(programs))) {
      throw new TypeError("ScriptedProvider option \"programs\" must be an object of programs by method name, or a function (request) => entry.");
    }
    if (typeof programs === "object") {
      for (const [key, program] of Object.entries(programs)) {
        const entries: unknown[] = Array.isArray(program) ? program : [program];
        if (typeof program === "function") continue;
        for (const entry of entries) {
          const unknown = unknownKey(entry, `ScriptedProvider program "${key}"`);
          if (unknown !== undefined) throw new TypeError(unknown);
          if (!isEntry(entry)) throw new TypeError(`ScriptedProvider program "${key}" must be a program string, null, "", { error }, { code, delayMs?, usage? }, a list of these, or a function (request) => entry; got ${describeType(entry)}.`);
        }
      }
    }
    checkMaxConcurrentRequests(options.maxConcurrentRequests, "ScriptedProvider");
    if (options.name !== undefined && (typeof options.name !== "string" || options.name === "")) throw new TypeError(`ScriptedProvider option "name" must be a non-empty string, got ${describeType(options.name)}.`);
    this.#programs = programs;
    this.#model = options.model ?? "scripted";
    this.name = options.name ?? "improv.scripted";
    this.maxConcurrentRequests = options.maxConcurrentRequests ?? Number.POSITIVE_INFINITY;
  }

  async generate(request: GenerationRequest, signal: AbortSignal): Promise<Generation> {
    this.calls.push({
      role: request.role,
      method: request.method,
      attempt: request.attempt,
      system: request.system,
      user: request.user,
      args: request.args ?? [],
      kwargs: request.kwargs ?? {},
      feedback: request.feedback,
    });
    signal.throwIfAborted();
    const entry = this.#entryFor(request);
    return this.#answer(entry, signal);
  }

  #entryFor(request: GenerationRequest): ScriptedEntry {
    const programs = this.#programs;
    if (typeof programs === "function") return programs(request);
    const qualified = `${request.role}.${request.method}`;
    const key = Object.hasOwn(programs, qualified) ? qualified : Object.hasOwn(programs, request.method) ? request.method : undefined;
    if (key === undefined) {
      throw new ProviderError(`ScriptedProvider has no program for "${qualified}" or "${request.method}". Add one of these keys to its programs.`);
    }
    const program = programs[key] as ScriptedProgram;
    if (typeof program === "function") return program(request);
    if (!Array.isArray(program)) return program as ScriptedEntry;
    if (program.length === 0) return null;
    const index = this.#consumed.get(key) ?? 0;
    this.#consumed.set(key, index + 1);
    return program[Math.min(index, program.length - 1)] as ScriptedEntry;
  }

  async #answer(entry: ScriptedEntry, signal: AbortSignal): Promise<Generation> {
    if (entry === null || typeof entry === "string") return { code: entry, model: this.#model };
    const unknown = unknownKey(entry, "a ScriptedProvider entry");
    if (unknown !== undefined) throw new ProviderError(unknown);
    if (!isEntry(entry)) throw new ProviderError(`ScriptedProvider entry must be a program string, null, "", { error } or { code, delayMs?, usage? }; got ${describeType(entry)}.`);
    if ("error" in entry) throw new ProviderError(String(entry.error), { kind: entry.kind, retryAfterMs: entry.retryAfterMs });
    if (entry.delayMs !== undefined) await delay(entry.delayMs, signal);
    return { code: entry.code, model: this.#model, ...(entry.usage === undefined ? {} : { usage: entry.usage }) };
  }
}

const FAILURE_KINDS: readonly unknown[] = ["connection", "server", "rate_limit", "auth", "request", "reply"] satisfies ProviderFailureKind[];

/** The keys of an `{ error }` entry, and of a `{ code }` entry. */
const ERROR_KEYS = ["error", "kind", "retryAfterMs"];
const CODE_KEYS = ["code", "delayMs", "usage"];

/** The message for a key an object entry does not take (`delay` for `delayMs`), which it would otherwise ignore. */
function unknownKey(entry: unknown, where: string): string | undefined {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) return undefined;
  const valid = "error" in entry ? ERROR_KEYS : CODE_KEYS;
  const name = Object.keys(entry).find((key) => !valid.includes(key));
  return name === undefined ? undefined : unknownNameMessage(name, valid, where, "key");
}

/** Whether `entry` is one scripted answer (see {@link ScriptedEntry}). */
function isEntry(entry: unknown): entry is ScriptedEntry {
  if (entry === null || typeof entry === "string") return true;
  if (typeof entry !== "object" || Array.isArray(entry)) return false;
  if ("error" in entry) {
    const { error, kind, retryAfterMs } = entry as { error: unknown; kind?: unknown; retryAfterMs?: unknown };
    return typeof error === "string" && (kind === undefined || FAILURE_KINDS.includes(kind)) && (retryAfterMs === undefined || (typeof retryAfterMs === "number" && retryAfterMs >= 0));
  }
  if ("code" in entry) {
    const { delayMs, code, usage } = entry as { delayMs?: unknown; code: unknown; usage?: unknown };
    return (delayMs === undefined || (typeof delayMs === "number" && Number.isFinite(delayMs) && delayMs >= 0)) && (code === null || typeof code === "string") && (usage === undefined || (typeof usage === "object" && usage !== null));
  }
  return false;
}
