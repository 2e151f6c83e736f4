/**
 * The isolate-side runtime: compiles and runs one program per call, with `context`, `args`,
 * `kwargs`, `delegate` and `console` in scope. It runs inside the isolate (sent as source text
 * after `hardenRealm`), so it must not use anything from its module scope: the pieces it is made
 * of (the history mirror, the host calls, the console, the encoder and printer) arrive as
 * parameters, each sent as source text of its own (composed in `child/agent-isolate.ts`).
 *
 * Work a call does not need is left for `tidy`, which the sandbox process calls once the call's
 * answer has left: the records a run brings are kept as text until a program reads the history
 * (or `tidy` parses them), and the globals a program (or its stray continuations) added are
 * removed there, so the next program starts without them.
 *
 * Whatever a program throws or rejects with becomes a plain `{ name, message }`; results and
 * context leave as JSON strings made by the encoder. Program code runs only in the sandbox
 * process's entries, on its main thread: `start` (the program's synchronous part and the
 * microtasks it queues) and `deliver` (an answer to one of its requests, and what the program
 * does with it). A program settles in one of them, and its result is in what that entry returns:
 * isolated-vm copies a returned value after the microtask checkpoint. An entry that throws (a
 * stray rejection isolated-vm reports for whichever task ends next) is followed by
 * `take(callId)`. Either way a result is read from the runtime's own answer, so a stray
 * rejection can never be mistaken for one.
 */
import type { ErrorType } from "../../shared/index.ts";
import type { IsolateResult, MirrorChunk, RunAnswer, RunPayload, StartAnswer } from "../protocol.ts";
import type { SandboxLimits } from "../limits.ts";
import type { ConsoleParts, ConsoleState, ProgramText } from "./console.ts";
import type { HostCallParts, HostCalls, HostCallState } from "./host-calls.ts";
import type { HistoryMirror } from "./mirror.ts";

export interface IsolateRuntime {
  /**
   * Adds records to the history mirror ahead of a run (large syncs arrive in chunks). Records
   * the mirror already holds are skipped, so a chunk sent twice is added once.
   */
  sync(chunk: MirrorChunk): void;
  /**
   * Starts a call: first ends the calls whose results have been handed out and, unless `tidy`
   * has done so since anything last ran here, removes the globals earlier programs added
   * (`tainted` when one cannot be removed: nothing runs, and the isolate must be replaced),
   * then runs the program. `result` is filled in when the program settles before the answer is
   * copied out, null otherwise.
   */
  start(payload: RunPayload): StartAnswer;
  /**
   * Hands the host's answer to request `requestId` of the call to the program waiting for it,
   * which runs on (within this entry: its microtasks run before the answer is copied out).
   * `result` is filled in when the program settles; null when the call has ended or has no
   * such request (the answer is dropped).
   */
  deliver(callId: string, requestId: number, answer: unknown): RunAnswer | null;
  /**
   * Between calls: removes the globals programs and their stray continuations added, and
   * parses the records that arrived as text. False when a global cannot be removed, or the
   * global object has another prototype or takes no new properties (the isolate must be replaced).
   */
  tidy(): boolean;
  /**
   * Makes the runtime as it was when made, for another agent: removes the globals programs added
   * and forgets every call, result, compiled program and the history mirror, and clears the
   * realm's record of the last regular expression match (`RegExp.input`, `lastMatch`, `$1`…).
   * False when the realm cannot be made so (see `tidy`): the isolate must go.
   */
  reset(): boolean;
  /**
   * The call's result once it settled (ending the call), or null while it runs: for an entry
   * whose own answer was lost (it threw). Asking again for the same call returns the same
   * result, so a take whose answer was lost can be repeated.
   */
  take(callId: string): IsolateResult | null;
}

/** What the runtime is made from: pieces sent as source, and the host's callbacks and limits. */
export interface RuntimeParts {
  readonly createEncoder: (agentOf?: (object: object) => readonly [string, string | null] | undefined) => (value: unknown, maxChars: number, ownData?: boolean) => string;
  readonly createPrinter: () => (value: unknown, maxChars: number) => string;
  readonly createMirror: () => HistoryMirror;
  readonly createConsole: (parts: ConsoleParts) => ProgramText;
  readonly createHostCalls: (parts: HostCallParts) => HostCalls;
  /**
   * The sandbox process's synchronous callback that takes a program's request for the host
   * (a copy); the answer comes back through `deliver`. Called only from within an entry.
   */
  readonly post: (callId: string, requestId: number, request: unknown) => void;
  readonly limits: SandboxLimits;
}

export function createRuntime(parts: RuntimeParts): IsolateRuntime {
  "use strict";
  const { post, limits } = parts;
  const { freeze, create, defineProperty, getPrototypeOf, keys, getOwnPropertyDescriptor, isExtensible } = Object;
  const apply = Reflect.apply;
  const parseJson = JSON.parse;
  const ownKeys = Reflect.ownKeys;
  const deleteProperty = Reflect.deleteProperty;
  const MapCtor = Map;
  const SetCtor = Set;
  const PromiseCtor = Promise;
  /** Request ids go round before they could lose precision. */
  const MAX_REQUEST_ID = 2 ** 31 - 1;
  const promiseThen = Promise.prototype.then;
  const regexpExec = RegExp.prototype.exec;
  const NumberCtor = Number;
  const AsyncFunction = getPrototypeOf(async function () {}).constructor as new (...params: string[]) => (
    ...args: unknown[]
  ) => Promise<unknown>;
  const encode = parts.createEncoder();
  // A program's result may hand its caller an agent it made with `delegate` (see `encode.ts`).
  const encodeResult = parts.createEncoder((object) => hostCalls.agentOf(object));
  const { capText, describeThrown, consoleFor } = parts.createConsole({ print: parts.createPrinter(), limits });
  // The encoder counts its own compact text (a shared part once, a reference by index), which
  // is rarely more than a few times the value's JSON; stopping at `encodedCharsPerJsonChar`
  // times the limit bounds the work here, and the host measures the value itself.
  const encodeWithin = (value: unknown, jsonLimit: number, ownData = false) => encode(value, jsonLimit * limits.encodedCharsPerJsonChar, ownData);
  let mirror = parts.createMirror();
  /** Matches the empty string: run by `cleanGlobals` so that the realm's last match is no call's. */
  const EMPTY_MATCH = /(?:)/;
  /** More records than this in one run are parsed at its start, on its own time, as a sync's are. */
  const MAX_RECORDS_AS_TEXT = 4;

  interface CallState extends HostCallState, ConsoleState {
    ended: boolean;
    /** What `start` and `deliver` answer: the result goes in it when the program settles. */
    readonly answer: Extract<StartAnswer, { tainted: false }>;
    /** Its requests the host has not answered yet, by id: each resolves the promise its program awaits. */
    readonly pending: Map<number, (answer: unknown) => void>;
  }

  const calls = new MapCtor<string, CallState>();
  const slots = new MapCtor<string, IsolateResult>();

  // Set whenever code may have run here since `tidy` last removed stray globals: in every entry
  // but `tidy`. Program code runs only in entries: an entry's microtask checkpoint empties the
  // queue before it returns.
  let mayHaveLeftGlobals = true;
  let nextRequestId = 1;

  /** Sends one of `call`'s requests to the host; resolves with the answer `deliver` hands over (null when it could not be sent). */
  function send(call: CallState, request: unknown): Promise<unknown> {
    return new PromiseCtor<unknown>((resolve) => {
      const requestId = nextRequestId;
      nextRequestId = nextRequestId >= MAX_REQUEST_ID ? 1 : nextRequestId + 1;
      call.pending.set(requestId, resolve);
      try {
        post(call.id, requestId, request);
      } catch {
        call.pending.delete(requestId);
        resolve(null);
      }
    });
  }

  // The call whose program runs now: one agent's programs run one at a time, so a program
  // calling `content` is the one that started last (or one that has ended, and is refused).
  let currentCall: CallState | null = null;

  const hostCalls = parts.createHostCalls({
    send: (call, request) => send(call as CallState, request),
    limits,
    encodeWithin,
    capText,
    describeThrown,
    currentCall: () => currentCall,
  });

  const global = globalThis as Record<PropertyKey, unknown>;
  const globalPrototype = getPrototypeOf(global);
  defineProperty(global, "content", { value: hostCalls.content, writable: false, enumerable: false, configurable: false });
  defineProperty(global, "ToolError", { value: hostCalls.ToolError, writable: false, enumerable: false, configurable: false });
  defineProperty(global, "EgressError", { value: hostCalls.EgressError, writable: false, enumerable: false, configurable: false });
  defineProperty(global, "kw", { value: hostCalls.kw, writable: false, enumerable: false, configurable: false });
  const baselineGlobals = new SetCtor(ownKeys(global));

  function settle(call: CallState, result: IsolateResult): void {
    if (call.ended || slots.has(call.id)) return;
    slots.set(call.id, result);
    // Read when the answer of the entry it settled in is copied out.
    call.answer.result = result;
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
      valueText = encodeResult(value, limits.maxResultChars * limits.encodedCharsPerJsonChar);
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
    // The engine's answer when the isolate's allocator refuses an ArrayBuffer: the memory limit.
    // Only here is an outcome read from an error's text; a program that throws this error
    // itself changes nothing but its own outcome's type.
    const isOutOfMemory = name === "RangeError" && message === "Array buffer allocation failed";
    const known = hostCalls.failureOf(thrown);
    const result = failure(call, known?.errorType ?? (isOutOfMemory ? "memory_limit" : "execution"), name, message);
    const location = programLocation(thrown);
    return { ...result, ...(location === undefined ? {} : { location }), ...(known?.retriable === true ? { retriable: true } : {}) };
  }

  // A frame in the program's own code: `(eval at …, <anonymous>:LINE:COLUMN)`. The program is the
  // body of a function made by the AsyncFunction constructor, whose header takes two lines.
  const PROGRAM_FRAME = /\), <anonymous>:(\d+):(\d+)\)/;
  // A directive prologue that asks for strict mode: "use strict" first, after comments and blank space only.
  const STRICT_DIRECTIVE = /^(?:\s|\/\/[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*(["'])use strict\1/;

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
    // Two lines of the function's header, and the line that opens the program's block (see `compile`).
    const line = NumberCtor(match[1]) - 3;
    return line >= 1 ? { line, column: NumberCtor(match[2]) } : undefined;
  }

  /**
   * Removes the globals a program added; false when one cannot be removed, or the global object
   * was given another prototype or made to take no new properties (the isolate is then
   * replaced). Never throws.
   */
  function cleanGlobals(): boolean {
    // The last match (RegExp.input, lastMatch, $1…) is no global property, and a program may set it: cleared too.
    apply(regexpExec, EMPTY_MATCH, [""]);
    let clean = getPrototypeOf(global) === globalPrototype && isExtensible(global);
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

  // Programs compiled before, by their text (and whether they get `fetch`): a kept program runs
  // again and again. Each is frozen, so no call can leave anything on it (`arguments.callee`
  // reaches it in sloppy mode).
  const MAX_COMPILED = 64;
  const compiled = new MapCtor<string, (...args: unknown[]) => Promise<unknown>>();
  const PARAMETERS = ["context", "args", "kwargs", "delegate", "console", "tools", "knowledge"];
  function compile(code: string, withFetch: boolean): (...args: unknown[]) => Promise<unknown> {
    const key = withFetch ? `f${code}` : `-${code}`;
    let program = compiled.get(key);
    if (program === undefined) {
      // In a block of its own, so a program may declare a name it is given (`const tools = …`)
      // without a SyntaxError; a program that asks for strict mode gets it, as a directive before the block.
      // Without an egress policy there is no `fetch` at all: not even a name bound to undefined.
      const opening = apply(regexpExec, STRICT_DIRECTIVE, [code]) === null ? "{\n" : '"use strict";{\n';
      program = freeze(new AsyncFunction(...PARAMETERS, ...(withFetch ? ["fetch"] : []), `${opening}${code}\n}`));
      if (compiled.size >= MAX_COMPILED) compiled.clear();
      compiled.set(key, program);
    }
    return program;
  }

  /** The call's knowledge as programs read it, from its JSON: read-only through and through (a kept program cannot keep anything on it). */
  function frozenDeep(value: unknown): unknown {
    if (typeof value === "object" && value !== null) {
      freeze(value);
      for (const key of keys(value)) frozenDeep((value as Record<string, unknown>)[key]);
    }
    return value;
  }

  return freeze({
    sync(chunk: MirrorChunk): void {
      mayHaveLeftGlobals = true;
      mirror.add(chunk);
      mirror.parse();
    },
    tidy(): boolean {
      if (!cleanGlobals()) return false;
      mayHaveLeftGlobals = false;
      mirror.parse();
      return true;
    },
    reset(): boolean {
      if (!cleanGlobals()) return false;
      mayHaveLeftGlobals = false;
      calls.clear();
      slots.clear();
      compiled.clear();
      currentCall = null;
      handedOut = null;
      nextRequestId = 1;
      mirror = parts.createMirror();
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
        requests: 0,
        inFlight: 0,
        console: [],
        consoleChars: 0,
        consoleTruncated: false,
        answer: { tainted: false, result: null },
        pending: new MapCtor(),
      };
      calls.set(call.id, call);
      currentCall = call;
      mirror.add(payload.history);
      if (mirror.unparsedCount() > MAX_RECORDS_AS_TEXT) mirror.parse();
      let program: (...args: unknown[]) => Promise<unknown>;
      try {
        program = compile(payload.code, payload.fetch);
      } catch (error) {
        const { name, message } = describeThrown(error);
        settle(call, failure(call, "invalid_code", name, message));
        return call.answer;
      }
      const context = payload.context;
      defineProperty(context, "conversation_history", { get: mirror.read, enumerable: false, configurable: false });
      const given = [context, payload.args, payload.kwargs, hostCalls.delegateFor(call), consoleFor(call), hostCalls.toolsFor(call, payload.tools), frozenDeep(parseJson(payload.knowledge))];
      if (payload.fetch) given.push(hostCalls.fetchFor(call));
      const running = apply(program, undefined, given);
      apply(promiseThen, running, [
        (value: unknown) => settle(call, succeed(call, value, context)),
        (thrown: unknown) => settle(call, fail(call, thrown)),
      ]);
      return call.answer;
    },
    deliver(callId: string, requestId: number, answer: unknown): RunAnswer | null {
      mayHaveLeftGlobals = true;
      const call = calls.get(callId);
      const resolve = call?.pending.get(requestId);
      if (call === undefined || call.ended || resolve === undefined) return null;
      call.pending.delete(requestId);
      resolve(answer);
      return call.answer;
    },
    take(callId: string): IsolateResult | null {
      mayHaveLeftGlobals = true;
      if (handedOut !== null && handedOut.callId === callId) return handedOut.result;
      const result = slots.get(callId);
      const call = calls.get(callId);
      if (result === undefined) return null;
      handedOut = { callId, result };
      endCall(callId, call);
      return result;
    },
  });
}
