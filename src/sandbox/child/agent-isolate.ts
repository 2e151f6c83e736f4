import ivm from "isolated-vm";
import { SANDBOX_LIMITS } from "../limits.ts";
import { RunDeadline } from "../run-deadline.ts";
import { createEncoder } from "../prelude/encode.ts";
import { hardenRealm } from "../prelude/harden.ts";
import { createWebGlobals } from "../prelude/web.ts";
import { urlParts } from "./url-parts.ts";
import { createPrinter } from "../prelude/print.ts";
import { createConsole } from "../prelude/console.ts";
import { createHostCalls } from "../prelude/host-calls.ts";
import { createMirror } from "../prelude/mirror.ts";
import { createRuntime } from "../prelude/runtime.ts";
import { MIRROR_CHUNK_RECORDS, type BridgeAnswer, type IsolateResult, type MirrorChunk, type RunAnswer, type RunReport, type RunRequestMessage, type StartAnswer, type SyncRequestMessage } from "../protocol.ts";

/**
 * The functions sent into the isolate as source text, each self-contained (a test parses each
 * one and fails on any name it uses that is neither its own nor an intrinsic): `hardenRealm`
 * runs first; the runtime is composed from the rest.
 */
export const ISOLATE_PIECES = { createWebGlobals, hardenRealm, createRuntime, createEncoder, createPrinter, createMirror, createConsole, createHostCalls } as const;

/**
 * Replaces the held-back buffer (see `AgentIsolate.allowMirror`). Detaching the old one with
 * `transfer(0)` frees it at once, not at some later collection.
 */
export const HOLD_BACK_SOURCE = `let held = null;
const Buffer = ArrayBuffer;
const transfer = Buffer.prototype.transfer;
return (bytes) => {
  if (held !== null) Reflect.apply(transfer, held, [0]);
  held = null;
  if (bytes > 0) held = new Buffer(bytes);
};`;

/**
 * Makes the engine collect all it can: isolated-vm answers an ArrayBuffer past the isolate's
 * limit with a full collection before it refuses it. Its live heap is then what it holds.
 */
export const COLLECT_SOURCE = `const Buffer = ArrayBuffer;
return () => {
  try {
    new Buffer(2 ** 40);
  } catch {}
};`;

/**
 * The runtime as one function of the isolate: it hardens the realm, then composes the runtime
 * with the bridge's `post` callback and the limits, and answers with the functions the sandbox
 * process calls (the runtime's, the hold-back's and the collection's) in one array. Compiled
 * once per sandbox process (see {@link compiledRuntime}).
 */
const RUNTIME_SOURCE = `(function improvRuntime(post, limits, urlParts) {
  (${createWebGlobals})(urlParts);
  const reseed = (${hardenRealm})();
  const runtime = (${createRuntime})({
    createEncoder: (${createEncoder}),
    createPrinter: (${createPrinter}),
    createMirror: (${createMirror}),
    createConsole: (${createConsole}),
    createHostCalls: (${createHostCalls}),
    post,
    limits,
  });
  const holdBack = (function () { ${HOLD_BACK_SOURCE} })();
  const collect = (function () { ${COLLECT_SOURCE} })();
  const reset = (seed) => {
    if (!runtime.reset()) return false;
    reseed(seed);
    return true;
  };
  return [runtime.start, runtime.deliver, runtime.take, runtime.sync, runtime.tidy, holdBack, collect, reset];
})`;

/** The runtime function's entries, in the order it answers with them. */
const API = ["start", "deliver", "take", "sync", "tidy", "holdBack", "collect", "reset"] as const;

/** The runtime's code cache, made by this process's first isolate as it compiled the runtime (before anything ran in it). */
let runtimeCode: ivm.ExternalCopy<ArrayBuffer> | undefined;

/**
 * The runtime compiled for `isolate`: from source the first time in this process, then from the
 * code cache that first compilation made, which spares later isolates parsing and compiling it.
 */
const RUNTIME_FILENAME = "improv:runtime";

function compiledRuntime(isolate: ivm.Isolate): ivm.Script {
  if (runtimeCode !== undefined) {
    // isolated-vm's types leave out what it sets on a script compiled with cached data.
    const script = isolate.compileScriptSync(RUNTIME_SOURCE, { cachedData: runtimeCode, filename: RUNTIME_FILENAME }) as ivm.Script & { readonly cachedDataRejected?: boolean };
    if (script.cachedDataRejected !== true) return script;
    runtimeCode = undefined;
  }
  const script = isolate.compileScriptSync(RUNTIME_SOURCE, { produceCachedData: true, filename: RUNTIME_FILENAME }) as ivm.Script & ivm.CachedDataResult;
  runtimeCode = script.cachedData;
  return script;
}

/**
 * The mirror reserve of an isolate whose mirror is small (most new agents'), smaller than the
 * full one (the sandbox process's `MIN_MIRROR_RESERVE_MB`): its held-back buffer stays under the 64 MiB of outside memory past which V8 collects the heap as the buffer
 * is made (2 ms that every cold isolate would pay). A mirror that outgrows it (some 12 MiB, twenty
 * thousand records) is rebuilt once into an isolate with the full reserve.
 */
export const FIRST_MIRROR_RESERVE_MB = 48;

/** The warm-up's run (see `AgentIsolate.warmRuntimeCode`): what most calls do, reading and writing context and reading the history. Its isolate has a new agent's reserve. */
const WARM_UP_LIMIT_MB = 16;
const WARM_UP_PAYLOAD = {
  code: "context.n = (context.n ?? 0) + 1; const seen = context.conversation_history.length; console.log('warm', seen); return { sum: args[0] + args[1], n: context.n, seen, list: [1, 'a', null] }",
  args: [1, 2],
  kwargs: {},
  depth: 0,
  maxDelegationDepth: 0,
  tools: [],
  fetch: false,
  knowledge: "[]",
};
const WARM_UP_REQUEST = { type: "run", agentId: "", memoryLimitMb: WARM_UP_LIMIT_MB, mirrorMb: 0, timeoutMs: 1_000, callTimeLeftMs: 1_000, historyEpoch: 0, historyStart: 0 } as const;

/**
 * Least held back (see `AgentIsolate.allowMirror`): malloc serves buffers of 32 MiB and more (its
 * largest threshold) with fresh mappings, which stay untouched; a smaller one could come from a
 * heap arena that calloc zeroes, which would make it resident. A mirror that would leave less
 * than this held back needs a larger reserve: the isolate is rebuilt.
 */
const MIN_HELD_BACK_MB = 32;

/**
 * The engine's slack beyond an isolate's `memoryLimit` (its young generation, which isolated-vm
 * adds to the limit it enforces), by limit: an isolate of `memoryLimitMb` alone has this much, and
 * an agent's isolate (whose limit includes the mirror reserve) holds back whatever it has beyond it.
 */
const engineSlackByLimit = new Map<number, number>();
function engineSlackMb(memoryLimitMb: number): number {
  let slack = engineSlackByLimit.get(memoryLimitMb);
  if (slack === undefined) {
    const probe = new ivm.Isolate({ memoryLimit: memoryLimitMb });
    try {
      slack = Math.max(0, probe.getHeapStatisticsSync().heap_size_limit / 2 ** 20 - memoryLimitMb);
    } finally {
      probe.dispose();
    }
    engineSlackByLimit.set(memoryLimitMb, slack);
  }
  return slack;
}

/** What the sandbox process hears of a run's first step (see {@link AgentIsolate.run}). */
export interface RunSteps {
  /** Its program is about to start: its synchronous part holds this thread from now. */
  readonly starting: () => void;
  /**
   * Its synchronous part is over, it has not settled and sent the host no request: it goes on,
   * awaiting something. (A run that sent a request needs no other sign that it started.)
   */
  readonly continuing: () => void;
}

/** What the sandbox process may do to a run in progress. */
export interface RunControl {
  /** The host cancelled the run (set by the process); a run not yet started never starts. */
  cancelled?: boolean;
  /** Stops the run (set by the run). */
  cancel?: () => void;
  /** Adds time another run held the process's main thread, which this run's deadline does not count (set by the run). */
  excuse?: (ms: number) => void;
  /** When the run's call must have ended, waits included (set by the process as the run arrives). @unit ms, on `performance.now()`'s clock */
  callEndsAt?: number;
  /**
   * Hands the host's answer to one of the program's requests to it, and lets it run on in an
   * entry on this thread, within its own time left (set by the run while its program goes on;
   * `requestId` is the one the run's request went with).
   */
  deliver?: (requestId: number, answer: BridgeAnswer) => void;
}

/**
 * Sends a program's request (an untrusted copy of it) to the host: called once the entry in
 * which the program made it is over, and only while the run goes on; must never throw.
 */
export type BridgeHandler = (callId: string, requestId: number, request: unknown) => void;

/** How long tidying an isolate between calls may take before the isolate is replaced instead. @unit ms */
const TIDY_TIMEOUT_MS = 1_000;

/** The mirror estimate from which the mirror's heap is measured (see `AgentIsolate.#measureIfStale`). @unit MiB */
const MEASURED_MIRROR_MB = 4;

/**
 * One agent's isolate in the sandbox process: a hardened context with the runtime loaded,
 * and the agent's history mirror inside it. A run that does not settle normally (deadline,
 * memory, cancellation) disposes the isolate; the next run builds a fresh one and the host
 * resends the history.
 */
export class AgentIsolate {
  historyEpoch = -1;
  historyLength = 0;
  lastUsed = Date.now();
  /** Runs in this isolate now: one, or more when a run of the agent came while another was still settling. */
  runs = 0;
  /** What the program may use: the runtime and the history mirror come on top (see {@link allowMirror}). */
  readonly memoryLimitMb: number;
  /** The isolate's limit beyond `memoryLimitMb`: what the runtime and the mirror may grow to without a rebuild. */
  readonly mirrorReserveMb: number;
  /** What the reserve adds to the engine's slack; held back too, so a program gets the slack of an isolate of `memoryLimitMb`. @unit MiB */
  readonly #extraSlackMb: number;
  /** The mirror size the host estimated for the latest run (its records' JSON size, scaled). @unit MiB */
  #mirrorMb = 0;
  /** The isolate's live heap (runtime and mirror) when last measured, and the mirror estimate then. @unit MiB */
  #measuredMb: number;
  #measuredAtMirrorMb = 0;
  /** The mirror estimate when {@link residentMb} was last measured. @unit MiB */
  #residentAtMirrorMb = 0;
  /** Heap allowed beyond `memoryLimitMb` now. @unit MiB */
  #allowanceMb = 0;
  /** Whether the isolate's heap was collected once since it was made (see {@link compact}). */
  #compacted = false;
  /** Its resident size when last measured (see {@link residentMb}). @unit MiB */
  #residentMb: number;
  readonly #collect: ivm.Reference;
  readonly #isolate: ivm.Isolate;
  readonly #start: ivm.Reference;
  readonly #deliverRef: ivm.Reference;
  readonly #takeRef: ivm.Reference;
  readonly #sync: ivm.Reference;
  readonly #tidyRef: ivm.Reference;
  readonly #holdBack: ivm.Reference;
  readonly #resetRef: ivm.Reference;
  /** The runtime's live heap as made, before any agent used the isolate. @unit MiB */
  readonly #runtimeMb: number;
  /** Requests programs made in the entry running now, sent to the host once it is over (see {@link BridgeHandler}). */
  readonly #posted: [callId: string, requestId: number, request: unknown][];
  readonly #onBridge: BridgeHandler;

  private constructor(
    memoryLimitMb: number,
    mirrorReserveMb: number,
    heap: { readonly runtimeMb: number; readonly extraSlackMb: number; readonly residentMb: number },
    isolate: ivm.Isolate,
    api: Record<(typeof API)[number], ivm.Reference>,
    bridge: { posted: [string, number, unknown][]; onBridge: BridgeHandler },
  ) {
    this.memoryLimitMb = memoryLimitMb;
    this.mirrorReserveMb = mirrorReserveMb;
    this.#measuredMb = heap.runtimeMb;
    this.#runtimeMb = heap.runtimeMb;
    this.#residentMb = heap.residentMb;
    this.#extraSlackMb = heap.extraSlackMb;
    this.#collect = api.collect;
    this.#isolate = isolate;
    this.#start = api.start;
    this.#deliverRef = api.deliver;
    this.#takeRef = api.take;
    this.#sync = api.sync;
    this.#tidyRef = api.tidy;
    this.#holdBack = api.holdBack;
    this.#resetRef = api.reset;
    this.#posted = bridge.posted;
    this.#onBridge = bridge.onBridge;
  }

  /**
   * An isolate whose limit is `memoryLimitMb` plus a reserve of `mirrorReserveMb` for the runtime
   * and the history mirror, of which all the runtime and a mirror of `mirrorMb` do not need is
   * held back: see {@link allowMirror}.
   */
  static async create(
    memoryLimitMb: number,
    mirrorMb: number,
    mirrorReserveMb: number,
    onBridge: BridgeHandler,
    onCatastrophe: (message: string) => void,
  ): Promise<AgentIsolate> {
    const isolate = new ivm.Isolate({ memoryLimit: memoryLimitMb + mirrorReserveMb, onCatastrophicError: onCatastrophe });
    try {
      // Synchronous steps: each asynchronous one would cost a hop to isolated-vm's thread and back.
      const context = isolate.createContextSync();
      // Called by the program's requests within an entry on this thread: kept until the entry is over.
      const posted: [string, number, unknown][] = [];
      const post = new ivm.Callback((callId: unknown, requestId: unknown, request: unknown) => {
        posted.push([String(callId), Number(requestId), request]);
      });
      // Node's URL parser for programs' URL: strings in, strings out, never a throw.
      const parseUrl = new ivm.Callback(urlParts);
      const make = compiledRuntime(isolate).runSync(context, { reference: true, timeout: 10_000 }) as ivm.Reference;
      const entries = make.applySync(undefined, [post, new ivm.ExternalCopy(SANDBOX_LIMITS).copyInto(), parseUrl], { result: { reference: true }, timeout: 10_000 }) as ivm.Reference;
      const api = Object.fromEntries(API.map((name, index) => [name, entries.getSync(index, { reference: true }) as ivm.Reference])) as Record<(typeof API)[number], ivm.Reference>;
      const heap = isolate.getHeapStatisticsSync();
      const runtimeMb = Math.ceil(heap.used_heap_size / 2 ** 20);
      const extraSlackMb = Math.max(0, Math.floor(heap.heap_size_limit / 2 ** 20 - (memoryLimitMb + mirrorReserveMb) - engineSlackMb(memoryLimitMb)));
      const created = new AgentIsolate(memoryLimitMb, mirrorReserveMb, { runtimeMb, extraSlackMb, residentMb: residentMbOf(isolate, heap) }, isolate, api, { posted, onBridge });
      if (!created.allowMirror(mirrorMb)) throw new Error("the isolate could not hold back its unused mirror reserve");
      return created;
    } catch (error) {
      if (!isolate.isDisposed) isolate.dispose();
      throw error;
    }
  }

  /**
   * Makes the runtime's code cache again, once per sandbox process, from an isolate of its own in
   * which a program of the runtime's own has run: V8 compiles a function when it is first
   * called, and the cache made as the runtime was first compiled holds only what was compiled
   * then. Compiled again in that isolate, the runtime is the one its run compiled, functions and
   * all, and so is the cache made from it: later isolates run their first program without
   * compiling the runtime's functions (about 1 ms here). No agent's program runs in that isolate.
   */
  static async warmRuntimeCode(onCatastrophe: (message: string) => void): Promise<void> {
    let warm: AgentIsolate | undefined;
    try {
      warm = await AgentIsolate.create(WARM_UP_LIMIT_MB, 0, FIRST_MIRROR_RESERVE_MB, () => {}, onCatastrophe);
      // Twice: a first run and one that continues its mirror.
      for (const runId of [1, 2]) {
        const payload = { ...WARM_UP_PAYLOAD, callId: `warm-up-${runId}`, context: {}, history: { start: 0, reset: runId === 1, records: [] } };
        const report = await warm.run({ ...WARM_UP_REQUEST, runId, payload }, { starting: () => {}, continuing: () => {} }, {});
        if (report.kind !== "settled" || report.result.status !== "ok") return;
        warm.tidy();
      }
      const script = warm.#isolate.compileScriptSync(RUNTIME_SOURCE, { produceCachedData: true, filename: RUNTIME_FILENAME }) as ivm.Script & ivm.CachedDataResult;
      if (script.cachedData !== undefined) runtimeCode = script.cachedData;
      script.release();
    } catch {
      // The cache made before stays.
    } finally {
      warm?.dispose();
    }
  }

  /** Heap the isolate allows beyond `memoryLimitMb` now: the runtime's and the mirror's. @unit MiB */
  get mirrorAllowanceMb(): number {
    return this.#allowanceMb;
  }

  /** The mirror size the isolate allows for now (see {@link allowMirror}). @unit MiB */
  get mirrorMb(): number {
    return this.#mirrorMb;
  }

  /**
   * Lets the history mirror use `mb` MiB on top of `memoryLimitMb` (and of the runtime's own
   * heap), so that the program gets `memoryLimitMb` whatever the history holds: the rest of the
   * reserve, and what it adds to the engine's slack, is held back as an ArrayBuffer that counts
   * against the isolate's limit and is never touched, so it takes no resident memory. False
   * when the reserve is too small for that (the isolate must be rebuilt with a larger one).
   */
  allowMirror(mb: number): boolean {
    // What the mirror held when last measured, plus the host's estimate of what it gained since.
    if (!this.#allow(this.#measuredMb + Math.max(0, mb - this.#measuredAtMirrorMb))) return false;
    this.#mirrorMb = mb;
    return true;
  }

  #allow(allowanceMb: number): boolean {
    const heldBackMb = this.mirrorReserveMb + this.#extraSlackMb - allowanceMb;
    if (heldBackMb < MIN_HELD_BACK_MB) return false;
    try {
      this.#applyRepeatable(this.#holdBack, [heldBackMb * 2 ** 20], {});
    } catch {
      // Without its hold-back the isolate would let a program use the whole reserve.
      this.dispose();
      return false;
    }
    this.#allowanceMb = allowanceMb;
    return true;
  }

  /**
   * Replaces the host's estimate of the mirror (its records' JSON size, scaled generously) by
   * the heap the isolate really holds, measured after a full collection, so the program gets
   * `memoryLimitMb` and not what the estimate over-counts. A collection costs time in
   * proportion to the heap, so it is done between calls, first once the estimate reaches
   * {@link MEASURED_MIRROR_MB} (below it, it over-counts by less than 2 MiB), then again only
   * once it has grown by a quarter since.
   */
  #measureIfStale(): void {
    const grown = this.#mirrorMb - this.#measuredAtMirrorMb;
    if (this.#mirrorMb < MEASURED_MIRROR_MB || grown < Math.max(1, this.#measuredAtMirrorMb / 4)) return;
    try {
      this.#collect.applySync(undefined, [], { timeout: TIDY_TIMEOUT_MS });
      const heap = this.#isolate.getHeapStatisticsSync();
      const liveMb = Math.ceil(heap.used_heap_size / 2 ** 20);
      const measuredAt = this.#mirrorMb;
      if (!this.#allow(liveMb)) return;
      this.#measuredMb = liveMb;
      this.#measuredAtMirrorMb = measuredAt;
      this.#residentMb = residentMbOf(this.#isolate, heap);
      this.#residentAtMirrorMb = measuredAt;
      this.#compacted = true;
    } catch {
      // The estimate stays; a disposed isolate is rebuilt by the next run.
    }
  }

  /** Whether a run is in this isolate now. */
  get busy(): boolean {
    return this.runs > 0;
  }

  get isDisposed(): boolean {
    return this.#isolate.isDisposed;
  }

  /** Stops everything running in the isolate and frees it. */
  dispose(): void {
    if (!this.#isolate.isDisposed) {
      try {
        this.#isolate.dispose();
      } catch {
        // Already going away.
      }
    }
  }

  /**
   * Runs one program to its end: its report comes at once when the program settled in its
   * synchronous part (most do), else later. `cancel` is filled in with a function that stops
   * the run. The report is `resync` when the mirror does not match the history the host sent.
   * `steps` hears when the program starts and, unless it settled in its synchronous part or
   * sent the host a request, when it goes on after that part.
   *
   * Program code runs only in entries into the isolate on this thread, each within the time the
   * program has left: its synchronous part (and the microtasks it queues) in `start`, and each
   * answer to one of its requests (and what the program does with it) in `deliver`, through
   * `control.deliver`. The entry it settles in answers with its result. The requests it makes in
   * an entry go to the host once the entry is over. Between entries it waits for the host, and
   * that time is not its own; one that waits for nothing ends at its deadline.
   */
  run(request: RunRequestMessage, steps: RunSteps, control: RunControl): RunReport | Promise<RunReport> {
    const { payload, timeoutMs } = request;
    let history = this.#continuation(request.historyEpoch, request.historyStart, payload.history.records);
    if (history === undefined) return { kind: "resync" };
    if (history.records.length > MIRROR_CHUNK_RECORDS) {
      this.#addToMirror(history);
      history = { start: history.start + history.records.length, reset: false, records: [] };
    }
    const callId = payload.callId;
    const started = performance.now();
    const callEndsAt = control.callEndsAt ?? Number.POSITIVE_INFINITY;
    const callLeftMs = callEndsAt - started;
    if (callLeftMs <= 0) return { kind: "failed", errorType: "timeout", message: CALL_TIMEOUT_MESSAGE };
    // The first report wins; one that comes after the synchronous part resolves `later`.
    let settled: RunReport | undefined;
    let later: ((report: RunReport) => void) | undefined;
    const settle = (report: RunReport) => {
      if (settled !== undefined) return;
      settled = report;
      later?.(report);
    };
    const abort = (errorType: "timeout" | "memory_limit" | "cancelled" | "execution", message: string) => {
      this.dispose();
      settle({ kind: "failed", errorType, message });
    };
    control.cancel = () => abort("cancelled", "The call was cancelled while its program ran.");

    steps.starting();
    // The synchronous part runs within the program's own time, and within the call's.
    const startLimit = this.#limit(timeoutMs, timeoutMs, callLeftMs);
    this.#posted.length = 0;
    let answer: StartAnswer | undefined;
    try {
      answer = this.#start.applySync(undefined, [{ ...payload, history }], { arguments: { copy: true }, result: { copy: true }, timeout: startLimit.ms }) as StartAnswer;
    } catch {
      // Decided by what happened, never by the error's text (see `#afterEntry`).
    }
    if (answer?.tainted) {
      // An earlier program left a global that cannot be removed: nothing ran; a fresh isolate runs it.
      this.dispose();
      return { kind: "resync" };
    }
    this.historyEpoch = request.historyEpoch;
    this.historyLength = request.historyStart + payload.history.records.length;
    const first = this.#afterEntry(callId, answer, performance.now() - started, startLimit);
    if (first !== undefined) {
      // Settled in its synchronous part, as most programs do (or stopped in it): the report goes at once.
      this.#posted.length = 0;
      if (first.kind === "failed") this.dispose();
      return first;
    }
    // The requests it made go first, so the host works on them while this run is set up.
    let ranBeforeWaitMs = this.#ranMs();
    const firstRequests = this.#sendPosted();
    if (firstRequests === 0) steps.continuing();
    return new Promise<RunReport>((resolve) => {
      // Counted from the program's start by the held rule: time other runs held this thread is
      // not its own, nor are its waits for the host (less what it ran meanwhile, in entries of
      // answers to its other requests).
      const deadline = new RunDeadline(timeoutMs, () => abort("timeout", timeoutMessage(timeoutMs)), started, firstRequests);
      control.excuse = (ms) => deadline.excuse(ms);
      const ranDuringWaitMs = () => (deadline.waiting ? this.#ranMs() - ranBeforeWaitMs : 0);
      control.deliver = (requestId, reply) => {
        const ranMs = ranDuringWaitMs();
        // Not armed: the entry is bounded by its own limit, and the deadline is armed again if the program goes on.
        deadline.waitEnded(ranMs, false);
        const limit = this.#limit(timeoutMs, deadline.remainingMs() - (deadline.waiting ? ranMs : 0), callEndsAt - performance.now());
        if (limit.ms <= 0) {
          abort("timeout", limit.message);
          return;
        }
        const began = performance.now();
        this.#posted.length = 0;
        let delivered: RunAnswer | null | undefined;
        try {
          delivered = this.#deliverRef.applySync(undefined, [callId, requestId, reply], { arguments: { copy: true }, result: { copy: true }, timeout: limit.ms }) as RunAnswer | null;
        } catch {
          // As for the synchronous part.
        }
        const report = this.#afterEntry(callId, delivered === null ? { result: null } : delivered, performance.now() - began, limit);
        if (report !== undefined) {
          if (report.kind === "failed") this.dispose();
          settle(report);
          return;
        }
        if (!deadline.waiting && this.#posted.length > 0) ranBeforeWaitMs = this.#ranMs();
        const sent = this.#sendPosted();
        for (let request = 0; request < sent; request += 1) deadline.waitBegan();
        deadline.arm();
      };
      const callTimer = Number.isFinite(callLeftMs) ? setTimeout(() => abort("timeout", CALL_TIMEOUT_MESSAGE), callEndsAt - performance.now()) : undefined;
      later = (report) => {
        deadline.stop();
        clearTimeout(callTimer);
        control.deliver = undefined;
        this.#posted.length = 0;
        resolve(report);
      };
    });
  }

  /** Sends the requests the program made in the entry just over to the host (see {@link BridgeHandler}); how many. */
  #sendPosted(): number {
    const posted = this.#posted.splice(0);
    for (const [callId, requestId, request] of posted) this.#onBridge(callId, requestId, request);
    return posted.length;
  }

  /**
   * The time limit of an entry: what is left of the program's own time and of its call's, the
   * lesser, at least 1 ms unless nothing is left; and what to say when it is reached.
   */
  #limit(timeoutMs: number, ownLeftMs: number, callLeftMs: number): { readonly ms: number; readonly message: string } {
    const leftMs = Math.min(ownLeftMs, callLeftMs);
    return { ms: leftMs <= 0 ? 0 : Math.max(1, Math.ceil(leftMs)), message: callLeftMs < ownLeftMs ? CALL_TIMEOUT_MESSAGE : timeoutMessage(timeoutMs) };
  }

  /**
   * What an entry that let the program run comes to: the result it settled with, a stop by the
   * memory limit or by the entry's time limit, or undefined when it goes on. `answered` is
   * undefined when the entry threw: that is decided by what happened, never by the error's
   * text (a stray rejection the program left behind is reported on this task with whatever
   * message the program chose), so the result is taken when the program settled all the same.
   */
  #afterEntry(callId: string, answered: RunAnswer | undefined, ranMs: number, limit: { readonly ms: number; readonly message: string }): RunReport | undefined {
    if (answered?.result) return this.#reportOf(answered.result);
    if (answered !== undefined) return undefined;
    if (this.#isolate.isDisposed) return { kind: "failed", errorType: "memory_limit", message: memoryMessage(this.memoryLimitMb) };
    const taken = this.#take(callId);
    if (taken !== null) return this.#reportOf(taken);
    // Stopped at its time limit, not by a stray rejection: a time-out.
    if (ranMs >= limit.ms) return { kind: "failed", errorType: "timeout", message: limit.message };
    return undefined;
  }

  /** How long code has run in the isolate, in all (isolated-vm's wall time: running, not idle). @unit ms */
  #ranMs(): number {
    try {
      return Number(this.#isolate.wallTime) / 1e6;
    } catch {
      return 0;
    }
  }

  /** The records as a continuation of the mirror, a reset, or undefined when they do not fit. */
  #continuation(epoch: number, start: number, records: readonly string[]): MirrorChunk | undefined {
    if (epoch === this.historyEpoch && start === this.historyLength) return { start, reset: false, records };
    if (start === 0) return { start, reset: true, records };
    return undefined;
  }

  /** Copies records into the isolate's mirror in bounded steps, keeping each copy's peak small. */
  #addToMirror(history: MirrorChunk): void {
    for (let index = 0; index < history.records.length; index += MIRROR_CHUNK_RECORDS) {
      const chunk: MirrorChunk = { start: history.start + index, reset: history.reset && index === 0, records: history.records.slice(index, index + MIRROR_CHUNK_RECORDS) };
      this.#applyRepeatable(this.#sync, [chunk], { arguments: { copy: true }, timeout: 60_000 });
    }
  }

  /** Adds one chunk of a large sync to the mirror; false when it does not continue the mirror. */
  syncChunk(message: SyncRequestMessage): boolean {
    const history = this.#continuation(message.historyEpoch, message.historyStart, message.records);
    if (history === undefined) return false;
    this.#addToMirror(history);
    this.historyEpoch = message.historyEpoch;
    this.historyLength = message.historyStart + message.records.length;
    return true;
  }

  /**
   * The runtime's work between calls (see its `tidy`), done once a call's answer has left. An
   * isolate it cannot tidy (a global that cannot be removed, or more of them than it can remove
   * in {@link TIDY_TIMEOUT_MS}) is disposed: the next run builds a fresh one.
   */
  tidy(): void {
    if (!this.#betweenCalls(this.#tidyRef, [])) return;
    this.#measureIfStale();
    // What a program kept (in the symbol registry, say) counts against the process's budget for idle isolates from now on.
    this.#refreshResident();
  }

  /**
   * Runs one of the runtime's entries for between calls (`tidy`, `reset`) within
   * {@link TIDY_TIMEOUT_MS}: whether it answered true. An isolate for which it did not is disposed.
   */
  #betweenCalls(reference: ivm.Reference, args: unknown[]): boolean {
    let done = false;
    try {
      done = this.#applyRepeatable(reference, args, { arguments: { copy: true }, result: { copy: true } }, TIDY_TIMEOUT_MS) === true;
    } catch {
      // Stopped at its time limit, or the isolate is gone.
    }
    if (!done) this.dispose();
    return done;
  }

  /**
   * Makes the isolate ready for another agent, as one just made: the runtime forgets its agent
   * (calls, results, compiled programs, history mirror), the globals programs added are removed,
   * the realm's last match is cleared and `Math.random` is seeded anew from `seed` (four 32-bit
   * words). What is left of the realm is frozen. False when that cannot be done (see the
   * runtime's `reset`); the isolate is then disposed. Only for an isolate whose runs all ended
   * as they should: one stopped by a limit or cancelled is disposed already.
   */
  recycle(seed: readonly number[]): boolean {
    if (this.busy || this.isDisposed || !this.#betweenCalls(this.#resetRef, [[...seed]])) return false;
    // Memory no reset reaches (strings in the realm's symbol registry, say) would shrink the next agent's limit, and tell it how much the last one kept.
    const heap = this.#heap();
    if (heap === undefined || !this.#holdsOnlyRuntime(heap)) {
      this.dispose();
      return false;
    }
    this.#refreshResident(heap);
    this.historyEpoch = -1;
    this.historyLength = 0;
    // What it holds back is set anew by the `allowMirror` of the agent that takes it.
    this.#measuredMb = this.#runtimeMb;
    this.#measuredAtMirrorMb = 0;
    // Its size is measured again once its process has time to compact it.
    this.#compacted = false;
    return true;
  }

  /**
   * Whether the heap, garbage and all, holds no more than the runtime did when made and a
   * quarter of `memoryLimitMb` (at least {@link RECYCLE_SLACK_MB}): no agent then takes over an
   * isolate that leaves it less than three quarters of its limit. Not collected first: a full
   * collection (20–35 ms here) costs more than making an isolate (5–8 ms), so one that holds more
   * is disposed instead.
   */
  #holdsOnlyRuntime(heap: ivm.HeapStatistics): boolean {
    return heap.used_heap_size / 2 ** 20 <= this.#runtimeMb + Math.max(RECYCLE_SLACK_MB, this.memoryLimitMb / 4);
  }

  /** The heap's figures now (no collection: a few microseconds); undefined once the isolate is disposed. */
  #heap(): ivm.HeapStatistics | undefined {
    try {
      return this.#isolate.getHeapStatisticsSync();
    } catch {
      return undefined;
    }
  }

  /** Takes what the isolate holds now as its resident size (`heap`, or read now). */
  #refreshResident(heap = this.#heap()): void {
    if (heap === undefined) return;
    this.#residentMb = residentMbOf(this.#isolate, heap);
    this.#residentAtMirrorMb = this.#mirrorMb;
  }

  /** Whether {@link compact} has not been done since the isolate was made. */
  get compactable(): boolean {
    return !this.#compacted && !this.busy && !this.isDisposed;
  }

  /**
   * Collects the heap of an isolate that is idle, once: making it (hardening the realm) leaves
   * garbage and pages the engine keeps until a full collection, about half of what the idle
   * isolate holds (2.7 → 1.6 MiB here). The collection takes some 10 ms, so the sandbox process
   * does it only while it has nothing else to do. Its resident size is measured then.
   */
  compact(): void {
    this.#compacted = true;
    try {
      this.#collect.applySync(undefined, [], { timeout: TIDY_TIMEOUT_MS });
      this.#residentMb = residentMbOf(this.#isolate);
      this.#residentAtMirrorMb = this.#mirrorMb;
    } catch {
      // The estimate stays; a disposed isolate is rebuilt by the next run.
    }
  }

  /**
   * What the isolate holds in the sandbox process's memory, as last measured (its heap's pages
   * and what the engine allocated beside them) plus what its mirror grew by since. @unit MiB
   */
  get residentMb(): number {
    return this.#residentMb + Math.max(0, this.#mirrorMb - this.#residentAtMirrorMb);
  }

  /** The call's result from the isolate if it has settled (which also ends the call there), else null. */
  #take(callId: string): IsolateResult | null {
    try {
      return this.#applyRepeatable(this.#takeRef, [callId], { result: { copy: true }, timeout: 1_000 }) as IsolateResult | null;
    } catch {
      return null;
    }
  }

  #reportOf(result: IsolateResult): RunReport {
    // The engine refused an ArrayBuffer (see the runtime's `fail`): say so in the words of the limit.
    if (result.status === "error" && result.errorType === "memory_limit") {
      return { kind: "settled", result: { ...result, name: "Thrown", message: memoryMessage(this.memoryLimitMb, `${result.name}: ${result.message}`) } };
    }
    return { kind: "settled", result };
  }

  /**
   * Calls one of the runtime's repeatable functions (`take`, `sync`, `tidy`: doing any of them
   * twice is harmless). isolated-vm reports a rejection the program left unhandled as the error
   * of whichever task ends next, after that task's own work is done, so such an error is no
   * sign the call failed: it is repeated, and only an error that persists, or a disposed
   * isolate, is thrown. With `withinMs`, all attempts share that one time limit, and one that
   * reaches it is not repeated.
   */
  #applyRepeatable(reference: ivm.Reference, args: unknown[], options: ivm.ReferenceApplyOptions, withinMs?: number): unknown {
    const began = performance.now();
    for (let attempt = 1; ; attempt += 1) {
      const left = withinMs === undefined ? undefined : Math.ceil(withinMs - (performance.now() - began));
      try {
        return reference.applySync(undefined, args, left === undefined ? options : { ...options, timeout: left });
      } catch (error) {
        if (this.#isolate.isDisposed || attempt >= 3 || (withinMs !== undefined && performance.now() - began >= withinMs)) throw error;
      }
    }
  }
}

/**
 * What an isolate holds beside the heap the engine reports: isolated-vm's own structures and the
 * engine's per-isolate tables (measured as the sandbox process's growth per compacted idle
 * isolate, less the heap it reports). @unit MiB
 */
const ISOLATE_OVERHEAD_MB = 0.5;
/**
 * The least that an isolate may hold beyond the runtime's heap as made and still be passed on to
 * another agent (see `recycle`): the calls' garbage, or what a program kept. @unit MiB
 */
const RECYCLE_SLACK_MB = 4;

/** An isolate's pages, what its engine allocated beside them and its fixed overhead, as it now stands. @unit MiB */
function residentMbOf(isolate: ivm.Isolate, heap = isolate.getHeapStatisticsSync()): number {
  return (heap.total_physical_size + heap.malloced_memory) / 2 ** 20 + ISOLATE_OVERHEAD_MB;
}

const CALL_TIMEOUT_MESSAGE = "The call ran past its callTimeoutMs while its program ran, and the program was stopped.";

function timeoutMessage(timeoutMs: number): string {
  return `The program ran longer than executionTimeoutMs (${timeoutMs} ms) and was stopped.`;
}

function memoryMessage(memoryLimitMb: number, detail?: string): string {
  return `The program used more memory than memoryLimitMb (${memoryLimitMb} MiB) and was stopped${detail === undefined ? "" : ` (${detail})`}.`;
}
