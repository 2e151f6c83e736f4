/**
 * In the isolate: what a running program asks of the host (the bridge kinds of `../protocol.ts`),
 * each kind an entry here (`delegate(role, options).method(...args)`, `content(ref)`,
 * `tools.name(input)`, `fetch(url, init)`) built on
 * one helper, `ask`, which holds what every kind shares: the per-call budget (count, and
 * concurrency for the kinds that hold a place in flight), the encoding of values that leave,
 * the envelope of the answer, and a call that ended (its requests never settle, so nothing of
 * it runs on). Sent into the isolate as source text (composed with the other pieces in
 * `child/agent-isolate.ts`), so it must use nothing from its module scope.
 */
import type { SandboxLimits } from "../limits.ts";
import type { BridgeAnswer, BridgeFailure, BridgeKind, BridgeRequest, FetchAnswer } from "../protocol.ts";

/** What the host calls of one program's run keep, held by the call. */
export interface HostCallState {
  readonly id: string;
  readonly depth: number;
  readonly maxDepth: number;
  readonly ended: boolean;
  /** Requests made so far (all kinds), against `limits.maxDelegateCalls`. */
  requests: number;
  /** Requests in flight of the kinds that count there, against `limits.maxConcurrentDelegates`. */
  inFlight: number;
}

export interface HostCallParts {
  /** Sends a request of the call's to the host (through the sandbox process); resolves with the answer as it came, a {@link BridgeAnswer} unless something went wrong. */
  readonly send: (call: HostCallState, request: BridgeRequest) => Promise<unknown>;
  readonly limits: SandboxLimits;
  /** Encodes a value within `jsonLimit` characters of JSON (throws `ResultTooLarge` past it). */
  readonly encodeWithin: (value: unknown, jsonLimit: number) => string;
  readonly capText: (value: unknown, limit: number) => string;
  readonly describeThrown: (thrown: unknown) => { name: string; message: string };
  /** The call whose program runs now (for globals such as `content`, which belong to no call). */
  readonly currentCall: () => HostCallState | null;
}

export interface HostCalls {
  /** The `delegate` a call's program gets. */
  delegateFor(call: HostCallState): (role: unknown, options?: unknown) => object;
  /** The role and options of an agent `delegate` made, or undefined for anything else (looked up by identity). */
  agentOf(object: object): readonly [string, string | null] | undefined;
  /** The global `kw(values)`: named arguments for a delegated method. */
  readonly kw: (values: unknown) => object;
  /** The global `content(ref)`. */
  readonly content: (ref: unknown) => Promise<unknown>;
  /** The `tools` a call's program gets: a frozen object of the granted tools, tool sets one level down. */
  toolsFor(call: HostCallState, names: readonly string[]): object;
  /** The class of the errors a failed tool call throws in programs (the global `ToolError`). */
  readonly ToolError: new (message: string, tool: string) => Error;
  /** The `fetch` a call's program gets when the agent has an egress policy. */
  fetchFor(call: HostCallState): (input: unknown, init?: unknown) => Promise<object>;
  /** The class of the errors a refused or failed fetch throws in programs (the global `EgressError`). */
  readonly EgressError: new (message: string, url: string) => Error;
  /**
   * How a value the program threw, left uncaught, ends its call when it is an error of this
   * runtime's: a budget error (`budget_exceeded`) or a tool's failure (`tool`); else undefined.
   */
  failureOf(thrown: unknown): { readonly errorType: "budget_exceeded" | "tool"; readonly retriable: boolean } | undefined;
}

export function createHostCalls(parts: HostCallParts): HostCalls {
  "use strict";
  const { send, limits, encodeWithin, capText, describeThrown, currentCall } = parts;
  const { freeze, create, defineProperty } = Object;
  const apply = Reflect.apply;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const ProxyCtor = Proxy;
  const MapCtor = Map;
  const PromiseCtor = Promise;
  const WeakMapCtor = WeakMap;
  const toPrimitive = Symbol.toPrimitive;
  const ArrayIsArray = Array.isArray;
  const ArrayFrom = Array.from;
  const ObjectEntries = Object.entries;
  const StringCtor = String;
  const JSONParse = JSON.parse;
  /** How an error this runtime threw ends its call, left uncaught: a budget error, or a tool's failure and whether it may pass. */
  type KnownFailure = { readonly errorType: "budget_exceeded" | "tool"; readonly retriable: boolean };
  const knownErrors = new WeakMapCtor<object, KnownFailure>();
  const weakMapGet = WeakMap.prototype.get;
  const weakMapSet = WeakMap.prototype.set;
  const BUDGET_FAILURE: KnownFailure = freeze({ errorType: "budget_exceeded", retriable: false });

  /** How a kind counts against the per-call budget: whether it holds a place in flight. */
  interface Budget {
    readonly inFlight: boolean;
  }
  const IN_FLIGHT: Budget = freeze({ inFlight: true });
  const QUICK: Budget = freeze({ inFlight: false });

  function budgetError(message: string): Error {
    const error = new ErrorCtor(message);
    error.name = "BudgetExceededError";
    apply(weakMapSet, knownErrors, [error, BUDGET_FAILURE]);
    return error;
  }

  /** What a request of an ended call gets: nothing, ever, so no code of it runs on. */
  function never<T>(): Promise<T> {
    return new PromiseCtor<T>(() => {});
  }

  /**
   * A value that leaves with a request, encoded; null when it is too large to encode within its
   * limit (the host refuses that request with an invalid_input failure that says so). Any other
   * failure to read it is the program's mistake, thrown as a TypeError.
   */
  function encodeArgument(value: unknown, jsonLimit: number, what: string): string | null {
    try {
      return encodeWithin(value, jsonLimit);
    } catch (error) {
      const { name, message } = describeThrown(error);
      if (name === "ResultTooLarge") return null;
      throw new TypeErrorCtor(`${what} could not be read: ${message}`);
    }
  }

  /** The answer as the host sent it, checked for shape. */
  function readAnswer(answer: unknown): BridgeAnswer<BridgeKind> {
    if (typeof answer === "object" && answer !== null) {
      const { ok, value, failure } = answer as { ok?: unknown; value?: unknown; failure?: unknown };
      if (ok === true) return { ok: true, value: value as never };
      if (ok === false && typeof failure === "object" && failure !== null) {
        const { errorType, message, retriable } = failure as Record<string, unknown>;
        return {
          ok: false,
          failure: { errorType: typeof errorType === "string" ? (errorType as BridgeFailure["errorType"]) : "execution", message: typeof message === "string" ? message : "", retriable: retriable === true },
        };
      }
    }
    return { ok: false, failure: { errorType: "execution", message: "The host gave no answer.", retriable: false } };
  }

  /**
   * Sends one request of `call`'s to the host and waits for its answer. `build` makes the request
   * once the budget allows it (encoding what leaves). A call that has ended, before or while it
   * waits, gets no answer at all.
   */
  async function ask<K extends BridgeKind>(call: HostCallState, budget: Budget, build: () => BridgeRequest<K>): Promise<BridgeAnswer<K>> {
    if (call.ended) return never();
    if (call.requests >= limits.maxDelegateCalls) {
      throw budgetError(`This program made more than ${limits.maxDelegateCalls} requests of the host (delegate, tool and content calls), the per-call limit.`);
    }
    if (budget.inFlight && call.inFlight >= limits.maxConcurrentDelegates) {
      throw budgetError(`This program has ${limits.maxConcurrentDelegates} delegate and tool calls in flight, the limit; await some before starting more.`);
    }
    // Counted before the request is built: building it runs the program's getters, which may ask again.
    call.requests += 1;
    if (budget.inFlight) call.inFlight += 1;
    let request: BridgeRequest<K>;
    try {
      request = build();
    } catch (error) {
      if (budget.inFlight) call.inFlight -= 1;
      throw error;
    }
    let answer: unknown;
    try {
      answer = await send(call, request);
    } catch {
      answer = null;
    } finally {
      if (budget.inFlight) call.inFlight -= 1;
    }
    if (call.ended) return never();
    return readAnswer(answer) as BridgeAnswer<K>;
  }

  /** A delegated call's Outcome in the program's field names, read from what the host answered. */
  function toOutcome(answer: BridgeAnswer<"delegate">): object {
    if (!answer.ok) return failedOutcome(answer.failure);
    const source = answer.value as unknown as Record<string, unknown> | null;
    if (typeof source !== "object" || source === null) return failedOutcome({ errorType: "execution", message: "The delegated call returned no outcome.", retriable: false });
    const outcome: Record<string, unknown> = { status: source.status === "ok" ? "ok" : "error", ok: source.ok === true, retriable: source.retriable === true };
    if (outcome.ok) outcome.value = source.value;
    else {
      outcome.error_type = typeof source.error_type === "string" ? source.error_type : "execution";
      outcome.error_message = typeof source.error_message === "string" ? source.error_message : "";
    }
    return outcome;
  }

  function failedOutcome(failure: BridgeFailure): object {
    return { status: "error", ok: false, error_type: failure.errorType, error_message: failure.message, retriable: failure.retriable };
  }

  /** Options given to `delegate(role, options)`, encoded once for every call made through that agent. */
  interface DelegateOptions {
    readonly text: string | null;
    readonly tooLarge: boolean;
  }

  async function callDelegate(call: HostCallState, role: string, options: DelegateOptions, method: string, args: unknown[]): Promise<object> {
    // Named arguments come last, marked by kw(): they go as the child's kwargs.
    const last = args.length > 0 ? args[args.length - 1] : undefined;
    const kwargs = typeof last === "object" && last !== null && apply(weakMapGet, named, [last]) === true ? last : undefined;
    const positional = kwargs === undefined ? args : args.slice(0, -1);
    const what = `The arguments to ${capText(role, 200)}.${capText(method, 200)}()`;
    const answer = await ask<"delegate">(call, IN_FLIGHT, () => {
      const kwargsText = kwargs === undefined ? null : encodeArgument(kwargs, limits.maxDelegateArgumentChars, what);
      // Named arguments too large to send make the whole argument list too large (args null).
      const argsText = kwargs !== undefined && kwargsText === null ? null : encodeArgument(positional, limits.maxDelegateArgumentChars, what);
      return { kind: "delegate", role, method, args: argsText, kwargs: kwargsText, options: options.text, optionsTooLarge: options.tooLarge };
    });
    return toOutcome(answer);
  }

  const refuse = () => false;

  function delegateFor(call: HostCallState) {
    return function delegate(role: unknown, options?: unknown): object {
      if (typeof role !== "string" || role.trim() === "" || role.length > 200) {
        throw new TypeErrorCtor("delegate(role, options?) needs a role: a non-empty string of at most 200 characters.");
      }
      if (call.depth + 1 > call.maxDepth) {
        throw budgetError(`delegate("${capText(role, 200)}") would reach delegation depth ${call.depth + 1}, beyond maxDelegationDepth ${call.maxDepth}.`);
      }
      let encodedOptions: DelegateOptions = { text: null, tooLarge: false };
      if (options !== undefined) {
        const text = encodeArgument(options, limits.maxDelegateOptionChars, "delegate(role, options): the options");
        encodedOptions = { text, tooLarge: text === null };
      }
      const methods = new MapCtor<string, (...args: unknown[]) => Promise<object>>();
      const label = `[Agent ${role}]`;
      const agent = new ProxyCtor(create(null), {
        get(_target, name) {
          if (name === toPrimitive) return () => label;
          if (typeof name !== "string" || name === "then" || name === "constructor") return undefined;
          if (name === "toString") return () => label;
          if (name === "toJSON") return () => ({ role });
          let method = methods.get(name);
          if (!method) {
            method = (...args: unknown[]) => callDelegate(call, role, encodedOptions, name, args);
            methods.set(name, method);
          }
          return method;
        },
        set: refuse,
        defineProperty: refuse,
        deleteProperty: refuse,
      });
      apply(weakMapSet, agents, [agent, freeze([role, encodedOptions.tooLarge ? null : encodedOptions.text])]);
      return agent;
    };
  }

  /** The agents `delegate` made, with their role and encoded options: a program's result may hand one to its caller. */
  const agents = new WeakMapCtor<object, readonly [string, string | null]>();

  function agentOf(object: object): readonly [string, string | null] | undefined {
    return apply(weakMapGet, agents, [object]) as readonly [string, string | null] | undefined;
  }

  /** Named arguments marked by `kw()`, told apart by identity: a plain object with the same keys is positional. */
  const named = new WeakMapCtor<object, true>();

  function kw(values: unknown): object {
    if (typeof values !== "object" || values === null || ArrayIsArray(values)) throw new TypeErrorCtor("kw(values) takes an object of named arguments, such as kw({ from: \"c\", to: \"f\" }).");
    const marked = freeze(Object.assign(create(null), values) as object);
    apply(weakMapSet, named, [marked, true]);
    return marked;
  }

  /** `content(ref)`: a copy of the value an earlier call returned, when the agent keeps it; else undefined. */
  async function content(ref: unknown): Promise<unknown> {
    const call = currentCall();
    if (call === null || call.ended) return never();
    if (typeof ref !== "string" || ref.length > 200) throw new TypeErrorCtor("content(ref) takes a record's content_ref (a string of at most 200 characters).");
    const answer = await ask<"content">(call, QUICK, () => ({ kind: "content", ref }));
    return answer.ok ? answer.value : undefined;
  }

  /**
   * Names an error class of the runtime's as the hardening names Error prototypes (an accessor,
   * so a subclass may still set its own `name`), and freezes it.
   */
  function sealErrorClass(ErrorClass: { readonly prototype: object }, name: string): void {
    const prototype = ErrorClass.prototype;
    const accessor = {
      get: () => name,
      set(this: object, value: unknown) {
        if (this === prototype) throw new TypeErrorCtor(`${name}.prototype.name cannot be changed.`);
        defineProperty(this, "name", { value, writable: true, enumerable: false, configurable: true });
      },
    };
    // The accessor's functions are shared by every program, as the class is.
    defineProperty(prototype, "name", { get: freeze(accessor.get), set: freeze(accessor.set), enumerable: false, configurable: false });
    freeze(prototype);
    freeze(ErrorClass);
  }

  /** The error a failed tool call throws in the program; the program may catch it. */
  class ToolError extends ErrorCtor {
    readonly tool: string;
    constructor(message: string, tool: string) {
      super(message);
      this.tool = tool;
    }
  }
  sealErrorClass(ToolError, "ToolError");

  /** The error a refused or failed `fetch` throws in the program; the program may catch it. */
  class EgressError extends ErrorCtor {
    readonly url: string;
    constructor(message: string, url: string) {
      super(message);
      this.url = url;
    }
  }
  sealErrorClass(EgressError, "EgressError");

  async function callTool(call: HostCallState, name: string, input: unknown): Promise<unknown> {
    const answer = await ask<"tool">(call, IN_FLIGHT, () => ({
      kind: "tool",
      tool: name,
      input: encodeArgument(input, limits.maxToolInputChars, `The input of tools.${name}()`),
    }));
    if (answer.ok) return answer.value;
    const { errorType, message, retriable } = answer.failure;
    // Input the tool's schema refuses is the program's mistake, as an engine TypeError is.
    if (errorType === "invalid_input") throw new TypeErrorCtor(message);
    if (errorType === "budget_exceeded") throw budgetError(message);
    const error = new ToolError(message, name);
    apply(weakMapSet, knownErrors, [error, freeze({ errorType: "tool", retriable })]);
    throw error;
  }

  /** A header list from what a program gave: a plain object, an array of pairs, or anything with `entries()`. */
  function headerPairs(given: unknown): [string, string][] {
    if (given === undefined || given === null) return [];
    if (typeof given !== "object") throw new TypeErrorCtor("fetch(url, { headers }): headers must be an object of names and values, or an array of [name, value] pairs.");
    const source = ArrayIsArray(given) ? given : typeof (given as { entries?: unknown }).entries === "function" ? ArrayFrom((given as { entries(): Iterable<unknown> }).entries()) : ObjectEntries(given);
    const pairs: [string, string][] = [];
    for (const pair of source as unknown[]) {
      if (!ArrayIsArray(pair) || pair.length !== 2) throw new TypeErrorCtor("fetch(url, { headers }): each header must be a [name, value] pair.");
      pairs.push([StringCtor(pair[0]), StringCtor(pair[1])]);
    }
    return pairs;
  }

  /** The response a program's `fetch` resolves with: a plain object, its body read whole by the host. */
  function responseOf(answer: FetchAnswer): object {
    const byName = new MapCtor<string, string>();
    for (const [name, value] of answer.headers) {
      const known = byName.get(name);
      byName.set(name, known === undefined ? value : `${known}, ${value}`);
    }
    const nameOf = (name: unknown) => StringCtor(name).toLowerCase();
    const headers = freeze({
      get: (name: unknown) => byName.get(nameOf(name)) ?? null,
      has: (name: unknown) => byName.has(nameOf(name)),
      entries: () => byName.entries(),
      keys: () => byName.keys(),
      forEach: (callback: (value: string, name: string) => void) => byName.forEach((value, name) => callback(value, name)),
    });
    const body = answer.body;
    return {
      ok: answer.status >= 200 && answer.status <= 299,
      status: answer.status,
      statusText: answer.statusText,
      url: answer.url,
      redirected: answer.redirected,
      headers,
      text: async () => body,
      json: async () => JSONParse(body) as unknown,
    };
  }

  function fetchFor(call: HostCallState) {
    return async function fetch(input: unknown, init?: unknown): Promise<object> {
      const href = typeof input === "object" && input !== null && typeof (input as { href?: unknown }).href === "string" ? (input as { href: string }).href : input;
      if (typeof href !== "string") throw new TypeErrorCtor("fetch(url, init?) needs the URL as a string.");
      if (init !== undefined && init !== null && typeof init !== "object") throw new TypeErrorCtor("fetch(url, init?): init must be an object such as { method, headers, body }.");
      const { method, headers, body } = (init ?? {}) as { method?: unknown; headers?: unknown; body?: unknown };
      if (method !== undefined && typeof method !== "string") throw new TypeErrorCtor("fetch(url, { method }): the method must be a string such as \"GET\".");
      if (body !== undefined && body !== null && typeof body !== "string") throw new TypeErrorCtor("fetch(url, { body }): the body must be a string (JSON.stringify an object first).");
      const pairs = headerPairs(headers);
      const answer = await ask<"fetch">(call, IN_FLIGHT, () => ({ kind: "fetch", url: href, method: method ?? "GET", headers: pairs, body: body ?? null }));
      if (answer.ok) return responseOf(answer.value);
      const { errorType, message, retriable } = answer.failure;
      if (errorType === "invalid_input") throw new TypeErrorCtor(message);
      if (errorType === "budget_exceeded") throw budgetError(message);
      const error = new EgressError(message, href);
      apply(weakMapSet, knownErrors, [error, freeze({ errorType: "tool", retriable })]);
      throw error;
    };
  }

  function toolsFor(call: HostCallState, names: readonly string[]): object {
    const tools = create(null) as Record<string, unknown>;
    const sets = new MapCtor<string, Record<string, unknown>>();
    for (const name of names) {
      const tool = freeze((input?: unknown) => callTool(call, name, input));
      const dot = name.indexOf(".");
      if (dot === -1) {
        tools[name] = tool;
        continue;
      }
      const setName = name.slice(0, dot);
      let set = sets.get(setName);
      if (set === undefined) {
        set = create(null) as Record<string, unknown>;
        sets.set(setName, set);
        tools[setName] = set;
      }
      set[name.slice(dot + 1)] = tool;
    }
    for (const set of sets.values()) freeze(set);
    return freeze(tools);
  }

  function failureOf(thrown: unknown): KnownFailure | undefined {
    if (typeof thrown !== "object" || thrown === null) return undefined;
    return apply(weakMapGet, knownErrors, [thrown]) as KnownFailure | undefined;
  }

  // A function declaration has a `prototype` object, which every program would share.
  freeze(kw.prototype);
  return freeze({
    delegateFor,
    agentOf,
    kw: freeze(kw),
    content: freeze(content),
    toolsFor,
    ToolError,
    fetchFor,
    EgressError,
    failureOf,
  });
}

/**
 * Where each bridge kind's entry is above (what programs call); the compiler names a kind that
 * is declared in the protocol and missing here.
 */
export const RUNTIME_ENTRIES = { delegate: "delegateFor", content: "content", tool: "toolsFor", fetch: "fetchFor" } as const satisfies { readonly [K in BridgeKind]: keyof HostCalls };
