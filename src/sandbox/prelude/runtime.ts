/**
 * The isolate-side runtime: compiles and runs one program per call, with `context`, `args`,
 * `kwargs`, `delegate` and `console` in scope, and keeps the agent's history mirror. It runs
 * inside the isolate (sent as source text after `hardenRealm`), so it must not use anything
 * from its module scope; its helpers arrive as parameters.
 *
 * Whatever a program throws or rejects with becomes a plain `{ name, message }`; results and
 * context leave as JSON strings made by the encoder. The host side takes a call's result
 * explicitly (`take(callId)`, right after the synchronous part or on `notify(callId)`), so a
 * stray rejection reported by isolated-vm for some task can never be mistaken for a result.
 */
import type { ErrorType } from "../../outcome.ts";
import type { IsolateResult, MirrorChunk, RunPayload } from "../protocol.ts";
import type { SandboxLimits } from "../limits.ts";

interface ReferenceLike {
  apply(receiver: undefined, args: unknown[], options: object): Promise<unknown>;
}

export interface IsolateRuntime {
  /**
   * Adds records to the history mirror ahead of a run (large syncs arrive in chunks). Records
   * the mirror already holds are skipped, so a chunk sent twice is added once.
   */
  sync(chunk: MirrorChunk): void;
  start(payload: RunPayload): void;
  /**
   * The call's result once it settled (ending the call), or null while it runs. Asking again
   * for the same call returns the same result, so a take whose answer was lost can be repeated.
   */
  take(callId: string): { result: IsolateResult; clean: boolean } | null;
}

/** What the runtime is made from: helpers sent as source, and the host's callbacks and limits. */
export interface RuntimeParts {
  readonly createEncoder: () => (value: unknown, maxChars: number) => string;
  readonly createPrinter: () => (value: unknown, maxChars: number) => string;
  readonly notify: (callId: string) => void;
  readonly bridge: ReferenceLike;
  readonly limits: SandboxLimits;
}

export function createRuntime(parts: RuntimeParts): IsolateRuntime {
  "use strict";
  const { createEncoder, createPrinter, notify, bridge, limits } = parts;
  const { freeze, create, defineProperty, getPrototypeOf, isFrozen, keys, getOwnPropertyDescriptor } = Object;
  const apply = Reflect.apply;
  const ownKeys = Reflect.ownKeys;
  const stringify = JSON.stringify;
  const StringCtor = String;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const isArray = Array.isArray;
  const ProxyCtor = Proxy;
  const MapCtor = Map;
  const PromiseCtor = Promise;
  const WeakSetCtor = WeakSet;
  const weakSetAdd = WeakSet.prototype.add;
  const weakSetHas = WeakSet.prototype.has;
  const promiseThen = Promise.prototype.then;
  const arrayPush = Array.prototype.push;
  const AsyncFunction = getPrototypeOf(async function () {}).constructor as new (...params: string[]) => (
    ...args: unknown[]
  ) => Promise<unknown>;
  const bridgeApply = bridge.apply;
  const encode = createEncoder();
  const print = createPrinter();
  // The encoder's count is of its own compact text (a shared part once), which is at most about
  // twice the value's JSON; refusing past four times the limit here never refuses a value within
  // it. The host measures the value as expanded JSON against the limit itself.
  const ENCODED_PER_JSON_CHAR = 4;
  const encodeWithin = (value: unknown, jsonLimit: number) => encode(value, jsonLimit * ENCODED_PER_JSON_CHAR);
  const global = globalThis as Record<PropertyKey, unknown>;
  const baselineGlobals = new Set(ownKeys(global));

  const copyOptions = freeze(Object.assign(create(null), { copy: true }));
  const promiseResultOptions = freeze(Object.assign(create(null), { promise: true, copy: true }));
  const BRIDGE_OPTIONS = freeze(Object.assign(create(null), { arguments: copyOptions, result: promiseResultOptions }));

  interface CallState {
    readonly id: string;
    readonly depth: number;
    readonly maxDepth: number;
    ended: boolean;
    delegateCalls: number;
    delegatesInFlight: number;
    readonly console: string[];
    consoleChars: number;
    consoleTruncated: boolean;
  }

  const calls = new MapCtor<string, CallState>();
  const slots = new MapCtor<string, IsolateResult>();
  const budgetErrors = new WeakSetCtor<object>();

  // The history mirror: records are frozen on arrival; programs see it through a view
  // that refuses every write, so nothing a program does can change what later calls read.
  const mirror: object[] = [];
  const refuse = () => false;
  const historyView = new ProxyCtor(mirror, {
    set: refuse,
    defineProperty: refuse,
    deleteProperty: refuse,
    setPrototypeOf: refuse,
    preventExtensions: refuse,
  });

  function deepFreeze(root: unknown): void {
    const pending = [root];
    while (pending.length > 0) {
      const value = pending.pop();
      if (typeof value !== "object" || value === null || isFrozen(value)) continue;
      freeze(value);
      for (const key of keys(value)) pending.push((value as Record<string, unknown>)[key]);
    }
  }

  const parseJson = JSON.parse;
  function syncHistory(chunk: MirrorChunk): void {
    if (chunk.reset) mirror.length = 0;
    const { records } = chunk;
    for (let index = Math.max(0, mirror.length - chunk.start); index < records.length; index += 1) {
      const record = parseJson(records[index] as string) as object;
      deepFreeze(record);
      apply(arrayPush, mirror, [record]);
    }
  }

  function capText(value: unknown, limit: number): string {
    let text: string;
    try {
      // An array's own string conversion expands shared elements without bound; the printer stops at the limit.
      text = typeof value === "string" ? value : value === undefined || value === null ? "" : isArray(value) ? print(value, limit) : StringCtor(value);
    } catch {
      return "[unprintable]";
    }
    return text.length > limit ? `${text.slice(0, limit)}… [truncated]` : text;
  }

  function describeThrown(thrown: unknown): { name: string; message: string } {
    if (typeof thrown === "object" && thrown !== null) {
      let name: unknown;
      let message: unknown;
      try {
        name = (thrown as { name?: unknown }).name;
      } catch {
        name = "Error";
      }
      try {
        message = (thrown as { message?: unknown }).message;
      } catch {
        message = "[message could not be read]";
      }
      return { name: capText(name, 200) || "Error", message: capText(message, limits.maxErrorMessageChars) };
    }
    return { name: "Thrown", message: capText(thrown, limits.maxErrorMessageChars) };
  }

  function budgetError(message: string): Error {
    const error = new ErrorCtor(message);
    error.name = "BudgetExceededError";
    apply(weakSetAdd, budgetErrors, [error]);
    return error;
  }

  function settle(call: CallState, result: IsolateResult): void {
    if (call.ended) return;
    slots.set(call.id, result);
    notify(call.id);
  }

  function failure(call: CallState, errorType: ErrorType, name: string, message: string): IsolateResult {
    return { status: "error", errorType, name, message, console: call.console };
  }

  function tooLarge(call: CallState, limit: "result" | "context"): IsolateResult {
    return { status: "error", errorType: "execution", name: "ResultTooLarge", message: "", console: call.console, limit };
  }

  function snapshotContext(context: Record<string, unknown>): Record<string, unknown> {
    const copy = create(null) as Record<string, unknown>;
    for (const key of keys(context)) {
      if (key === "conversation_history") continue;
      const descriptor = getOwnPropertyDescriptor(context, key);
      copy[key] = descriptor && "value" in descriptor ? descriptor.value : descriptor?.get ? apply(descriptor.get, context, []) : undefined;
    }
    return copy;
  }

  function succeed(call: CallState, value: unknown, context: Record<string, unknown>): IsolateResult {
    let valueText: string;
    let contextText: string;
    try {
      valueText = encodeWithin(value, limits.maxResultChars);
    } catch (error) {
      const { name, message } = describeThrown(error);
      return name === "ResultTooLarge" ? tooLarge(call, "result") : failure(call, "execution", name, `The program's return value could not be read: ${message}`);
    }
    try {
      contextText = encodeWithin(snapshotContext(context), limits.maxResultChars);
    } catch (error) {
      const { name, message } = describeThrown(error);
      return name === "ResultTooLarge" ? tooLarge(call, "context") : failure(call, "execution", name, `The program left context that could not be read: ${message}`);
    }
    return { status: "ok", value: valueText, context: contextText, console: call.console };
  }

  function fail(call: CallState, thrown: unknown): IsolateResult {
    const { name, message } = describeThrown(thrown);
    const isBudget = typeof thrown === "object" && thrown !== null && apply(weakSetHas, budgetErrors, [thrown]);
    // The engine's answer when the isolate's allocator refuses an ArrayBuffer: the memory limit.
    const isOutOfMemory = name === "RangeError" && message === "Array buffer allocation failed";
    return failure(call, isBudget ? "budget_exceeded" : isOutOfMemory ? "memory_limit" : "execution", name, message);
  }

  function makeConsole(call: CallState): object {
    const write = (...items: unknown[]) => {
      if (call.ended || call.consoleTruncated) return;
      let line = "";
      for (let index = 0; index < items.length; index += 1) {
        const item = items[index];
        let text: string;
        if (typeof item === "string") text = item;
        else {
          try {
            text = encodeForConsole(item);
          } catch {
            text = capText(item, 1000);
          }
        }
        line += (index === 0 ? "" : " ") + text;
        if (line.length > limits.maxConsoleChars) break;
      }
      if (call.console.length >= limits.maxConsoleLines || call.consoleChars + line.length > limits.maxConsoleChars) {
        call.consoleTruncated = true;
        apply(arrayPush, call.console, ["… console output truncated"]);
        return;
      }
      call.consoleChars += line.length;
      apply(arrayPush, call.console, [line]);
    };
    return freeze({ log: write, info: write, warn: write, error: write, debug: write });
  }

  function encodeForConsole(item: unknown): string {
    if (typeof item !== "object" || item === null) return capText(item, 1000);
    return print(item, 2000);
  }

  function toOutcome(envelope: unknown): object {
    if (typeof envelope !== "object" || envelope === null) {
      return { status: "error", ok: false, error_type: "execution", error_message: "The delegated call returned no outcome.", retriable: false };
    }
    const source = envelope as Record<string, unknown>;
    const outcome: Record<string, unknown> = {
      status: source.status === "ok" ? "ok" : "error",
      ok: source.ok === true,
      retriable: source.retriable === true,
    };
    if (outcome.ok) outcome.value = source.value;
    else {
      outcome.error_type = typeof source.error_type === "string" ? source.error_type : "execution";
      outcome.error_message = typeof source.error_message === "string" ? source.error_message : "";
    }
    return outcome;
  }

  async function callDelegate(call: CallState, role: string, optionsText: string | null, method: string, args: unknown[]): Promise<object> {
    if (call.ended) return new PromiseCtor<object>(() => {});
    if (call.delegateCalls >= limits.maxDelegateCalls) {
      throw budgetError(`This program made more than ${limits.maxDelegateCalls} delegate calls, the per-call limit.`);
    }
    if (call.delegatesInFlight >= limits.maxConcurrentDelegates) {
      throw budgetError(`This program has ${limits.maxConcurrentDelegates} delegate calls in flight, the limit; await some before starting more.`);
    }
    // Arguments too large to encode go as null: the host answers with an invalid_input outcome.
    let argsText: string | null;
    try {
      argsText = encodeWithin(args, limits.maxDelegateArgumentChars);
    } catch {
      argsText = null;
    }
    call.delegateCalls += 1;
    call.delegatesInFlight += 1;
    let envelope: unknown;
    try {
      envelope = await apply(bridgeApply, bridge, [undefined, [call.id, stringify({ role, method, options: optionsText, args: argsText })], BRIDGE_OPTIONS]);
    } catch {
      envelope = null;
    } finally {
      call.delegatesInFlight -= 1;
    }
    if (call.ended) return new PromiseCtor<object>(() => {});
    return toOutcome(envelope);
  }

  function makeDelegate(call: CallState) {
    return function delegate(role: unknown, options?: unknown): object {
      if (typeof role !== "string" || role.trim() === "" || role.length > 200) {
        throw new TypeErrorCtor("delegate(role, options?) needs a role: a non-empty string of at most 200 characters.");
      }
      if (call.depth + 1 > call.maxDepth) {
        throw budgetError(`delegate("${capText(role, 200)}") would reach delegation depth ${call.depth + 1}, beyond maxDelegationDepth ${call.maxDepth}.`);
      }
      let optionsText: string | null = null;
      if (options !== undefined) {
        try {
          optionsText = encodeWithin(options, limits.maxDelegateOptionChars);
        } catch {
          throw new TypeErrorCtor("delegate(role, options): options must be a small plain object.");
        }
      }
      const methods = new MapCtor<string, (...args: unknown[]) => Promise<object>>();
      const label = `[Agent ${role}]`;
      return new ProxyCtor(create(null), {
        get(_target, name) {
          if (name === Symbol.toPrimitive) return () => label;
          if (typeof name !== "string" || name === "then" || name === "constructor") return undefined;
          if (name === "toString") return () => label;
          if (name === "toJSON") return () => ({ role });
          let method = methods.get(name);
          if (!method) {
            method = (...args: unknown[]) => callDelegate(call, role, optionsText, name, args);
            methods.set(name, method);
          }
          return method;
        },
        set: refuse,
        defineProperty: refuse,
        deleteProperty: refuse,
      });
    };
  }

  function cleanGlobals(): boolean {
    let clean = true;
    for (const key of ownKeys(global)) {
      if (baselineGlobals.has(key)) continue;
      if (!delete global[key]) clean = false;
    }
    return clean;
  }

  // The result last taken, kept until the next start so that a repeated take gets it again.
  let handedOut: { readonly callId: string; readonly taken: { result: IsolateResult; clean: boolean } } | null = null;

  return freeze({
    sync: syncHistory,
    start(payload: RunPayload): void {
      handedOut = null;
      const call: CallState = {
        id: payload.callId,
        depth: payload.depth,
        maxDepth: payload.maxDelegationDepth,
        ended: false,
        delegateCalls: 0,
        delegatesInFlight: 0,
        console: [],
        consoleChars: 0,
        consoleTruncated: false,
      };
      calls.set(call.id, call);
      syncHistory(payload.history);
      let program: (...args: unknown[]) => Promise<unknown>;
      try {
        program = new AsyncFunction("context", "args", "kwargs", "delegate", "console", payload.code);
      } catch (error) {
        const { name, message } = describeThrown(error);
        settle(call, failure(call, "invalid_code", name, message));
        return;
      }
      const context = payload.context;
      defineProperty(context, "conversation_history", { value: historyView, writable: false, enumerable: false, configurable: false });
      const running = apply(program, undefined, [context, payload.args, payload.kwargs, makeDelegate(call), makeConsole(call)]);
      apply(promiseThen, running, [
        (value: unknown) => settle(call, succeed(call, value, context)),
        (thrown: unknown) => settle(call, fail(call, thrown)),
      ]);
    },
    take(callId: string): { result: IsolateResult; clean: boolean } | null {
      if (handedOut !== null && handedOut.callId === callId) return handedOut.taken;
      const result = slots.get(callId);
      if (result === undefined) return null;
      const call = calls.get(callId);
      if (call) call.ended = true;
      calls.delete(callId);
      slots.delete(callId);
      handedOut = { callId, taken: { result, clean: cleanGlobals() } };
      return handedOut.taken;
    },
  });
}
