import ivm from "isolated-vm";
import { SANDBOX_LIMITS } from "../limits.ts";
import { createEncoder } from "../prelude/encode.ts";
import { hardenRealm } from "../prelude/harden.ts";
import { createRuntime } from "../prelude/runtime.ts";
import type { BridgeOutcome, IsolateResult, RunPayload, RunReport, RunRequestMessage } from "../protocol.ts";

const RUNTIME_SOURCE = `(${hardenRealm})();\nreturn (${createRuntime})((${createEncoder}), $0, $1, $2);`;

/** Forwards a program's `delegate` call to the host; must never reject. */
export type BridgeHandler = (callId: string, requestText: string) => Promise<BridgeOutcome>;

/** How often a long run checks whether isolated-vm disposed its isolate (memory limit). */
const DISPOSAL_POLL_MS = 25;

/** How long a disposed isolate's run may take to stop before its thread counts as stuck. */
const STOP_GRACE_MS = 1_000;

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
  readonly #fetch: ivm.Reference;
  readonly #finish: ivm.Reference;
  readonly #waiters: Map<string, () => void>;
  #disposedOnPurpose = false;
  #running: Promise<unknown> | undefined;

  private constructor(
    memoryLimitMb: number,
    mirrorAllowanceMb: number,
    isolate: ivm.Isolate,
    api: { start: ivm.Reference; fetch: ivm.Reference; finish: ivm.Reference },
    waiters: Map<string, () => void>,
  ) {
    this.memoryLimitMb = memoryLimitMb;
    this.mirrorAllowanceMb = mirrorAllowanceMb;
    this.#isolate = isolate;
    this.#start = api.start;
    this.#fetch = api.fetch;
    this.#finish = api.finish;
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
        fetch: (await runtime.get("fetch", { reference: true })) as ivm.Reference,
        finish: (await runtime.get("finish", { reference: true })) as ivm.Reference,
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
   */
  async run(request: RunRequestMessage, onStarted: () => void, control: { cancel?: () => void }): Promise<RunReport> {
    const { payload, timeoutMs } = request;
    const history = this.#historyFor(request);
    if (history === undefined) return { kind: "resync" };
    const callId = payload.callId;
    let settle!: (report: RunReport) => void;
    const report = new Promise<RunReport>((resolve) => {
      settle = resolve;
    });
    const abort = (errorType: "timeout" | "memory_limit" | "cancelled" | "execution", message: string) => {
      this.dispose();
      settle({ kind: "failed", errorType, message });
    };
    this.#waiters.set(callId, () => settle({ kind: "settled", result: this.#collect(callId) }));
    const deadline = setTimeout(() => abort("timeout", timeoutMessage(timeoutMs)), timeoutMs);
    let poll: NodeJS.Timeout | undefined;
    const startPolling = setTimeout(() => {
      poll = setInterval(() => {
        if (this.#isolate.isDisposed && !this.#disposedOnPurpose) abort("memory_limit", memoryMessage(this.memoryLimitMb));
      }, DISPOSAL_POLL_MS);
    }, DISPOSAL_POLL_MS);
    control.cancel = () => abort("cancelled", "The call was cancelled while its program ran.");

    onStarted();
    const running = this.#start.apply(undefined, [{ ...payload, history } satisfies RunPayload], { arguments: { copy: true }, timeout: timeoutMs });
    this.#running = running;
    running.catch((error: unknown) => {
        const message = error instanceof Error ? error.message : String(error);
        if (/timed out/i.test(message)) abort("timeout", timeoutMessage(timeoutMs));
        else if (/memory limit/i.test(message) || (this.#isolate.isDisposed && !this.#disposedOnPurpose)) {
          abort("memory_limit", memoryMessage(this.memoryLimitMb));
        } else if (this.#isolate.isDisposed) abort("execution", "The sandbox isolate was lost while the program ran.");
        // Anything else is a stray rejection the program left behind; its own result still arrives.
      });
    this.historyEpoch = request.historyEpoch;
    this.historyLength = request.historyStart + payload.history.records.length;
    try {
      const outcome = await report;
      if (outcome.kind === "settled" && !this.#isolate.isDisposed && !this.#finishCall(callId)) this.dispose();
      return outcome;
    } finally {
      clearTimeout(deadline);
      clearTimeout(startPolling);
      clearInterval(poll);
      this.#waiters.delete(callId);
    }
  }

  #historyFor(request: RunRequestMessage): RunPayload["history"] | undefined {
    const { records } = request.payload.history;
    if (request.historyEpoch === this.historyEpoch && request.historyStart === this.historyLength) return { reset: false, records };
    if (request.historyStart === 0) return { reset: true, records };
    return undefined;
  }

  /** The call's result, fetched from the isolate; retried once if a stray rejection surfaces. */
  #collect(callId: string): IsolateResult {
    for (let attempt = 0; attempt < 2; attempt += 1) {
      try {
        const result = this.#fetch.applySync(undefined, [callId], { result: { copy: true }, timeout: 1_000 }) as IsolateResult | null;
        if (result) return result;
      } catch {
        if (this.#isolate.isDisposed) break;
      }
    }
    return { status: "error", errorType: "execution", name: "Error", message: "The program's result could not be read from the sandbox.", console: [] };
  }

  /**
   * After a forced stop: whether the isolate's thread really stopped. Some built-ins cannot be
   * interrupted (`new Array(1e9).fill(0)`); such a thread keeps running after `dispose()`, and
   * only ending the process frees it.
   */
  async stoppedAfterDispose(): Promise<boolean> {
    const running = this.#running;
    if (!this.#disposedOnPurpose || running === undefined) return true;
    let timer: NodeJS.Timeout | undefined;
    const stopped = await Promise.race([
      running.then(() => true, () => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), STOP_GRACE_MS);
      }),
    ]);
    clearTimeout(timer);
    return stopped;
  }

  /** Ends the call inside the isolate; false when the program left globals it could not remove. */
  #finishCall(callId: string): boolean {
    try {
      return this.#finish.applySync(undefined, [callId], { timeout: 1_000 }) === true;
    } catch {
      return false;
    }
  }
}

function timeoutMessage(timeoutMs: number): string {
  return `The program ran longer than executionTimeoutMs (${timeoutMs} ms) and was stopped.`;
}

function memoryMessage(memoryLimitMb: number): string {
  return `The program used more memory than memoryLimitMb (${memoryLimitMb} MiB) and was stopped.`;
}
