import ivm from "isolated-vm";
import { SANDBOX_LIMITS } from "../limits.ts";
import { RunDeadline } from "../run-deadline.ts";
import { createEncoder } from "../prelude/encode.ts";
import { hardenRealm } from "../prelude/harden.ts";
import { createPrinter } from "../prelude/print.ts";
import { createConsole } from "../prelude/console.ts";
import { createHostCalls } from "../prelude/host-calls.ts";
import { createMirror } from "../prelude/mirror.ts";
import { createRuntime } from "../prelude/runtime.ts";
import { bridgeFailure, MIRROR_CHUNK_RECORDS, type BridgeAnswer, type IsolateResult, type MirrorChunk, type RunReport, type RunRequestMessage, type StartAnswer, type SyncRequestMessage } from "../protocol.ts";

/**
 * The functions sent into the isolate as source text, each self-contained (a test parses each
 * one and fails on any name it uses that is neither its own nor an intrinsic): `hardenRealm`
 * runs first; the runtime is composed from the rest.
 */
export const ISOLATE_PIECES = { hardenRealm, createRuntime, createEncoder, createPrinter, createMirror, createConsole, createHostCalls } as const;

const RUNTIME_SOURCE = `(${hardenRealm})();
return (${createRuntime})({
  createEncoder: (${createEncoder}),
  createPrinter: (${createPrinter}),
  createMirror: (${createMirror}),
  createConsole: (${createConsole}),
  createHostCalls: (${createHostCalls}),
  notify: $0,
  bridge: $1,
  limits: $2,
});`;

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
  /** Its synchronous part is over and it has not settled: it goes on, awaiting something. */
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
  /** A request of the program's went to the host / its answer came (set by the run; see `RunDeadline` on waits). */
  waitBegan?: () => void;
  waitEnded?: () => void;
}

/** Forwards a program's bridge request (an untrusted copy of it) to the host; must never reject. */
export type BridgeHandler = (callId: string, request: unknown) => Promise<BridgeAnswer>;

/** How long tidying an isolate between calls may take before the isolate is replaced instead. @unit ms */
const TIDY_TIMEOUT_MS = 1_000;

/** The mirror estimate from which the mirror's heap is measured (see `AgentIsolate.#measureIfStale`). @unit MiB */
const MEASURED_MIRROR_MB = 4;

/** How often a long run checks whether isolated-vm disposed its isolate (memory limit). */
const DISPOSAL_POLL_MS = 25;

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
  busy = false;
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
  /** Heap allowed beyond `memoryLimitMb` now. @unit MiB */
  #allowanceMb = 0;
  readonly #collect: ivm.Reference;
  readonly #isolate: ivm.Isolate;
  readonly #start: ivm.Reference;
  readonly #takeRef: ivm.Reference;
  readonly #sync: ivm.Reference;
  readonly #tidyRef: ivm.Reference;
  readonly #holdBack: ivm.Reference;
  readonly #waiters: Map<string, () => void>;
  #disposedOnPurpose = false;

  private constructor(
    memoryLimitMb: number,
    mirrorReserveMb: number,
    heap: { readonly runtimeMb: number; readonly extraSlackMb: number },
    isolate: ivm.Isolate,
    api: { start: ivm.Reference; take: ivm.Reference; sync: ivm.Reference; tidy: ivm.Reference; holdBack: ivm.Reference; collect: ivm.Reference },
    waiters: Map<string, () => void>,
  ) {
    this.memoryLimitMb = memoryLimitMb;
    this.mirrorReserveMb = mirrorReserveMb;
    this.#measuredMb = heap.runtimeMb;
    this.#extraSlackMb = heap.extraSlackMb;
    this.#collect = api.collect;
    this.#isolate = isolate;
    this.#start = api.start;
    this.#takeRef = api.take;
    this.#sync = api.sync;
    this.#tidyRef = api.tidy;
    this.#holdBack = api.holdBack;
    this.#waiters = waiters;
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
      const context = await isolate.createContext();
      const waiters = new Map<string, () => void>();
      const notify = new ivm.Callback((callId: string) => waiters.get(String(callId))?.(), { async: true });
      const bridge = new ivm.Reference(async (callId: unknown, request: unknown): Promise<BridgeAnswer> => {
        try {
          return await onBridge(String(callId), request);
        } catch {
          return bridgeFailure("execution", "The request failed inside the sandbox process.");
        }
      });
      const runtime = (await context.evalClosure(RUNTIME_SOURCE, [notify, bridge, new ivm.ExternalCopy(SANDBOX_LIMITS).copyInto()], {
        result: { reference: true },
        timeout: 10_000,
      })) as ivm.Reference;
      const api = {
        start: (await runtime.get("start", { reference: true })) as ivm.Reference,
        take: (await runtime.get("take", { reference: true })) as ivm.Reference,
        sync: (await runtime.get("sync", { reference: true })) as ivm.Reference,
        tidy: (await runtime.get("tidy", { reference: true })) as ivm.Reference,
        holdBack: (await context.evalClosure(HOLD_BACK_SOURCE, [], { result: { reference: true } })) as ivm.Reference,
        collect: (await context.evalClosure(COLLECT_SOURCE, [], { result: { reference: true } })) as ivm.Reference,
      };
      const heap = isolate.getHeapStatisticsSync();
      const runtimeMb = Math.ceil(heap.used_heap_size / 2 ** 20);
      const extraSlackMb = Math.max(0, Math.floor(heap.heap_size_limit / 2 ** 20 - (memoryLimitMb + mirrorReserveMb) - engineSlackMb(memoryLimitMb)));
      const created = new AgentIsolate(memoryLimitMb, mirrorReserveMb, { runtimeMb, extraSlackMb }, isolate, api, waiters);
      if (!created.allowMirror(mirrorMb)) throw new Error("the isolate could not hold back its unused mirror reserve");
      return created;
    } catch (error) {
      if (!isolate.isDisposed) isolate.dispose();
      throw error;
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
      const liveMb = Math.ceil(this.#isolate.getHeapStatisticsSync().used_heap_size / 2 ** 20);
      const measuredAt = this.#mirrorMb;
      if (!this.#allow(liveMb)) return;
      this.#measuredMb = liveMb;
      this.#measuredAtMirrorMb = measuredAt;
    } catch {
      // The estimate stays; a disposed isolate is rebuilt by the next run.
    }
  }

  get isDisposed(): boolean {
    return this.#isolate.isDisposed;
  }

  /** Stops everything running in the isolate and frees it. */
  dispose(): void {
    this.#disposedOnPurpose = true;
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
   * `steps` hears when the program starts and, unless it settled in its synchronous part, when
   * it goes on after that part.
   *
   * The program's synchronous part (and the microtasks it queues) runs with `applySync`: most
   * programs settle there, and their result comes back with it, in one entry into the isolate.
   * One that awaits the bridge or never settles is finished by `notify` (then taken), the
   * wall-clock deadline, or the disposal watch.
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
    const callLeftMs = (control.callEndsAt ?? Number.POSITIVE_INFINITY) - started;
    if (callLeftMs <= 0) return { kind: "failed", errorType: "timeout", message: CALL_TIMEOUT_MESSAGE };
    // The synchronous part runs within the program's own time, and within the call's.
    const syncLimitMs = Math.min(timeoutMs, Math.max(1, Math.ceil(callLeftMs)));
    const syncTimeoutMessage = syncLimitMs < timeoutMs ? CALL_TIMEOUT_MESSAGE : timeoutMessage(timeoutMs);
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
    this.#waiters.set(callId, () => this.#take(callId, settle));
    control.cancel = () => abort("cancelled", "The call was cancelled while its program ran.");

    steps.starting();
    let threw = false;
    try {
      const answer = this.#start.applySync(undefined, [{ ...payload, history }], { arguments: { copy: true }, result: { copy: true }, timeout: syncLimitMs }) as StartAnswer;
      if (answer.tainted) {
        // An earlier program left a global that cannot be removed: nothing ran; a fresh isolate runs it.
        this.#waiters.delete(callId);
        this.dispose();
        return { kind: "resync" };
      }
      if (answer.result !== null) this.#settleWith(answer.result, settle);
    } catch {
      // Decided by what happened, never by the error's text: a stray rejection the program left
      // behind is reported on this task with whatever message the program chose.
      threw = true;
      if (this.#isolate.isDisposed) abort("memory_limit", memoryMessage(this.memoryLimitMb));
    }
    this.historyEpoch = request.historyEpoch;
    this.historyLength = request.historyStart + payload.history.records.length;
    if (settled === undefined) this.#take(callId, settle);
    // Not settled, and the run was stopped at its time limit (not by a stray rejection): a time-out.
    if (settled === undefined && threw && performance.now() - started >= syncLimitMs) abort("timeout", syncTimeoutMessage);
    if (settled !== undefined) {
      // Settled in its synchronous part, as most programs do: the report goes at once.
      this.#waiters.delete(callId);
      return settled;
    }
    steps.continuing();
    return new Promise<RunReport>((resolve) => {
      // Counted from the program's start by the held rule: time other runs' synchronous parts
      // held this thread is not its own, nor are its waits for the host (less what it ran meanwhile).
      const deadline = new RunDeadline(
        timeoutMs,
        () => {
          // A program that settled while another run held this thread (its notice still queued
          // behind this timer) is taken, not timed out for that wait.
          this.#take(callId, settle);
          if (settled === undefined) abort("timeout", timeoutMessage(timeoutMs));
        },
        started,
      );
      control.excuse = (ms) => deadline.excuse(ms);
      // What the program ran while it waits for the host: the isolate's own running time, which counts.
      let ranBeforeWaitMs = 0;
      control.waitBegan = () => {
        if (!deadline.waiting) ranBeforeWaitMs = this.#ranMs();
        deadline.waitBegan();
      };
      control.waitEnded = () => deadline.waitEnded(this.#ranMs() - ranBeforeWaitMs);
      const callTimer = Number.isFinite(callLeftMs)
        ? setTimeout(() => {
            this.#take(callId, settle);
            if (settled === undefined) abort("timeout", CALL_TIMEOUT_MESSAGE);
          }, callLeftMs - (performance.now() - started))
        : undefined;
      const poll = setInterval(() => {
        if (this.#isolate.isDisposed && !this.#disposedOnPurpose) abort("memory_limit", memoryMessage(this.memoryLimitMb));
        // A continuation that runs beside a request still in flight spends the program's own time.
        else if (deadline.waiting && this.#ranMs() - ranBeforeWaitMs >= deadline.remainingMs()) abort("timeout", timeoutMessage(timeoutMs));
      }, DISPOSAL_POLL_MS);
      later = (report) => {
        deadline.stop();
        clearTimeout(callTimer);
        clearInterval(poll);
        this.#waiters.delete(callId);
        resolve(report);
      };
    });
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
    let tidied = false;
    try {
      tidied = this.#applyRepeatable(this.#tidyRef, [], { result: { copy: true } }, TIDY_TIMEOUT_MS) === true;
    } catch {
      // Stopped at its time limit, or the isolate is gone.
    }
    if (!tidied) this.dispose();
    else this.#measureIfStale();
  }

  /** Takes the call's result from the isolate if it has settled (which also ends the call there). */
  #take(callId: string, settle: (report: RunReport) => void): void {
    let result: IsolateResult | null;
    try {
      result = this.#applyRepeatable(this.#takeRef, [callId], { result: { copy: true }, timeout: 1_000 }) as IsolateResult | null;
    } catch {
      return;
    }
    if (result !== null) this.#settleWith(result, settle);
  }

  #settleWith(result: IsolateResult, settle: (report: RunReport) => void): void {
    // The engine refused an ArrayBuffer (see the runtime's `fail`): say so in the words of the limit.
    if (result.status === "error" && result.errorType === "memory_limit") {
      settle({ kind: "settled", result: { ...result, name: "Thrown", message: memoryMessage(this.memoryLimitMb, `${result.name}: ${result.message}`) } });
      return;
    }
    settle({ kind: "settled", result });
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

const CALL_TIMEOUT_MESSAGE = "The call ran past its callTimeoutMs while its program ran, and the program was stopped.";

function timeoutMessage(timeoutMs: number): string {
  return `The program ran longer than executionTimeoutMs (${timeoutMs} ms) and was stopped.`;
}

function memoryMessage(memoryLimitMb: number, detail?: string): string {
  return `The program used more memory than memoryLimitMb (${memoryLimitMb} MiB) and was stopped${detail === undefined ? "" : ` (${detail})`}.`;
}
