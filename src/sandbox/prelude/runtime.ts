/**
 * The isolate-side runtime: compiles and runs one program per call, with `context`, `args`,
 * `kwargs`, `delegate` and `console` in scope, and keeps the agent's history mirror. It runs
 * inside the isolate (sent as source text after `hardenRealm`), so it must not use anything
 * from its module scope; its helpers arrive as parameters.
 *
 * Work a call does not need is left for `tidy`, which the sandbox process calls once the call's
 * answer has left: the records a run brings are kept as text until a program reads the history
 * (or `tidy` parses them), and the globals a program (or its stray continuations) added are
 * removed there, so the next program starts without them.
 *
 * Whatever a program throws or rejects with becomes a plain `{ name, message }`; results and
 * context leave as JSON strings made by the encoder. A program that settles in its synchronous
 * part (and the microtasks it queues) has its result in what `start` returns: isolated-vm copies
 * a returned value after the microtask checkpoint. One that settles later is taken explicitly
 * (`take(callId)` on `notify(callId)`). Either way a result is read from the runtime's own
 * answer, so a stray rejection reported by isolated-vm for some task can never be mistaken for one.
 */
import type { ErrorType } from "../../outcome.ts";
import type { IsolateResult, MirrorChunk, RunPayload, StartAnswer } from "../protocol.ts";
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
  /**
   * Starts a call: first ends the calls whose results left with their start's answer and,
   * unless `tidy` has done so since anything last ran here, removes the globals earlier
   * programs added (`tainted` when one cannot be removed: nothing runs, and the isolate must be
   * replaced), then runs the program. `result` is filled in when the program settles before
   * the answer is copied out, null otherwise.
   */
  start(payload: RunPayload): StartAnswer;
  /**
   * Between calls: removes the globals programs and their stray continuations added, and
   * parses the records that arrived as text. False when a global cannot be removed (the
   * isolate must be replaced).
   */
  tidy(): boolean;
  /**
   * The call's result once it settled (ending the call), or null while it runs: then the
   * runtime calls `notify(callId)` when it settles (a call whose result leaves with `start`'s
   * answer needs no notice). Asking again for the same call returns the same result, so a take
   * whose answer was lost can be repeated. Only the sandbox process's main thread lets a
   * program go on after its start (it answers the bridge), so nothing settles between a
   * start's answer and the take that follows it.
   */
  take(callId: string): IsolateResult | null;
}

/** What the runtime is made from: helpers sent as source, and the host's callbacks and limits. */
export interface RuntimeParts {
  readonly createEncoder: () => (value: unknown, maxChars: number, ownData?: boolean) => string;
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
  const deleteProperty = Reflect.deleteProperty;
  const StringCtor = String;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const isArray = Array.isArray;
  const arrayToString = Array.prototype.toString;
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
  // The encoder counts its own compact text (a shared part once, a reference by index), which
  // is rarely more than a few times the value's JSON; stopping at `encodedCharsPerJsonChar`
  // times the limit bounds the work here, and the host measures the value itself.
  const encodeWithin = (value: unknown, jsonLimit: number, ownData = false) => encode(value, jsonLimit * limits.encodedCharsPerJsonChar, ownData);
  const global = globalThis as Record<PropertyKey, unknown>;
  defineProperty(global, "content", { value: freeze(content), writable: false, enumerable: false, configurable: false });
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
    /** What `start` answers: the result goes in it when the program settles. */
    readonly answer: Extract<StartAnswer, { tainted: false }>;
    /** Set by a `take` that found no result: the host waits for `notify`. */
    watched: boolean;
  }

  /** Options given to `delegate(role, options)`, encoded once for every call made through that agent. */
  interface DelegateOptions {
    readonly text: string | null;
    readonly tooLarge: boolean;
  }

  const calls = new MapCtor<string, CallState>();
  const slots = new MapCtor<string, IsolateResult>();
  const budgetErrors = new WeakSetCtor<object>();

  // The history mirror: records are frozen when parsed; programs see it through a view
  // that refuses every write, so nothing a program does can change what later calls read.
  // The few records a run usually brings wait as text (from `firstUnparsed` on) until a program
  // reads the history or `tidy` comes; a record leaves the text only once it is in the mirror,
  // so a parse stopped part-way (a time limit, a program's full stack) loses nothing.
  const mirror: object[] = [];
  let unparsed: (string | undefined)[] = [];
  let firstUnparsed = 0;
  /** More records than this in one run are parsed at its start, on its own time, as a sync's are. */
  const MAX_RECORDS_AS_TEXT = 4;
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
  const stringifyJson = JSON.stringify;

  // Most records repeat the same method, program text and outcome summary. The mirror keeps
  // one copy of each such string and of each such (frozen) summary, which roughly halves what
  // a record costs here; a bounded table, so a history of all-different values costs no more.
  const SHARED_FIELDS = ["method_name", "speaker", "program_source", "program"] as const;
  const MAX_SHARED = 4_096;
  const sharedValues = new MapCtor<string, unknown>();
  function shared<T>(key: string, value: T): T {
    const known = sharedValues.get(key);
    if (known !== undefined) return known as T;
    if (sharedValues.size < MAX_SHARED) sharedValues.set(key, value);
    return value;
  }
  const emptyKwargs = freeze({});
  function shareParts(record: Record<string, unknown>): void {
    for (const field of SHARED_FIELDS) {
      const value = record[field];
      if (typeof value === "string") record[field] = shared(value, value);
    }
    const summary = record.outcome_summary;
    if (typeof summary === "object" && summary !== null) record.outcome_summary = shared(`\u0000${stringifyJson(summary)}`, summary);
    const kwargs = record.kwargs;
    if (typeof kwargs === "object" && kwargs !== null && !isArray(kwargs) && keys(kwargs).length === 0) record.kwargs = emptyKwargs;
  }

  function addRecords(chunk: MirrorChunk): void {
    if (chunk.reset) {
      mirror.length = 0;
      unparsed = [];
      firstUnparsed = 0;
    }
    const { records } = chunk;
    const held = mirror.length + unparsed.length - firstUnparsed;
    for (let index = Math.max(0, held - chunk.start); index < records.length; index += 1) {
      apply(arrayPush, unparsed, [records[index]]);
    }
  }

  function parseRecords(): void {
    while (firstUnparsed < unparsed.length) {
      const record = parseJson(unparsed[firstUnparsed] as string) as Record<string, unknown>;
      if (typeof record === "object" && record !== null) shareParts(record);
      deepFreeze(record);
      apply(arrayPush, mirror, [record]);
      unparsed[firstUnparsed] = undefined;
      firstUnparsed += 1;
    }
    unparsed = [];
    firstUnparsed = 0;
  }

  /** `context.conversation_history`: the mirror, with the records that arrived as text parsed first. */
  const readHistory = freeze(function conversation_history(): unknown {
    parseRecords();
    return historyView;
  });

  function convertsAsArray(value: unknown): boolean {
    return typeof value === "object" && value !== null && (isArray(value) || (value as { toString?: unknown }).toString === arrayToString);
  }

  function capText(value: unknown, limit: number): string {
    let text: string;
    try {
      // An array's own string conversion expands every shared element without bound (so does
      // an array-like's that inherits it); the printer stops at the limit.
      text = typeof value === "string" ? value : value === undefined || value === null ? "" : convertsAsArray(value) ? print(value, limit) : StringCtor(value);
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

  // Set whenever code may have run here since `tidy` last removed stray globals: in every entry
  // but `tidy`, and in every continuation of the bridge (an entry of isolated-vm's own). Program
  // code runs only in those: an entry's microtask checkpoint empties the queue before it returns.
  let mayHaveLeftGlobals = true;

  function settle(call: CallState, result: IsolateResult): void {
    if (call.ended || slots.has(call.id)) return;
    slots.set(call.id, result);
    // Read when `start`'s answer is copied out, if that has not happened yet; else the host takes it on notice.
    call.answer.result = result;
    if (call.watched) notify(call.id);
  }

  function failure(call: CallState, errorType: ErrorType, name: string, message: string): Extract<IsolateResult, { status: "error" }> {
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
      contextText = encodeWithin(snapshotContext(context), limits.maxResultChars, true);
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
    // Only here is an outcome read from an error's text; a program that throws this error
    // itself changes nothing but its own outcome's type.
    const isOutOfMemory = name === "RangeError" && message === "Array buffer allocation failed";
    const result = failure(call, isBudget ? "budget_exceeded" : isOutOfMemory ? "memory_limit" : "execution", name, message);
    const location = programLocation(thrown);
    return location === undefined ? result : { ...result, location };
  }

  // A frame in the program's own code: `(eval at …, <anonymous>:LINE:COLUMN)`. The program is the
  // body of a function made by the AsyncFunction constructor, whose header takes two lines.
  const PROGRAM_FRAME = /\), <anonymous>:(\d+):(\d+)\)/;
  const regexpExec = RegExp.prototype.exec;
  const NumberCtor = Number;

  /** Where in the program an error was made: the innermost frame of the program's own code. */
  function programLocation(thrown: unknown): { line: number; column: number } | undefined {
    if (typeof thrown !== "object" || thrown === null) return undefined;
    let stack: unknown;
    try {
      const descriptor = getOwnPropertyDescriptor(thrown, "stack");
      stack = descriptor === undefined ? undefined : "value" in descriptor ? descriptor.value : descriptor.get ? apply(descriptor.get, thrown, []) : undefined;
    } catch {
      return undefined;
    }
    if (typeof stack !== "string") return undefined;
    const match = apply(regexpExec, PROGRAM_FRAME, [stack.length > 4_000 ? stack.slice(0, 4_000) : stack]) as string[] | null;
    if (match === null) return undefined;
    const line = NumberCtor(match[1]) - 2;
    return line >= 1 ? { line, column: NumberCtor(match[2]) } : undefined;
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

  /**
   * A delegate call's value, encoded; null when it is too large to encode within its limit
   * (the host answers that with an invalid_input outcome). Any other failure to read it is the
   * program's mistake, thrown as a TypeError.
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

  async function callDelegate(call: CallState, role: string, options: DelegateOptions, method: string, args: unknown[]): Promise<object> {
    if (call.ended) return new PromiseCtor<object>(() => {});
    if (call.delegateCalls >= limits.maxDelegateCalls) {
      throw budgetError(`This program made more than ${limits.maxDelegateCalls} delegate calls, the per-call limit.`);
    }
    if (call.delegatesInFlight >= limits.maxConcurrentDelegates) {
      throw budgetError(`This program has ${limits.maxConcurrentDelegates} delegate calls in flight, the limit; await some before starting more.`);
    }
    const argsText = encodeArgument(args, limits.maxDelegateArgumentChars, `The arguments to ${capText(role, 200)}.${capText(method, 200)}()`);
    call.delegateCalls += 1;
    call.delegatesInFlight += 1;
    let envelope: unknown;
    try {
      const request = { kind: "delegate", role, method, args: argsText, options: options.text, optionsTooLarge: options.tooLarge };
      envelope = await apply(bridgeApply, bridge, [undefined, [call.id, request], BRIDGE_OPTIONS]);
    } catch {
      envelope = null;
    } finally {
      mayHaveLeftGlobals = true;
      call.delegatesInFlight -= 1;
    }
    if (call.ended) return new PromiseCtor<object>(() => {});
    return toOutcome(envelope);
  }

  // The call whose program runs now: one agent's programs run one at a time, so a program
  // calling `content` is the one that started last (or one that has ended, and is refused).
  let currentCall: CallState | null = null;

  /** `content(ref)`: a copy of the value an earlier call returned, when the agent keeps it; else undefined. */
  async function content(ref: unknown): Promise<unknown> {
    const call = currentCall;
    if (call === null || call.ended) return new PromiseCtor<unknown>(() => {});
    if (typeof ref !== "string" || ref.length > 200) throw new TypeErrorCtor("content(ref) takes a record's content_ref (a string of at most 200 characters).");
    if (call.delegateCalls >= limits.maxDelegateCalls) {
      throw budgetError(`This program made more than ${limits.maxDelegateCalls} delegate and content calls, the per-call limit.`);
    }
    call.delegateCalls += 1;
    let envelope: unknown;
    try {
      envelope = await apply(bridgeApply, bridge, [undefined, [call.id, { kind: "content", ref }], BRIDGE_OPTIONS]);
    } catch {
      envelope = null;
    }
    mayHaveLeftGlobals = true;
    if (call.ended) return new PromiseCtor<unknown>(() => {});
    const answer = envelope as Record<string, unknown> | null;
    return typeof answer === "object" && answer !== null && answer.ok === true ? answer.value : undefined;
  }

  function makeDelegate(call: CallState) {
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
      return new ProxyCtor(create(null), {
        get(_target, name) {
          if (name === Symbol.toPrimitive) return () => label;
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
    };
  }

  /** Removes the globals a program added; false when one cannot be removed (the isolate is then replaced). Never throws. */
  function cleanGlobals(): boolean {
    let clean = true;
    try {
      for (const key of ownKeys(global)) {
        if (baselineGlobals.has(key)) continue;
        // Not the `delete` operator: in this strict-mode code it throws on a non-configurable property.
        if (!deleteProperty(global, key)) clean = false;
      }
    } catch {
      clean = false;
    }
    return clean;
  }

  // The result last taken, kept until the next start so that a repeated take gets it again.
  let handedOut: { readonly callId: string; readonly result: IsolateResult } | null = null;

  /** Ends a call whose result is handed out: nothing of it reaches the host any more. */
  function endCall(id: string, call: CallState | undefined): void {
    if (call) call.ended = true;
    calls.delete(id);
    slots.delete(id);
  }

  /** Ends the calls that settled: their results were handed out, with their start's answer or by `take`. */
  function endSettled(): void {
    for (const [id, call] of calls) if (slots.has(id)) endCall(id, call);
  }

  // Programs compiled before, by their text: a kept program runs again and again. Each is frozen,
  // so no call can leave anything on it (`arguments.callee` reaches it in sloppy mode).
  const MAX_COMPILED = 64;
  const compiled = new MapCtor<string, (...args: unknown[]) => Promise<unknown>>();
  function compile(code: string): (...args: unknown[]) => Promise<unknown> {
    let program = compiled.get(code);
    if (program === undefined) {
      program = freeze(new AsyncFunction("context", "args", "kwargs", "delegate", "console", code));
      if (compiled.size >= MAX_COMPILED) compiled.clear();
      compiled.set(code, program);
    }
    return program;
  }

  return freeze({
    sync(chunk: MirrorChunk): void {
      mayHaveLeftGlobals = true;
      addRecords(chunk);
      parseRecords();
    },
    tidy(): boolean {
      if (!cleanGlobals()) return false;
      mayHaveLeftGlobals = false;
      parseRecords();
      return true;
    },
    start(payload: RunPayload): StartAnswer {
      handedOut = null;
      endSettled();
      // Every program starts with the globals the runtime left, whatever earlier ones (or their stray continuations) added.
      if (mayHaveLeftGlobals && !cleanGlobals()) return { tainted: true };
      mayHaveLeftGlobals = true;
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
        answer: { tainted: false, result: null },
        watched: false,
      };
      calls.set(call.id, call);
      currentCall = call;
      addRecords(payload.history);
      if (unparsed.length - firstUnparsed > MAX_RECORDS_AS_TEXT) parseRecords();
      let program: (...args: unknown[]) => Promise<unknown>;
      try {
        program = compile(payload.code);
      } catch (error) {
        const { name, message } = describeThrown(error);
        settle(call, failure(call, "invalid_code", name, message));
        return call.answer;
      }
      const context = payload.context;
      defineProperty(context, "conversation_history", { get: readHistory, enumerable: false, configurable: false });
      const running = apply(program, undefined, [context, payload.args, payload.kwargs, makeDelegate(call), makeConsole(call)]);
      apply(promiseThen, running, [
        (value: unknown) => settle(call, succeed(call, value, context)),
        (thrown: unknown) => settle(call, fail(call, thrown)),
      ]);
      return call.answer;
    },
    take(callId: string): IsolateResult | null {
      mayHaveLeftGlobals = true;
      if (handedOut !== null && handedOut.callId === callId) return handedOut.result;
      const result = slots.get(callId);
      const call = calls.get(callId);
      if (result === undefined) {
        if (call) call.watched = true;
        return null;
      }
      handedOut = { callId, result };
      endCall(callId, call);
      return result;
    },
  });
}
