/**
 * Building an HNSW graph: which rows it may not lead to ({@link judgeOutliers}), and a large
 * first graph built on a worker thread (`index-build-worker.ts`), so that building it never
 * holds the application's event loop (100,000 passages of 384 dimensions take some 30 s on one
 * core). The thread is given a copy of the rows' vectors, adds them to a graph using one core,
 * judges the outliers, and saves the graph to a temporary file that this thread loads (usearch
 * has no other way to hand a graph over). The thread is unref'd: a build never keeps the
 * application alive. A stopped build keeps its turn until its thread is gone: native code cannot
 * be interrupted, and the thread would otherwise take a core beside the next build's.
 */
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { loadVectorIndex, newVectorIndex, type VectorIndex } from "./vector-index.ts";
import { dotAt, isZero, rowsOf } from "./vectors.ts";

/** What a build thread is given: `count` rows' vectors, one after another, and where to save the graph. */
export interface BuildJob {
  readonly dimensions: number;
  readonly vectors: Float32Array;
  readonly count: number;
  readonly path: string;
}

/** What it answers: the rows the graph may not lead to and the all-zero rows (kept out of it), or why it could not build. */
export type BuildAnswer = { readonly ok: true; readonly outliers: readonly number[]; readonly zeros: readonly number[] } | { readonly ok: false; readonly message: string };

/** A graph of rows 0 to `count` − 1, with its outliers and all-zero rows. */
export interface BuiltIndex {
  readonly index: VectorIndex;
  readonly outliers: readonly number[];
  readonly zeros: readonly number[];
}

/**
 * Builds the graph of `job`'s rows on this thread, using one core, and saves it to `job.path`
 * (what the build thread does). Rows of all zeros stay out of it.
 */
export function buildAndSave(job: BuildJob): BuildAnswer {
  const { dimensions, vectors, count } = job;
  const index = newVectorIndex(dimensions, 1);
  if (index === undefined) return { ok: false, message: "usearch is not available" };
  const rows: number[] = [];
  const zeros: number[] = [];
  for (let row = 0; row < count; row += 1) (isZero(vectors.subarray(row * dimensions, (row + 1) * dimensions)) ? zeros : rows).push(row);
  const graphVectors = rowsOf(vectors, dimensions, rows);
  index.add(rows, graphVectors);
  const outliers = judgeOutliers(index, rows, graphVectors, vectors, dimensions, () => undefined);
  index.save(job.path);
  return { ok: true, outliers, zeros };
}

/**
 * How many graphs are built on threads at once, each using one core: one core is left to the
 * application. Further builds wait their turn (their retrievers' searches scan meanwhile).
 */
export const MAX_THREAD_BUILDS = Math.max(1, Math.min(4, availableParallelism() - 1));

const waiting: IndexBuild[] = [];
let running = 0;

/** How many graphs are being built on threads now, and how many wait for a turn. */
export function indexBuilds(): { readonly running: number; readonly waiting: number } {
  return { running, waiting: waiting.length };
}

/** The rows a build takes: the first `count` rows' vectors, one after another (a copy of its own, handed to the thread). */
export type BuildSnapshot = () => { readonly vectors: Float32Array<ArrayBuffer>; readonly count: number };

/** The files builds may leave (saved, not yet loaded and removed): removed when the process exits, however it does. */
const livePaths = new Set<string>();
let removingAtExit = false;

function removeFile(path: string): void {
  try {
    rmSync(path, { force: true });
    livePaths.delete(path);
  } catch {
    // Still open elsewhere (Windows): removed when the process exits.
  }
}

/** A graph built on its own thread, at once or when its turn comes ({@link MAX_THREAD_BUILDS}). */
export class IndexBuild {
  /** The graph, loaded here; rejects when the thread could not build it (then the caller builds it itself) or the build was stopped. */
  readonly built: Promise<BuiltIndex & { readonly count: number }>;
  readonly #dimensions: number;
  readonly #snapshot: BuildSnapshot;
  #settle: { resolve: (built: BuiltIndex & { readonly count: number }) => void; reject: (error: Error) => void } | undefined;
  #worker: Worker | undefined;
  #path: string | undefined;
  /** `stopping`: stopped, its thread not yet gone (native code cannot be interrupted): it keeps its turn until then. */
  #state: "waiting" | "running" | "stopping" | "ended" = "waiting";

  /** Builds the graph of the rows `snapshot` gives when its turn comes (it is called then, not now). */
  constructor(dimensions: number, snapshot: BuildSnapshot) {
    this.#dimensions = dimensions;
    this.#snapshot = snapshot;
    this.built = new Promise((resolve, reject) => (this.#settle = { resolve, reject }));
    // Its caller may have stopped waiting (the rows were set again, the retriever closed).
    this.built.catch(() => undefined);
    if (running < MAX_THREAD_BUILDS) this.#start();
    else waiting.push(this);
  }

  #start(): void {
    running += 1;
    this.#state = "running";
    try {
      const path = join(tmpdir(), `improv-hnsw-${process.pid}-${randomUUID()}.usearch`);
      this.#path = path;
      livePaths.add(path);
      if (!removingAtExit) {
        removingAtExit = true;
        process.once("exit", () => livePaths.forEach(removeFile));
      }
      const fromSource = import.meta.url.endsWith(".ts");
      const worker = new Worker(new URL(`./index-build-worker.${fromSource ? "ts" : "js"}`, import.meta.url));
      this.#worker = worker;
      const { vectors, count } = this.#snapshot();
      worker.once("message", (answer: BuildAnswer) => {
        try {
          if (!answer.ok) throw new Error(answer.message);
          if (this.#state === "running") {
            const index = loadVectorIndex(this.#dimensions, path);
            removeFile(path);
            this.#settle?.resolve({ index, outliers: answer.outliers, zeros: answer.zeros, count });
          }
        } catch (error) {
          this.#settle?.reject(error instanceof Error ? error : new Error(String(error)));
        } finally {
          this.end();
        }
      });
      worker.once("error", (error) => {
        this.#settle?.reject(error);
        this.end();
      });
      worker.once("exit", () => this.#gone());
      // Unref'd once its listeners are on (adding one refs its port again): a build never keeps the process alive.
      worker.unref();
      worker.postMessage({ dimensions: this.#dimensions, vectors, count, path } satisfies BuildJob, [vectors.buffer]);
    } catch (error) {
      this.#settle?.reject(error instanceof Error ? error : new Error(String(error)));
      this.end();
    }
  }

  /** Stops the build (its `built` then rejects if it had not resolved). A waiting one leaves the queue; a running one keeps its turn until its thread is gone. */
  end(): void {
    if (this.#state === "ended" || this.#state === "stopping") return;
    this.#settle?.reject(new Error("the index build was stopped"));
    this.#settle = undefined;
    if (this.#state === "waiting") {
      this.#state = "ended";
      waiting.splice(waiting.indexOf(this), 1);
      return;
    }
    this.#state = "stopping";
    if (this.#worker === undefined) this.#gone();
    else void this.#worker.terminate();
  }

  /** Its thread is gone (or never started): its file is removed and the next waiting build starts. */
  #gone(): void {
    if (this.#state === "ended") return;
    this.#settle?.reject(new Error("the index build thread ended without an answer"));
    this.#settle = undefined;
    this.#state = "ended";
    if (this.#path !== undefined) removeFile(this.#path);
    running -= 1;
    const next = waiting.shift();
    if (next !== undefined) next.#start();
  }
}

/**
 * A row whose nearest other row (its near-copies aside) scores below this is unlike the rest: a
 * graph keeps few links into such a row (its neighbours' lists fill with closer rows), so a
 * search may never reach it. Those rows, and rows a search for their own vector does not find,
 * are scored at every search. When a quarter of the rows are so, the search is a scan: slower,
 * never wrong.
 */
const OUTLIER_SIMILARITY = 0.5;
/** Rows at least this similar are near-copies: as good as the same row to a search (of many, the int8 graph may rank any first). */
const SAME_SIMILARITY = 0.99;
/** How many rows a new row's search for its own vector asks for; and, when all of those are its copies, the second search. */
const SELF_CHECK_CANDIDATES = 8;
const WIDE_CHECK_CANDIDATES = 64;

/**
 * The `rows` (in `index`, their vectors one after another in `vectors`) the graph may not lead
 * to: each is looked for by its own vector, and is an outlier when the graph leads neither to it
 * nor to a near-copy, or when its nearest row other than its copies is unlike it. A row whose
 * candidates are all its copies takes the decision made for a copy (`known` says it for a row
 * judged before, undefined when it was not), or looks wider. `matrix` holds every row's vector.
 */
export function judgeOutliers(index: VectorIndex, rows: readonly number[], vectors: Float32Array, matrix: Float32Array, dimensions: number, known: (row: number) => boolean | undefined): number[] {
  const decided = new Map<number, boolean>();
  const decide = (row: number, own: Float32Array, found: readonly number[]): boolean | undefined => {
    let reached = false;
    let nearest = Number.NEGATIVE_INFINITY;
    const copies: number[] = [];
    for (const other of found) {
      const score = other === row ? 1 : dotAt(own, matrix, other * dimensions, dimensions);
      if (score >= SAME_SIMILARITY) {
        reached = true;
        if (other !== row) copies.push(other);
      } else nearest = Math.max(nearest, score);
    }
    if (!reached) return true;
    if (nearest > Number.NEGATIVE_INFINITY) return nearest < OUTLIER_SIMILARITY;
    for (const copy of copies) {
      const decision = decided.get(copy) ?? known(copy);
      if (decision !== undefined) return decision;
    }
    return undefined;
  };
  const outliers: number[] = [];
  index.nearestEach(vectors, dimensions, SELF_CHECK_CANDIDATES).forEach((found, at) => {
    const row = rows[at] as number;
    const own = vectors.subarray(at * dimensions, (at + 1) * dimensions);
    const outlier = decide(row, own, found) ?? decide(row, own, index.nearest(own, WIDE_CHECK_CANDIDATES).rows) ?? true;
    decided.set(row, outlier);
    if (outlier) outliers.push(row);
  });
  return outliers;
}
