import ivm from "isolated-vm";
import { SANDBOX_LIMITS } from "../limits.ts";
import { createEncoder } from "../prelude/encode.ts";
import { hardenRealm } from "../prelude/harden.ts";
import { createRuntime } from "../prelude/runtime.ts";
import type { BridgeOutcome, IsolateResult, RunPayload, RunReport, RunRequestMessage, SyncRequestMessage } from "../protocol.ts";

const RUNTIME_SOURCE = `(${hardenRealm})();\nreturn (${createRuntime})((${createEncoder}), $0, $1, $2);`;

/** Forwards a program's `delegate` call to the host; must never reject. */
export type BridgeHandler = (callId: string, requestText: string) => Promise<BridgeOutcome>;

/** Records copied into the isolate per step of a large mirror sync, bounding the copy's peak memory. */
const SYNC_CHUNK = 1_000;

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
  readonly memoryLimitMb: number;
  /** Heap set aside for the history mirror, on top of `memoryLimitMb`. */
  readonly mirrorAllowanceMb: number;
  readonly #isolate: ivm.Isolate;
  readonly #start: ivm.Reference;
  readonly #takeRef: ivm.Reference;
  readonly #sync: ivm.Reference;
  readonly #waiters: Map<string, () => void>;
  #disposedOnPurpose = false;
  #tainted = false;

  private constructor(
    memoryLimitMb: number,
    mirrorAllowanceMb: number,
    isolate: ivm.Isolate,
    api: { start: ivm.Reference; take: ivm.Reference; sync: ivm.Reference },
    waiters: Map<string, () => void>,
  ) {
    this.memoryLimitMb = memoryLimitMb;
    this.mirrorAllowanceMb = mirrorAllowanceMb;
    this.#isolate = isolate;
    this.#start = api.start;
    this.#takeRef = api.take;
    this.#sync = api.sync;
    this.#waiters = waiters;
  }

  static async create(
    memoryLimitMb: number,
    mirrorAllowanceMb: number,
    onBridge: BridgeHandler,
    onCatastrophe: (message: string) => void,
  ): Promise<AgentIsolate> {
    const isolate = new ivm.Isolate({ memoryLimit: memoryLimitMb + mirrorAllowanceMb, onCatastrophicError: onCatastrophe });
    try {
      const context = await isolate.createContext();
      const waiters = new Map<string, () => void>();
      const notify = new ivm.Callback((callId: string) => waiters.get(String(callId))?.(), { async: true });
      const bridge = new ivm.Reference(async (callId: unknown, requestText: unknown): Promise<BridgeOutcome> => {
        try {
          return await onBridge(String(callId), String(requestText));
        } catch {
          return { status: "error", ok: false, error_type: "execution", error_message: "The delegated call failed inside the sandbox host.", retriable: false };
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
      };
      return new AgentIsolate(memoryLimitMb, mirrorAllowanceMb, isolate, api, waiters);
    } catch (error) {
      if (!isolate.isDisposed) isolate.dispose();
      throw error;
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
   * Runs one program to its end. `cancel` is filled in with a function that stops the run.
   * Resolves with `resync` when the mirror does not match the history the host sent.
   *
   * The program's synchronous part (and the microtasks it queues) runs with `applySync`: most
   * programs settle there, and their result is taken at once. One that awaits the bridge or
   * never settles is finished by `notify`, the wall-clock deadline, or the disposal watch.
   */
  async run(request: RunRequestMessage, onStarted: () => void, control: { cancel?: () => void }): Promise<RunReport> {
    const { payload, timeoutMs } = request;
    let history = this.#historyFor(request);
    if (history === undefined) return { kind: "resync" };
    if (history.records.length > SYNC_CHUNK) {
      this.#addToMirror(history);
      history = { reset: false, records: [] };
    }
    const callId = payload.callId;
    const started = performance.now();
    let done = false;
    let settle!: (report: RunReport) => void;
    const report = new Promise<RunReport>((resolve) => {
      settle = (outcome) => {
        done = true;
        resolve(outcome);
      };
    });
    const abort = (errorType: "timeout" | "memory_limit" | "cancelled" | "execution", message: string) => {
      this.dispose();
      settle({ kind: "failed", errorType, message });
    };
    this.#waiters.set(callId, () => this.#take(callId, settle));
    control.cancel = () => abort("cancelled", "The call was cancelled while its program ran.");

    onStarted();
    try {
      this.#start.applySync(undefined, [{ ...payload, history } satisfies RunPayload], { arguments: { copy: true }, timeout: timeoutMs });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (/timed out/i.test(message)) abort("timeout", timeoutMessage(timeoutMs));
      else if (/memory limit/i.test(message) || (this.#isolate.isDisposed && !this.#disposedOnPurpose)) abort("memory_limit", memoryMessage(this.memoryLimitMb));
      else if (this.#isolate.isDisposed) abort("execution", "The sandbox isolate was lost while the program ran.");
      // Anything else is a stray rejection the program left behind; its own result is in its slot.
    }
    this.historyEpoch = request.historyEpoch;
    this.historyLength = request.historyStart + payload.history.records.length;
    if (!done) this.#take(callId, settle);

    let deadline: NodeJS.Timeout | undefined;
    let poll: NodeJS.Timeout | undefined;
    if (!done) {
      deadline = setTimeout(() => abort("timeout", timeoutMessage(timeoutMs)), Math.max(0, timeoutMs - (performance.now() - started)));
      poll = setInterval(() => {
        if (this.#isolate.isDisposed && !this.#disposedOnPurpose) abort("memory_limit", memoryMessage(this.memoryLimitMb));
      }, DISPOSAL_POLL_MS);
    }
    try {
      return await report;
    } finally {
      clearTimeout(deadline);
      clearInterval(poll);
      this.#waiters.delete(callId);
      if (this.#tainted) this.dispose();
    }
  }

  #historyFor(request: RunRequestMessage): RunPayload["history"] | undefined {
    return this.#continuation(request.historyEpoch, request.historyStart, request.payload.history.records);
  }

  /** The records as a continuation of the mirror, a reset, or undefined when they do not fit. */
  #continuation(epoch: number, start: number, records: readonly string[]): RunPayload["history"] | undefined {
    if (epoch === this.historyEpoch && start === this.historyLength) return { reset: false, records };
    if (start === 0) return { reset: true, records };
    return undefined;
  }

  /** Copies records into the isolate's mirror in bounded steps, keeping each copy's peak small. */
  #addToMirror(history: RunPayload["history"]): void {
    for (let index = 0; index < history.records.length; index += SYNC_CHUNK) {
      const chunk = { reset: history.reset && index === 0, records: history.records.slice(index, index + SYNC_CHUNK) };
      this.#sync.applySync(undefined, [chunk], { arguments: { copy: true }, timeout: 60_000 });
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
   * Takes the call's result from the isolate if it has settled (which also ends the call
   * there). A program that left globals it could not remove taints the isolate, which is then
   * replaced. Retried once if a stray rejection surfaces on this task.
   */
  #take(callId: string, settle: (report: RunReport) => void): void {
    for (let attempt = 0; attempt < 2; attempt += 1) {
      try {
        const taken = this.#takeRef.applySync(undefined, [callId], { result: { copy: true }, timeout: 1_000 }) as { result: IsolateResult; clean: boolean } | null;
        if (taken === null) return;
        if (!taken.clean) this.#tainted = true;
        settle({ kind: "settled", result: taken.result });
        return;
      } catch {
        if (this.#isolate.isDisposed) return;
      }
    }
  }

}

function timeoutMessage(timeoutMs: number): string {
  return `The program ran longer than executionTimeoutMs (${timeoutMs} ms) and was stopped.`;
}

function memoryMessage(memoryLimitMb: number): string {
  return `The program used more memory than memoryLimitMb (${memoryLimitMb} MiB) and was stopped.`;
}
