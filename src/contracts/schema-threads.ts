/**
 * The threads that compile and check programs' JSON Schemas (`schema-worker.ts`), so that a
 * schema costly to compile or to run never holds the host's event loop. A thread runs one
 * check at a time; a check whose signal aborts (its time is up, its call ended) ends its
 * thread, and the next check starts another. Threads are unref'd while idle and end after a
 * while with nothing to check: they never keep the application alive.
 */
import { Worker } from "node:worker_threads";
import type { SchemaCheck } from "../tools/index.ts";
import type { SchemaJob, SchemaJobAnswer } from "./schema-worker.ts";

/** Threads at most; further checks wait for one (their time running). */
const MAX_THREADS = 4;
/** How long a thread with nothing to check is kept. @unit ms */
const IDLE_MS = 30_000;
/** The memory a program's schema may take to compile and run. @unit MB */
export const SCHEMA_THREAD_MEMORY_MB = 128;

interface Job extends SchemaJob {
  /** The thread checking it, once one is. */
  thread: SchemaThread | undefined;
  readonly settle: (answer: SchemaJobAnswer | Error) => void;
}

const idle: SchemaThread[] = [];
const waiting: Job[] = [];
let threads = 0;

/**
 * `value` (JSON data) checked against `schema` (JSON text) on a schema thread. Rejects with the
 * signal's reason when it aborts first, and with an error saying why when the schema could not
 * check (it is not usable, or it needed more memory than {@link SCHEMA_THREAD_MEMORY_MB}).
 */
export function checkInThread(schema: string, value: unknown, signal: AbortSignal): Promise<SchemaCheck> {
  return new Promise<SchemaCheck>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      const queued = waiting.indexOf(job);
      if (queued !== -1) waiting.splice(queued, 1);
      job.thread?.end();
      reject(signal.reason);
    };
    const job: Job = {
      schema,
      value,
      thread: undefined,
      settle(answer) {
        signal.removeEventListener("abort", onAbort);
        if (answer instanceof Error) reject(answer);
        else if (answer.kind === "unusable") reject(new Error(answer.problem));
        else resolve(answer.kind === "match" ? { ok: true, value } : { ok: false, problems: answer.problems });
      },
    };
    signal.addEventListener("abort", onAbort, { once: true });
    const thread = idle.pop();
    if (thread !== undefined) thread.run(job);
    else if (threads < MAX_THREADS) startThread(job);
    else waiting.push(job);
  });
}

/** How many checks are running on a thread now, and how many wait for one. */
export function schemaChecks(): { readonly running: number; readonly waiting: number } {
  return { running: threads - idle.length, waiting: waiting.length };
}

/**
 * Starts a thread ahead of the first check, when none runs: a program's contract is read well
 * before its first value is checked, and a thread takes a while to load.
 */
export function prepareThread(): void {
  if (threads > 0) return;
  try {
    new SchemaThread().rest();
  } catch {
    // The first check starts one, or says why it cannot.
  }
}

/** A new thread for `job`; the job fails, saying why, when none can start. */
function startThread(job: Job): void {
  let thread: SchemaThread;
  try {
    thread = new SchemaThread();
  } catch (error) {
    job.settle(new Error(`no thread could start to check it (${(error as Error).message})`));
    return;
  }
  thread.run(job);
}

class SchemaThread {
  readonly #worker: Worker;
  #job: Job | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  #ended = false;

  constructor() {
    const fromSource = import.meta.url.endsWith(".ts");
    this.#worker = new Worker(new URL(`./schema-worker.${fromSource ? "ts" : "js"}`, import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: SCHEMA_THREAD_MEMORY_MB, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
    });
    threads += 1;
    this.#worker.unref();
    this.#worker.on("message", (answer: SchemaJobAnswer) => this.#answered(answer));
    this.#worker.on("error", (error: Error & { code?: string }) => {
      const why =
        error.code === "ERR_WORKER_OUT_OF_MEMORY"
          ? `checking it needed more than the ${SCHEMA_THREAD_MEMORY_MB} MB a program's schema may use. Pass a simpler schema (fewer, shorter patterns)`
          : `its check stopped (${error.message})`;
      this.#gone(new Error(why));
    });
    this.#worker.on("exit", () => this.#gone(new Error("its check stopped")));
  }

  run(job: Job): void {
    clearTimeout(this.#idleTimer);
    this.#job = job;
    job.thread = this;
    // Held while it checks: a caller awaiting the check keeps the process alive.
    this.#worker.ref();
    try {
      this.#worker.postMessage({ schema: job.schema, value: job.value } satisfies SchemaJob);
    } catch (error) {
      this.#job = undefined;
      job.settle(error as Error);
      this.rest();
    }
  }

  /** Ends the thread (its check, if any, is dropped: its caller has its answer already). */
  end(): void {
    if (this.#ended) return;
    this.#job = undefined;
    this.#gone(undefined);
    void this.#worker.terminate();
  }

  #answered(answer: SchemaJobAnswer): void {
    const job = this.#job;
    this.#job = undefined;
    job?.settle(answer);
    this.rest();
  }

  /** Takes the next waiting check, or waits idle for one. */
  rest(): void {
    if (this.#ended) return;
    const next = waiting.shift();
    if (next !== undefined) return this.run(next);
    this.#worker.unref();
    idle.push(this);
    this.#idleTimer = setTimeout(() => this.end(), IDLE_MS);
    this.#idleTimer.unref();
  }

  #gone(error: Error | undefined): void {
    if (this.#ended) return;
    this.#ended = true;
    threads -= 1;
    clearTimeout(this.#idleTimer);
    const at = idle.indexOf(this);
    if (at !== -1) idle.splice(at, 1);
    const job = this.#job;
    this.#job = undefined;
    if (job !== undefined && error !== undefined) job.settle(error);
    // A check waiting for a thread gets a new one in this one's place.
    const next = waiting.shift();
    if (next !== undefined) startThread(next);
  }
}
