import { Worker } from "node:worker_threads";
import { MAX_RUN_ID, REPORT_FD } from "../protocol.ts";
import { holdNumber, WATCH_SLOTS, type MemoryWatchData } from "./memory-watch-slots.ts";

/**
 * The main thread's side of the memory backstop: starts the watch thread
 * (`memory-watch-worker.ts`) and keeps it told of the ceiling, the runs in progress and which
 * run's synchronous part holds the main thread.
 */
export class MemoryWatch {
  readonly #slots = new Int32Array(new SharedArrayBuffer(Object.keys(WATCH_SLOTS).length * Int32Array.BYTES_PER_ELEMENT));
  #worker: Worker | undefined;

  /** Starts the watch thread once; a process that cannot start it runs without the backstop. */
  #start(): void {
    if (this.#worker) return;
    const fromSource = import.meta.url.endsWith(".ts");
    const data: MemoryWatchData = { state: this.#slots.buffer as SharedArrayBuffer, reportFd: REPORT_FD };
    try {
      this.#worker = new Worker(new URL(`./memory-watch-worker.${fromSource ? "ts" : "js"}`, import.meta.url), { workerData: data });
      this.#worker.unref();
      this.#worker.on("error", (error) => process.stderr.write(`improv sandbox: the memory watch stopped (${error.message}).\n`));
    } catch (error) {
      process.stderr.write(`improv sandbox: the memory watch could not start (${(error as Error).message}).\n`);
    }
  }

  /** The process's ceiling with the isolates it holds now. */
  setCeiling(ceilingMb: number): void {
    Atomics.store(this.#slots, WATCH_SLOTS.ceilingMb, ceilingMb);
  }

  runStarted(): void {
    this.#start();
    Atomics.add(this.#slots, WATCH_SLOTS.activeRuns, 1);
    Atomics.notify(this.#slots, WATCH_SLOTS.activeRuns);
  }

  runEnded(): void {
    Atomics.sub(this.#slots, WATCH_SLOTS.activeRuns, 1);
  }

  /**
   * Which run holds the main thread (0: none), so a report can name it; the hold's number (see
   * `busyLine`), or 0 for none.
   */
  holding(runId: number): number {
    if (!Number.isInteger(runId) || runId < 0 || runId > MAX_RUN_ID) throw new RangeError(`Run id ${runId} does not fit the watch's slot (0 to ${MAX_RUN_ID}).`);
    let hold = 0;
    if (runId !== 0) hold = holdNumber(Atomics.add(this.#slots, WATCH_SLOTS.holds, 1) + 1);
    Atomics.store(this.#slots, WATCH_SLOTS.syncRunId, runId);
    return hold;
  }
}
