import { readKnowledge, type KnowledgeSource, type NamedSource } from "../knowledge/index.ts";
import { DEFAULT_KEEP_VALUES, type HistoryPreviewOption, type HistoryPreviewRule, type KeepValuesOption, type KeepValuesRule, readHistoryPreview, readKeepValues } from "../history/index.ts";
import { readReuse, type ReuseOption, type ReuseRule } from "../programs/index.ts";
import type { Logger } from "pino";
import { checkOptionNames, describeType, readEnv, readEnvFlag } from "../shared/index.ts";
import { CostBudget, isProvider, type Pricing, type Provider, readPricing, TokenBudget } from "../providers/index.ts";
import { isStore, openStore, type Store } from "../store/index.ts";
import { type Contract, type MethodContract, NO_CONTRACT, prepareThread, readContract } from "../contracts/index.ts";
import { type EgressOptions, type EgressPolicy, readEgress } from "../egress/index.ts";
import { type GrantedTools, grantTools, NO_TOOLS, type OnFailure, type Tools } from "../tools/index.ts";

/** Longest durable id. */
const MAX_ID_LENGTH = 200;

/**
 * Options of `Agent.for(role, options)`. All are optional; children made by `delegate`
 * inherit their parent's options.
 */
export interface AgentOptions {
  /**
   * Writes method bodies. Default: an `OpenAIProvider` configured from `OPENAI_API_KEY`,
   * `OPENAI_BASE_URL` and `IMPROV_MODEL`, else an `AnthropicProvider` from `ANTHROPIC_API_KEY`;
   * with no key set, calls end with a `provider` outcome. A list is asked in order: the next
   * provider when one cannot be reached, fails itself (HTTP 5xx) or asks to wait long (HTTP 429).
   */
  provider?: Provider | readonly Provider[] | undefined;
  /**
   * Most tokens (input and output, as the providers report them) this agent and the helpers it
   * delegates to may spend: a number, or a `TokenBudget` shared with other agents. Once spent,
   * calls that would ask a provider end `budget_exceeded`. Default: no limit.
   */
  maxTokens?: number | TokenBudget | undefined;
  /**
   * Prices by model name (as the provider reports the model that answered), in US dollars per
   * million tokens: `{ "gpt-4.1-mini": { input: 0.4, cachedInput: 0.1, output: 1.6 } }`. With it,
   * records, log lines and spans say what each call cost (`cost_usd`). Default: none.
   */
  pricing?: Pricing | undefined;
  /** The most the agent (or all agents given the same `CostBudget`) may spend on its providers, in US dollars, counted with `pricing`. Default: no limit. */
  maxCostUsd?: number | CostBudget | undefined;
  /** Model name passed to the provider. Default: the provider's own. */
  model?: string | undefined;
  /**
   * Where call logs go: a JSONL file path (directories are created), a pino logger, or
   * `false`. Default: the file named by `IMPROV_LOG`, else off.
   */
  log?: string | Logger | false | undefined;
  /** Adds prompts and a context snapshot to log lines. Default: `IMPROV_DEBUG`, else false. */
  debug?: boolean | undefined;
  /** Prints each program as it runs, and each call's outcome, to stderr. Default: `IMPROV_VERBOSE`, else false. */
  verbose?: boolean | undefined;
  /** Provider attempts per call, retries included. Default: 2. */
  maxGenerationAttempts?: number | undefined;
  /** Longest wait for one provider attempt. Default: 60000. @unit milliseconds */
  providerTimeoutMs?: number | undefined;
  /** Limit on the program's own running time; its waits for the host (a delegated call, `content`) do not count. Default: 5000. @unit milliseconds */
  executionTimeoutMs?: number | undefined;
  /** Limit on the whole call, from its start to its outcome: provider attempts, runs and their waits. Default: 300000. @unit milliseconds */
  callTimeoutMs?: number | undefined;
  /** Heap limit of the isolate that runs the agent's programs. Default: 64, minimum 8. @unit MiB */
  memoryLimitMb?: number | undefined;
  /** Deepest `delegate` chain below the agent the application called. Default: 8. */
  maxDelegationDepth?: number | undefined;
  /** Records summarised in the user prompt's history block. Default: 3. */
  historyPreviewLimit?: number | undefined;
  /** Trace id stamped on every call of this agent and its children. Default: one per call tree. */
  traceId?: string | undefined;
  /** Aborting it cancels pending calls with a `cancelled` outcome. */
  signal?: AbortSignal | undefined;
  /**
   * Where the agent is kept, so it outlives the process: a `Store`, or a string (a file path or
   * `sqlite:` URL for a `SqliteStore`, a `postgres://` URL for a `PostgresStore`). Default:
   * `IMPROV_STORE`, else none (memory only). Children made by `delegate` are kept there too.
   */
  store?: Store | string | undefined;
  /** The agent's durable identity in its store, 1 to 200 characters. Default: the role. */
  id?: string | undefined;
  /**
   * Run a program that worked again, without asking the provider, for later calls of the same
   * method and shape: `true` (default), `false`, `{ except: [methods] }`, or `{ only: [methods] }`.
   * Methods that take free-form requests (`ask`, `chat`, `discuss`, `answer`, `respond`) are
   * kept only when named in `only`.
   */
  reuse?: ReuseOption | undefined;
  /** Calls in a row a kept program may fail by its own mistake before it is dropped. Default: 2. */
  maxReuseFailures?: number | undefined;
  /**
   * Keep the values of ok calls for follow-ups (`content(ref)` in programs, `Agent.value()`):
   * `false`, or the latest `count` values within `maxBytes` of encoded text. Default:
   * `{ count: 100, maxBytes: 16 MiB }`.
   */
  keepValues?: KeepValuesOption | undefined;
  /**
   * The prompt's history block: at most `limit` records (default `historyPreviewLimit`), chosen
   * by `strategy` (`"latest"`, the default, or `"relevant"`), within `maxChars` (default 2000).
   */
  historyPreview?: HistoryPreviewOption | undefined;
  /**
   * Functions the agent's programs may call, as `await tools.name(input)`: tools shaped like the
   * AI SDK's `tool()`, and tool sets (such as what `mcpTools()` returns) one level down.
   * Default: none.
   */
  tools?: Tools | undefined;
  /**
   * Asked before every call of a tool that may change the world (every tool but one whose trusted
   * hints say `readOnlyHint: true`; an idempotent tool too); `false` refuses it (the program gets a `ToolError`). Default: none (allowed).
   */
  toolApproval?: (request: ToolApprovalRequest) => boolean | Promise<boolean> | undefined;
  /**
   * The calls of tools that may change the world (and `fetch`es that may) one call's programs
   * may make; past it, the tool throws a `ToolError` in the program. Default: 20.
   */
  maxWriteCalls?: number | undefined;
  /**
   * What happens to the effects of a call that fails after tools that may change the world ran
   *: `"keep"` leaves them, `"revert"` undoes the applied and unknown ones with their
   * tools' `revert`, newest first, before the call resolves; a function gets the failure and its
   * effects, and may call `failure.revert()`. Cancelled and timed-out calls count as failed.
   * Default: `"keep"`.
   */
  onFailure?: OnFailure | undefined;
  /**
   * Lets programs `fetch` from the origins in `allow`, the requests made by the host under this
   * policy. Default: none (programs have no `fetch`).
   */
  egress?: EgressOptions | undefined;
  /**
   * Where the prompt context of each call comes from: values of the agent's state
   * (`fromState`), passages a retriever finds for the call (`fromRetrieval`) and literal text
   * (`literal`); shown to the model as data and given to programs as `knowledge`. Not inherited
   * by children.
   */
  knowledge?: readonly KnowledgeSource[] | undefined;
  /** What the agent is for, shown to the model (at most 2,000 characters). Not inherited by children. */
  purpose?: string | undefined;
  /**
   * What each method does and returns, shown to the model: `{ add: { description?, returns? } }`,
   * `returns` a Standard Schema (its output types the call's value) or a JSON Schema. The value
   * is checked against it before the call ends. Not inherited by children.
   */
  methods?: Readonly<Record<string, MethodContract>> | undefined;
}

/** What `toolApproval` is asked about. */
export interface ToolApprovalRequest {
  /** A granted tool's call, or a program's `fetch` (whose `tool` is `"fetch"`, as a tool may be named too). */
  readonly kind: "tool" | "fetch";
  /** The tool's name in programs: `weather`, or `notes.append` for a tool in a set. */
  readonly tool: string;
  /** The input, as it passed the tool's schema; for a fetch, `{ method, url, … }`. */
  readonly input: unknown;
  /** The role of the agent whose program asks: for a delegated agent, one a program chose. */
  readonly role: string;
  /**
   * The roles from the agent the application made down to the one asking (`role` last): more
   * than one when programs delegated, and then all but the first were chosen by programs.
   */
  readonly lineage: readonly string[];
  /** The id of the agent the application made: the one asking, or the one whose programs delegated down to it. */
  readonly rootAgentId: string;
  readonly agentId: string;
  readonly callId: string;
}

/** Options after defaults and environment variables are applied. */
export interface ResolvedOptions {
  /** The providers to ask, in order (at least one), or undefined for the environment's. */
  readonly providers: readonly Provider[] | undefined;
  readonly budget: TokenBudget | undefined;
  readonly pricing: Pricing | undefined;
  readonly costBudget: CostBudget | undefined;
  readonly model: string | undefined;
  readonly log: string | Logger | false;
  readonly debug: boolean;
  readonly verbose: boolean;
  readonly maxGenerationAttempts: number;
  readonly providerTimeoutMs: number;
  readonly executionTimeoutMs: number;
  readonly callTimeoutMs: number;
  readonly memoryLimitMb: number;
  readonly maxDelegationDepth: number;
  readonly historyPreviewLimit: number;
  readonly traceId: string | undefined;
  readonly signal: AbortSignal | undefined;
  readonly store: Store | undefined;
  /** Only for the agent it was given to; children derive theirs. */
  readonly id: string | undefined;
  readonly reuse: ReuseRule;
  readonly maxReuseFailures: number;
  readonly keepValues: KeepValuesRule;
  readonly historyPreview: HistoryPreviewRule;
  readonly tools: GrantedTools;
  readonly toolApproval: AgentOptions["toolApproval"];
  readonly maxWriteCalls: number;
  readonly onFailure: OnFailure;
  readonly egress: EgressPolicy | undefined;
  /** The agent's own knowledge sources, named (never a parent's). */
  readonly knowledge: readonly NamedSource[];
  /** The agent's own purpose and method contracts (never a parent's). */
  readonly contract: Contract;
}

/** Every default, in one place. */
export const DEFAULT_OPTIONS = {
  maxGenerationAttempts: 2,
  providerTimeoutMs: 60_000,
  executionTimeoutMs: 5_000,
  callTimeoutMs: 300_000,
  memoryLimitMb: 64,
  maxDelegationDepth: 8,
  historyPreviewLimit: 3,
  maxReuseFailures: 2,
  maxWriteCalls: 20,
  onFailure: "keep",
  keepValues: DEFAULT_KEEP_VALUES,
  historyPreview: { limit: 3, strategy: "latest", maxChars: 2_000 },
} as const;

/** The smallest heap isolated-vm accepts. */
export const MIN_MEMORY_LIMIT_MB = 8;

const OPTION_NAMES: { readonly [K in keyof AgentOptions]-?: true } = {
  provider: true,
  model: true,
  log: true,
  debug: true,
  verbose: true,
  maxGenerationAttempts: true,
  providerTimeoutMs: true,
  executionTimeoutMs: true,
  callTimeoutMs: true,
  maxTokens: true,
  pricing: true,
  maxCostUsd: true,
  memoryLimitMb: true,
  maxDelegationDepth: true,
  historyPreviewLimit: true,
  traceId: true,
  signal: true,
  store: true,
  id: true,
  reuse: true,
  maxReuseFailures: true,
  keepValues: true,
  historyPreview: true,
  tools: true,
  toolApproval: true,
  maxWriteCalls: true,
  onFailure: true,
  egress: true,
  knowledge: true,
  purpose: true,
  methods: true,
};

/** The names `Agent.for()` accepts, in documentation order. */
export const AGENT_OPTION_NAMES = Object.keys(OPTION_NAMES) as (keyof AgentOptions)[];

/**
 * Validates `options` and fills in defaults, from `parent` when given (children inherit),
 * else from the environment and {@link DEFAULT_OPTIONS}. Throws `TypeError` / `RangeError`.
 */
export function resolveOptions(options: AgentOptions | undefined, parent?: ResolvedOptions, caller = parent === undefined ? "Agent.for()" : "delegate()"): ResolvedOptions {
  const given = checkOptionNames<AgentOptions>(options, AGENT_OPTION_NAMES, caller) as AgentOptions;
  const base = parent ?? rootDefaults();
  const pick = <K extends keyof AgentOptions>(name: K): AgentOptions[K] | undefined =>
    given[name] === undefined ? undefined : given[name];

  const providers = readProviders(pick("provider"));
  const maxTokens = pick("maxTokens");
  if (maxTokens !== undefined && !(maxTokens instanceof TokenBudget) && (typeof maxTokens !== "number" || !Number.isSafeInteger(maxTokens) || maxTokens < 1)) {
    throw new RangeError(`Option "maxTokens" must be a whole number of tokens (at least 1) or a TokenBudget, got ${describeType(maxTokens)}.`);
  }
  const log = pick("log");
  if (log !== undefined && log !== false && typeof log !== "string" && !isLogger(log)) {
    throw new TypeError('Option "log" must be a file path, a pino logger, or false.');
  }
  const signal = pick("signal");
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError('Option "signal" must be an AbortSignal.');
  }
  const store = pick("store");
  if (store !== undefined && typeof store !== "string" && !isStore(store)) {
    throw new TypeError('Option "store" must be a Store (SqliteStore, PostgresStore) or a string: a file path, a sqlite: URL or a postgres:// URL.');
  }
  const id = optionalString(given, "id");
  if (id !== undefined && id.length > MAX_ID_LENGTH) throw new RangeError(`Option "id" must be at most ${MAX_ID_LENGTH} characters, got ${id.length}.`);
  if (id !== undefined && !id.isWellFormed()) throw new TypeError(`Option "id" must be well-formed Unicode text (it holds a lone surrogate, which a store would keep as U+FFFD, the same as others).`);
  const historyPreview = readHistoryPreview(given.historyPreview, integer(given, "historyPreviewLimit", 0), base.historyPreview);
  const toolApproval = pick("toolApproval");
  if (toolApproval !== undefined && typeof toolApproval !== "function") throw new TypeError('Option "toolApproval" must be a function (request) => boolean | Promise<boolean>.');
  return {
    providers: providers ?? base.providers,
    budget: maxTokens === undefined ? base.budget : maxTokens instanceof TokenBudget ? maxTokens : new TokenBudget(maxTokens),
    pricing: readPricing(given.pricing) ?? base.pricing,
    costBudget: readCostBudget(given.maxCostUsd) ?? base.costBudget,
    model: optionalString(given, "model") ?? base.model,
    log: log ?? base.log,
    debug: optionalBoolean(given, "debug") ?? base.debug,
    verbose: optionalBoolean(given, "verbose") ?? base.verbose,
    maxGenerationAttempts: integer(given, "maxGenerationAttempts", 1) ?? base.maxGenerationAttempts,
    providerTimeoutMs: integer(given, "providerTimeoutMs", 1, MAX_TIMEOUT_MS) ?? base.providerTimeoutMs,
    executionTimeoutMs: integer(given, "executionTimeoutMs", 1, MAX_TIMEOUT_MS) ?? base.executionTimeoutMs,
    callTimeoutMs: integer(given, "callTimeoutMs", 1, MAX_TIMEOUT_MS) ?? base.callTimeoutMs,
    memoryLimitMb: integer(given, "memoryLimitMb", MIN_MEMORY_LIMIT_MB) ?? base.memoryLimitMb,
    maxDelegationDepth: integer(given, "maxDelegationDepth", 0) ?? base.maxDelegationDepth,
    historyPreviewLimit: historyPreview.limit,
    traceId: optionalString(given, "traceId") ?? base.traceId,
    signal: signal ?? base.signal,
    store: store === undefined ? base.store : typeof store === "string" ? openStore(store) : store,
    id,
    reuse: readReuse(given.reuse) ?? base.reuse,
    maxReuseFailures: integer(given, "maxReuseFailures", 1) ?? base.maxReuseFailures,
    keepValues: readKeepValues(given.keepValues, base.keepValues),
    historyPreview,
    tools: given.tools === undefined ? base.tools : withSchemaThread(grantTools(given.tools)),
    toolApproval: toolApproval ?? base.toolApproval,
    maxWriteCalls: integer(given, "maxWriteCalls", 0, 100_000) ?? base.maxWriteCalls,
    onFailure: readOnFailure(given.onFailure) ?? base.onFailure,
    egress: given.egress === undefined ? base.egress : readEgress(given.egress),
    knowledge: readKnowledge(given.knowledge),
    contract: readContract(given.purpose, given.methods),
  };
}

/** The `maxCostUsd` option: a shared `CostBudget`, or a limit of the agent's own. */
function readCostBudget(given: unknown): CostBudget | undefined {
  if (given === undefined || given instanceof CostBudget) return given;
  if (typeof given !== "number" || !Number.isFinite(given) || given <= 0) throw new RangeError(`Option "maxCostUsd" must be a number of US dollars above 0, or a CostBudget, got ${describeType(given)}.`);
  return new CostBudget(given);
}

/** The `onFailure` option, checked. */
function readOnFailure(given: unknown): OnFailure | undefined {
  if (given === undefined || given === "keep" || given === "revert" || typeof given === "function") return given as OnFailure | undefined;
  throw new TypeError(`Option "onFailure" must be "keep", "revert" or a function (failure) => void, got ${describeType(given)}.`);
}

const PROVIDER_SHAPE = 'Option "provider" must be an object with a generate(request, signal) method (an OpenAIProvider, AnthropicProvider, AISDKProvider, ScriptedProvider or your own), or a non-empty list of them';

/** The `provider` option as a list. */
function readProviders(given: AgentOptions["provider"]): readonly Provider[] | undefined {
  if (given === undefined) return undefined;
  if (!Array.isArray(given)) {
    if (!isProvider(given)) throw new TypeError(`${PROVIDER_SHAPE}, got ${describeType(given)}.`);
    return [given];
  }
  if (given.length === 0) throw new TypeError(`${PROVIDER_SHAPE}; the list is empty.`);
  given.forEach((provider, index) => {
    if (!isProvider(provider)) throw new TypeError(`${PROVIDER_SHAPE}; entry ${index} is ${describeType(provider)}.`);
  });
  return Object.freeze([...given]);
}

function rootDefaults(): ResolvedOptions {
  return {
    providers: undefined,
    budget: undefined,
    pricing: undefined,
    costBudget: undefined,
    model: undefined,
    log: readEnv("IMPROV_LOG") ?? false,
    debug: readEnvFlag("IMPROV_DEBUG") ?? false,
    verbose: readEnvFlag("IMPROV_VERBOSE") ?? false,
    ...DEFAULT_OPTIONS,
    traceId: undefined,
    signal: undefined,
    store: storeFromEnv(),
    id: undefined,
    reuse: { enabled: true, except: new Set(), only: undefined, scope: "role" },
    tools: NO_TOOLS,
    toolApproval: undefined,
    egress: undefined,
    knowledge: [],
    contract: NO_CONTRACT,
  };
}

function storeFromEnv(): Store | undefined {
  const location = readEnv("IMPROV_STORE");
  return location === undefined ? undefined : openStore(location);
}

function integer(options: AgentOptions, name: keyof AgentOptions, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw new TypeError(`Option "${name}" must be an integer, got ${describeType(value)}.`);
  }
  if (value < min) throw new RangeError(`Option "${name}" must be at least ${min}, got ${value}.`);
  if (value > max) throw new RangeError(`Option "${name}" must be at most ${max}, got ${value}.`);
  return value;
}

/** The longest time limit a timer can keep (Node runs a longer delay after 1 ms). @unit ms */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** Granted tools; a thread to check servers' JSON Schemas on (see `call/bridge/tool.ts`) starts now when one is among them, not at their first call. */
function withSchemaThread(tools: GrantedTools): GrantedTools {
  for (const granted of tools.byPath.values()) {
    if (granted.untrusted && granted.input.ownCheck) {
      prepareThread();
      break;
    }
  }
  return tools;
}

function optionalString(options: AgentOptions, name: "model" | "traceId" | "id"): string | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.trim() === "") {
    throw new TypeError(`Option "${name}" must be a non-empty string, got ${describeType(value)}.`);
  }
  return value;
}

function optionalBoolean(options: AgentOptions, name: "debug" | "verbose"): boolean | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") throw new TypeError(`Option "${name}" must be true or false, got ${describeType(value)}.`);
  return value;
}

function isLogger(value: unknown): value is Logger {
  return typeof value === "object" && value !== null && typeof (value as { info?: unknown }).info === "function";
}


