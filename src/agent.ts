import { inspect } from "node:util";
import { type AgentOptions, agentsInProcess, AgentState, resolveOptions } from "./state/index.ts";
import { type CallEvent, handedBackChild, keptValue, kw, performCall } from "./call/index.ts";
import { type AgentReference, replaceAgentReferences, sandboxPool } from "./sandbox/index.ts";
import { checkOptionNames, closeTimeout, ImprovError, MAX_NAME_LENGTH, type Outcome, RESERVED_NAMES } from "./shared/index.ts";
import { buildTrace, type HistoryQuery, type HistoryRecord, type TraceEntry, type TraceNode, validateHistoryQuery } from "./history/index.ts";
import { isSyncStore, type Store } from "./store/index.ts";

/** A dynamic method: any arguments (plain data, with `kw()` last for named ones), an Outcome back. */
export type DynamicMethod = (...args: unknown[]) => Promise<Outcome>;

/** A declared method: its Outcome's value typed by the output of its `returns` Standard Schema. */
export type TypedMethod<T> = (...args: unknown[]) => Promise<Outcome<T>>;

/** The output type of a method contract's `returns`, when it is a Standard Schema; else `unknown`. */
export type ReturnsOf<Contract> = Contract extends { readonly returns: { readonly "~standard": { readonly types?: infer Types } } }
  ? NonNullable<Types> extends { readonly output: infer Output }
    ? Output
    : unknown
  : unknown;

/**
 * `Options` with no name that AgentOptions lacks: the options are inferred (so their `methods`
 * type the agent), and an inferred type is not checked for excess names, so a misspelled one is
 * made to fail here. Options with computed names (an index signature) are left to the check
 * at run time.
 */
export type KnownOptions<Options> = string extends keyof Options ? Options : Options & { readonly [Name in Exclude<keyof Options, keyof AgentOptions>]: never };

/** The methods an options object declares in `methods`, typed by their `returns`. */
export type DeclaredMethods<Options> = Options extends { readonly methods: infer Methods }
  ? { readonly [Name in keyof Methods & string]: TypedMethod<ReturnsOf<Methods[Name]>> }
  : {};

/**
 * What an agent offers to TypeScript besides its dynamic methods: the reserved members.
 * `Values` types the entries the application writes (setters and `remember`).
 */
export interface AgentMembers<Values extends object = {}> {
  /** Writes context entries (as the application's own values) and returns the same agent. */
  remember(entries: Partial<Values> & Record<string, unknown>): AgentProxy<Values>;
  /** The live, mutable context object. */
  readonly runtimeContext: Record<string, unknown>;
  /** A child agent of `role` that inherits this agent's options (depth + 1); one per role and contract, whose memory lasts. */
  delegate<ChildValues extends object = {}, Options extends AgentOptions = AgentOptions>(role: string, options?: KnownOptions<Options>): AgentProxy<ChildValues, never, DeclaredMethods<Options>>;
  /** The same, for options passed on by code that is itself generic (their names are checked at run time). */
  delegate<ChildValues extends object = {}>(role: string, options?: AgentOptions): AgentProxy<ChildValues>;
  /** Always `undefined`: an agent is never taken for a promise. */
  readonly then: undefined;
  toJSON(): { role: string };
  toString(): string;
}

/**
 * An agent as application code sees it: any name not reserved is a {@link DynamicMethod}, so
 * `await calc.add(3)` is an `Outcome` and a forgotten `await` (`calc.add(3).ok`) does not
 * compile. Values the application writes are declared by the type parameter, which makes
 * them readable and writable with their types:
 *
 * With `noUncheckedIndexedAccess`, TypeScript takes every name of an index signature to be
 * possibly undefined; name the methods you call in the second type parameter to have them
 * typed as present (`Agent.for<{ value: number }, "add" | "multiply">("calculator")`).
 *
 * @example
 * const calc = Agent.for<{ value: number }>("calculator");
 * calc.value = 5;                  // typed: a number
 * const r = await calc.add(3);     // Outcome
 */
export type AgentProxy<Values extends object = {}, Methods extends string = never, Declared extends object = {}> = Agent &
  AgentMembers<Values> &
  Values &
  Declared & { readonly [Name in Methods]: DynamicMethod } & { readonly [name: string]: DynamicMethod };

const states = new WeakMap<object, AgentState>();
const proxies = new WeakMap<AgentState, AgentProxy>();

function stateOf(agent: unknown, caller: string): AgentState {
  const state = typeof agent === "object" && agent !== null ? states.get(agent) : undefined;
  if (!state) throw new TypeError(`${caller} expects an agent made by Agent.for(role).`);
  return state;
}

function validateRole(role: unknown): string {
  if (typeof role !== "string" || role.trim() === "" || role.length > MAX_NAME_LENGTH) {
    throw new TypeError(`An agent's role must be a non-empty string of at most ${MAX_NAME_LENGTH} characters, e.g. Agent.for("calculator").`);
  }
  // A lone surrogate is kept by a store as U+FFFD: two roles would be one.
  if (!role.isWellFormed()) throw new TypeError("An agent's role must be well-formed Unicode text (it holds a lone surrogate).");
  return role;
}

function reservedMessage(name: string): string {
  return `"${name}" is reserved on agents and cannot be assigned. Reserved names: ${[...RESERVED_NAMES].join(", ")}.`;
}

/**
 * An LLM-backed object whose methods are written at call time.
 *
 * @example
 * const calc = Agent.for("calculator", { provider });
 * calc.value = 5;
 * const r = await calc.add(3);
 * console.log(r.ok ? r.value : r.errorMessage);
 */
export class Agent {
  /** Agents are made with `Agent.for(role, options)`. */
  constructor() {
    throw new TypeError("Use Agent.for(role, options) to make an agent.");
  }

  /**
   * Returns a new agent of `role`. Unknown option names throw a `TypeError` listing the valid ones.
   * The type parameter declares the values the application will write on it.
   *
   * @example
   * const calc = Agent.for<{ value: number }>("calculator", { log: "logs/calls.jsonl" });
   */
  static for<Values extends object = {}, Methods extends string = never, Options extends AgentOptions = AgentOptions>(role: string, options?: KnownOptions<Options>): AgentProxy<Values, Methods, DeclaredMethods<Options>>;
  /** The same, for options passed on by code that is itself generic (their names are checked at run time). */
  static for<Values extends object = {}, Methods extends string = never>(role: string, options?: AgentOptions): AgentProxy<Values, Methods>;
  static for<Values extends object = {}, Methods extends string = never, Options extends AgentOptions = AgentOptions>(role: string, options?: Options): AgentProxy<Values, Methods, DeclaredMethods<Options>> {
    const resolved = resolveOptions(options);
    if (resolved.store !== undefined && !isSyncStore(resolved.store)) {
      throw new TypeError(`Agent.for() cannot load an agent from ${resolved.store.label} synchronously. Use await Agent.open(role, options) with this store.`);
    }
    return proxyFor(AgentState.create(validateRole(role), resolved)) as AgentProxy<Values, Methods, DeclaredMethods<Options>>;
  }

  /**
   * Loads the agent `options.id` (default: the role) from `options.store`, creating it when
   * new, and resolves once it holds everything stored. Without a store, a fresh in-memory agent.
   * Opening an id that is open already in this process gives a proxy of the same agent; an id
   * stored with another role is a `TypeError` naming both.
   *
   * @example
   * const calc = await Agent.open("calculator", { store: new SqliteStore("data/improv.db"), id: "calc-1" });
   */
  static async open<Values extends object = {}, Methods extends string = never, Options extends AgentOptions = AgentOptions>(role: string, options?: KnownOptions<Options>): Promise<AgentProxy<Values, Methods, DeclaredMethods<Options>>>;
  /** The same, for options passed on by code that is itself generic (their names are checked at run time). */
  static async open<Values extends object = {}, Methods extends string = never>(role: string, options?: AgentOptions): Promise<AgentProxy<Values, Methods>>;
  static async open<Values extends object = {}, Methods extends string = never, Options extends AgentOptions = AgentOptions>(role: string, options?: Options): Promise<AgentProxy<Values, Methods, DeclaredMethods<Options>>> {
    const state = AgentState.create(validateRole(role), resolveOptions(options, undefined, "Agent.open()"));
    await state.pull();
    return proxyFor(state) as AgentProxy<Values, Methods, DeclaredMethods<Options>>;
  }

  /**
   * Waits until the values the application wrote on a durable agent are in its store. Rejects
   * with the `StoreError` of a write that failed, after reloading the agent's context from the
   * store (so it holds what the store holds).
   */
  static async save(agent: unknown): Promise<void> {
    await stateOf(agent, "Agent.save()").link?.saved();
  }

  /**
   * Closes an agent: the application's new calls on it (and on its children) are refused at
   * once with a `cancelled` outcome that says so, calls in flight finish (for at most
   * `timeoutMs`, default 10000), values written on a durable agent reach its store, and its
   * isolate is freed. When no open agent is left in the process, the sandbox processes end too
   * (a later call starts them again). Resolves true when every call in flight ended in time.
   */
  static async close(agent: unknown, options: { readonly timeoutMs?: number | undefined } = {}): Promise<boolean> {
    const state = stateOf(agent, "Agent.close()");
    const { timeoutMs } = checkOptionNames<{ timeoutMs: number }>(options, ["timeoutMs"], "Agent.close()");
    const ended = await state.close(closeTimeout(timeoutMs, "Agent.close()", "timeoutMs"));
    await state.link?.saved();
    // The sandbox processes stay a while for the next agent (one per request, say); they never hold the application.
    if (!anyAgentOpen()) sandboxPool().shutdownWhenIdle(() => !anyAgentOpen());
    return ended;
  }

  /** Brings a durable agent up to date with what other processes committed. Rejects with a `StoreError`. */
  static async refresh(agent: unknown): Promise<void> {
    await stateOf(agent, "Agent.refresh()").pull();
  }

  /**
   * Deletes a durable agent and the agents delegated from it from their store, and empties
   * this process's copy. For an in-memory agent, empties its context and history.
   */
  static async forget(agent: unknown): Promise<void> {
    const state = stateOf(agent, "Agent.forget()");
    // After the calls already running: they commit first, then everything goes.
    await state.queue.run(() => state.forget());
  }

  /**
   * One dynamic call with limits and cancellation of its own: `kwargs` (as `kw()` would pass
   * them), `signal` (aborting it cancels this call only), `callTimeoutMs` and
   * `executionTimeoutMs` (instead of the agent's, for this call). Resolves to an Outcome, as a
   * method call does; a bad argument here is a `TypeError`.
   *
   * @example
   * const r = await Agent.call(calc, "convert", [100], { kwargs: { from: "c", to: "f" }, callTimeoutMs: 10_000 });
   */
  static call<T = unknown>(agent: unknown, method: string, args: readonly unknown[] = [], options: CallOptions = {}): Promise<Outcome<T>> {
    const state = stateOf(agent, "Agent.call()");
    if (typeof method !== "string" || method === "" || method.length > MAX_NAME_LENGTH || RESERVED_NAMES.has(method)) {
      throw new TypeError(`Agent.call(agent, method, args, options) needs a method name: a string of 1 to ${MAX_NAME_LENGTH} characters that is not reserved.`);
    }
    if (!Array.isArray(args)) throw new TypeError("Agent.call(agent, method, args, options): args must be an array of the positional arguments.");
    const { kwargs, signal, limits, onEvent } = readCallOptions(options);
    return performCall(state, method, kwargs === undefined ? args : [...args, kw(kwargs)], { speaker: "user", handOutAgent: handOutFrom(state), signal, limits, onEvent }) as Promise<Outcome<T>>;
  }

  /** The agent's role. */
  static role(agent: unknown): string {
    return stateOf(agent, "Agent.role()").role;
  }

  /**
   * The agent's canonical history records: a frozen array, shared until the next call. With a
   * query, the matching records, oldest first (`last: n` the latest n), found through an index
   * kept as records are appended, without copying the whole history.
   */
  static history(agent: unknown, query?: HistoryQuery): readonly HistoryRecord[] {
    const { history } = stateOf(agent, "Agent.history()");
    return query === undefined ? history.snapshot() : history.query(validateHistoryQuery(query));
  }

  /**
   * A copy of the value call `ref` returned (a record's `outcome_summary.content_ref`), or
   * undefined when the agent does not keep it (never kept, or evicted). A durable agent's
   * values are read from its store when this process does not hold them.
   */
  static async value(agent: unknown, ref: string): Promise<unknown> {
    const state = stateOf(agent, "Agent.value()");
    if (typeof ref !== "string") throw new TypeError("Agent.value(agent, ref) takes a record's content_ref (a string).");
    return replaceAgentReferences((await keptValue(state, ref)).value, handOutFrom(state));
  }

  /**
   * The call tree of one trace across the agents of this process: every record whose
   * `trace_id` is `traceId`, each with its agent's `role` and `agent_id` and the calls its
   * program made as `children` (ordered as they were made), parents before their children.
   */
  static trace(traceId: string): readonly TraceNode[];
  /** The same, with the records of every agent in `store` too (other processes' included). */
  static trace(traceId: string, options: { readonly store: Store | string }): Promise<readonly TraceNode[]>;
  static trace(traceId: string, options?: { readonly store: Store | string }): readonly TraceNode[] | Promise<readonly TraceNode[]> {
    if (typeof traceId !== "string" || traceId === "") throw new TypeError("Agent.trace(traceId) takes the trace id of a call (a non-empty string).");
    const entries: TraceEntry[] = [];
    for (const state of agentsInProcess()) {
      state.history.query({ traceId }).forEach((record, order) => entries.push({ record, role: state.role, agentId: state.agentId, order }));
    }
    if (options === undefined) return buildTrace(entries);
    const { store } = resolveOptions({ store: options.store });
    if (store === undefined) throw new TypeError("Agent.trace(traceId, { store }) needs a store: a Store, a file path or a URL.");
    return store.traceRecords(traceId).then((rows) => {
      rows.forEach((row, order) => entries.push({ record: JSON.parse(row.record) as HistoryRecord, role: row.role, agentId: row.agentId, order }));
      return buildTrace(entries);
    });
  }

  /**
   * Whether the agent answers `name` without a model call: reserved members, values the
   * application wrote, and setters (`"name="`) for any name that is not reserved.
   */
  static respondTo(agent: unknown, name: string): boolean {
    return respondsTo(stateOf(agent, "Agent.respondTo()"), name);
  }

  /** `"[Agent role]"`, so string conversion never calls a method. */
  [Symbol.toPrimitive](): string {
    return `[Agent ${stateOf(this, "Agent").role}]`;
  }

  get [Symbol.toStringTag](): string {
    return "Agent";
  }

  [inspect.custom](_depth: number, options: { stylize?: (text: string, style: string) => string }, format: typeof inspect = inspect): string {
    const state = stateOf(this, "inspect");
    const values = Object.fromEntries([...state.appKeys].filter((key) => state.isReader(key)).map((key) => [key, state.context[key]]));
    const name = options?.stylize ? options.stylize(`Agent<${state.role}>`, "special") : `Agent<${state.role}>`;
    return Object.keys(values).length === 0 ? name : `${name} ${format(values, { ...options, depth: 2 } as never)}`;
  }
}

function respondsTo(state: AgentState, name: unknown): boolean {
  if (typeof name !== "string") return false;
  if (name.endsWith("=")) {
    const base = name.slice(0, -1);
    return base !== "" && !RESERVED_NAMES.has(base);
  }
  if (name === "then") return false;
  return RESERVED_NAMES.has(name) || state.isReader(name);
}

/** What `Agent.call` takes for one call. */
export interface CallOptions {
  /** Named arguments, as `kw()` passes them. */
  readonly kwargs?: Readonly<Record<string, unknown>> | undefined;
  /** Aborting it cancels this call (with a `cancelled` outcome), besides the agent's own `signal`. */
  readonly signal?: AbortSignal | undefined;
  /** This call's limit on the whole call, instead of the agent's. @unit ms */
  readonly callTimeoutMs?: number | undefined;
  /** This call's limit on its program's own running time, instead of the agent's. @unit ms */
  readonly executionTimeoutMs?: number | undefined;
  /**
   * Told each step of the call as it goes, for a UI: asking the provider, a program ready,
   * running it, each tool call and fetch, an attempt that failed, and the end (see `CallEvent`).
   * Called synchronously; what it throws is ignored.
   */
  readonly onEvent?: ((event: CallEvent) => void) | undefined;
}

const CALL_OPTION_NAMES = ["kwargs", "signal", "callTimeoutMs", "executionTimeoutMs", "onEvent"] as const;

function readCallOptions(options: unknown): { kwargs?: Record<string, unknown>; signal?: AbortSignal; limits: { callTimeoutMs?: number; executionTimeoutMs?: number }; onEvent?: (event: CallEvent) => void } {
  if (typeof options !== "object" || options === null || Array.isArray(options)) throw new TypeError("Agent.call(agent, method, args, options): options must be an object such as { signal, callTimeoutMs }.");
  for (const name of Object.keys(options)) {
    if (!(CALL_OPTION_NAMES as readonly string[]).includes(name)) throw new TypeError(`Unknown option "${name}" for Agent.call(). Valid options: ${CALL_OPTION_NAMES.join(", ")}.`);
  }
  const { kwargs, signal, callTimeoutMs, executionTimeoutMs, onEvent } = options as CallOptions;
  if (onEvent !== undefined && typeof onEvent !== "function") throw new TypeError('Agent.call() option "onEvent" must be a function (event) => void.');
  if (kwargs !== undefined && (typeof kwargs !== "object" || kwargs === null || Array.isArray(kwargs))) throw new TypeError('Agent.call() option "kwargs" must be an object of named arguments.');
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError('Agent.call() option "signal" must be an AbortSignal.');
  const limit = (value: unknown, name: string) => {
    if (value === undefined) return undefined;
    if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > 2 ** 31 - 1) throw new TypeError(`Agent.call() option "${name}" must be a whole number of milliseconds from 1 to ${2 ** 31 - 1}.`);
    return value as number;
  };
  const limits = { callTimeoutMs: limit(callTimeoutMs, "callTimeoutMs"), executionTimeoutMs: limit(executionTimeoutMs, "executionTimeoutMs") };
  return { ...(kwargs === undefined ? {} : { kwargs: kwargs as Record<string, unknown> }), ...(signal === undefined ? {} : { signal }), limits, ...(onEvent === undefined ? {} : { onEvent }) };
}

/** What the application receives for an agent a program of `state`'s handed back: the live child, or its text when it cannot be made. */
function handOutFrom(state: AgentState): (reference: AgentReference) => unknown {
  return (reference) => {
    const child = handedBackChild(state, reference);
    return child === undefined ? reference.text : proxyFor(child);
  };
}

function proxyFor(state: AgentState): AgentProxy {
  const existing = proxies.get(state);
  if (existing) return existing;
  const target = Object.create(Agent.prototype) as object;
  const methods = new Map<string, DynamicMethod>();
  let proxy!: AgentProxy;

  const reserved: Record<string, () => unknown> = {
    remember: () => (entries: Record<string, unknown>) => {
      if (typeof entries !== "object" || entries === null || Array.isArray(entries)) {
        throw new TypeError("remember() takes an object of entries, e.g. agent.remember({ mode: \"scientific\" }).");
      }
      const names = Object.keys(entries);
      for (const key of names) {
        if (RESERVED_NAMES.has(key)) throw new TypeError(reservedMessage(key));
      }
      state.checkEntries(names);
      for (const [key, value] of Object.entries(entries)) state.write(key, value);
      return proxy;
    },
    runtimeContext: () => state.context,
    delegate: () => (role: string, options?: AgentOptions) => {
      const childRole = validateRole(role);
      if (state.depth + 1 > state.options.maxDelegationDepth) {
        throw new ImprovError("budget_exceeded", `delegate("${childRole}") would reach depth ${state.depth + 1}, beyond maxDelegationDepth ${state.options.maxDelegationDepth}.`);
      }
      return proxyFor(state.child(childRole, options));
    },
    then: () => undefined,
    toJSON: () => () => ({ role: state.role }),
    toString: () => () => `[Agent ${state.role}]`,
    constructor: () => Agent,
  };

  proxy = new Proxy(target, {
    get(_target, name, receiver) {
      if (typeof name === "symbol") return Reflect.get(target, name, receiver);
      if (RESERVED_NAMES.has(name)) return (reserved[name] as () => unknown)();
      if (state.isReader(name)) return state.context[name];
      let method = methods.get(name);
      if (!method) {
        method = (...args: unknown[]) => performCall(state, name, args, { speaker: "user", handOutAgent: handOutFrom(state) });
        methods.set(name, method);
      }
      return method;
    },
    set(_target, name, value) {
      if (typeof name === "symbol") throw new TypeError("Symbol keys are reserved on agents and cannot be assigned.");
      if (RESERVED_NAMES.has(name)) throw new TypeError(reservedMessage(name));
      state.write(name, value);
      return true;
    },
    has(_target, name) {
      return typeof name === "symbol" ? Reflect.has(target, name) : respondsTo(state, name);
    },
    deleteProperty(_target, name) {
      if (typeof name === "symbol" || RESERVED_NAMES.has(name)) throw new TypeError(`"${String(name)}" is reserved on agents and cannot be deleted.`);
      state.remove(name);
      return true;
    },
    ownKeys() {
      return [...state.appKeys].filter((key) => state.isReader(key));
    },
    getOwnPropertyDescriptor(_target, name) {
      if (typeof name === "symbol" || !state.isReader(name)) return undefined;
      return { value: state.context[name], writable: true, enumerable: true, configurable: true };
    },
    defineProperty(_target, name) {
      throw new TypeError(`Use assignment or remember() to store "${String(name)}" on an agent.`);
    },
    setPrototypeOf() {
      return false;
    },
    preventExtensions() {
      return false;
    },
  }) as AgentProxy;

  states.set(proxy, state);
  // util.inspect looks through proxies to their target, so the target must lead to the state too.
  states.set(target, state);
  proxies.set(state, proxy);
  return proxy;
}

/** Whether an agent of this process is open (not closed or closing). */
function anyAgentOpen(): boolean {
  for (const state of agentsInProcess()) if (!state.calls.closing) return true;
  return false;
}
