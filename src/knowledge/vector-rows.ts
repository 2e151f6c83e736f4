/**
 * The rows the in-process retrievers search: unit vectors in one contiguous matrix, each with its
 * id and metadata. A search scans every row, or, with `index: "hnsw"` past {@link INDEX_MIN_ROWS}
 * rows, asks an HNSW index ({@link VectorIndex}) for candidates and scores those exactly: the
 * scores are always exact, the set found is approximate (recall in docs/performance.md).
 */
import type { KnowledgeResult, MetadataFilter } from "./types.ts";
import { type BuiltIndex, IndexBuild, judgeOutliers } from "./index-build.ts";
import { GRAPH_SCORE_ERROR, newVectorIndex, type VectorIndex } from "./vector-index.ts";
import { clampCosine, dotAt, dotFour, isZero, matchesFilter, result, rowsOf, type StoredMetadata } from "./vectors.ts";

/** Up to this many rows a scan is cheap enough (0.6 ms at 384 dimensions) that no index is built. */
export const INDEX_MIN_ROWS = 2_048;
/**
 * The most rows a search takes into the index (about 0.05–0.15 s of holding the thread at 384
 * dimensions): a first graph of fewer than {@link THREAD_BUILD_MIN_ROWS}, and rows added or set
 * later; rows still waiting are scored exactly by every search meanwhile.
 */
const INTAKE_ROWS = 1_024;
/**
 * From this many rows the graph is first built on a thread of its own (searches scan until it is
 * in); fewer are taken in by the searches, {@link INTAKE_ROWS} at a time.
 */
const THREAD_BUILD_MIN_ROWS = 4 * 1_024;
/** Candidates asked of the index: at least this many, and at least four times `topK`. */
export const MIN_CANDIDATES = 40;

/**
 * What an in-process retriever answers with once no graph of its is being built on a thread: for
 * tests and benchmarks (searches never wait for a build; they scan meanwhile).
 */
export const INDEX_BUILT = Symbol("improv.indexBuilt");

/** Settles once `retriever` (one of improv's in-process retrievers, or any other: then at once) has no graph being built on a thread. */
export async function indexBuiltOf(retriever: object): Promise<void> {
  await (retriever as { [INDEX_BUILT]?: () => Promise<void> })[INDEX_BUILT]?.();
}

/** What a search of the rows is asked. */
export interface RowSearch {
  readonly topK: number;
  readonly minRelevance: number;
  readonly filter: MetadataFilter | undefined;
}

/**
 * Unit vectors in one contiguous matrix, each row with its id and metadata, scanned in one tight
 * loop (a row per vector in a map scans at half the speed). An id set again keeps its row.
 */
export class VectorRows {
  readonly dimensions: number;
  readonly ids: string[] = [];
  readonly metadata: (StoredMetadata | undefined)[] = [];
  readonly #rows = new Map<string, number>();
  readonly #scanOnly: boolean;
  #matrix: Float32Array;
  /** Where {@link #scoreEach} puts its scores. */
  readonly #four = new Float64Array(4);
  /** The index, once the rows are many enough; null when none can be had (usearch missing, or it failed once). */
  #index: VectorIndex | null | undefined;
  /** Rows set since the index last took them in: added to it at the next search. */
  readonly #unindexed = new Set<number>();
  /** Indexed rows a search may not reach through the graph ({@link OUTLIER_SIMILARITY}): scored at every search. */
  readonly #outliers = new Set<number>();
  /** Rows whose vector is all zeros (an empty passage): never in the graph, every search scores them 0. */
  readonly #zeros = new Set<number>();
  /** Rows taken out of the graph since it was built (set again): past half the rows, it is built again. */
  #removed = 0;
  /** Some outliers were judged while the graph lacked rows still to be taken in. */
  #judgedEarly = false;
  /** The graph being built on its own thread: the rows it holds, and those of them set again since. */
  #building: Building | undefined;
  /** Whether a first graph of many rows is built on a thread (false once a thread failed: the searches build it). */
  #buildOnThread: boolean;

  /**
   * `index: "hnsw"`: an index past {@link INDEX_MIN_ROWS} rows (when usearch loads); else every
   * search scans. `buildOnThread: false` has the searches build even a large first graph.
   */
  constructor(dimensions: number, capacity = 64, options: { readonly index?: "exact" | "hnsw"; readonly buildOnThread?: boolean } = {}) {
    this.dimensions = dimensions;
    this.#matrix = new Float32Array(Math.max(1, capacity) * dimensions);
    this.#scanOnly = options.index !== "hnsw";
    this.#buildOnThread = options.buildOnThread !== false;
  }

  /** Settles once no graph is being built on a thread (for tests and benchmarks: searches never wait for it). */
  async indexBuilt(): Promise<void> {
    const building = this.#building;
    if (building === undefined) return;
    // Awaited, a build keeps the process alive; its thread alone never does.
    const alive = setInterval(() => undefined, 2 ** 30);
    try {
      await building.done;
    } finally {
      clearInterval(alive);
    }
  }

  /** Stops a graph being built on a thread and lets the graph go: the rows are no longer in use (their retriever closed or replaced them), and searches scan from now on. */
  dispose(): void {
    this.#dropIndex(null);
  }

  get size(): number {
    return this.ids.length;
  }

  /** Whether `id` has a row. */
  has(id: string): boolean {
    return this.#rows.has(id);
  }

  /** How many rows the index has taken in (0 without one). */
  get indexed(): number {
    return this.#index ? this.size - this.#unindexed.size : 0;
  }

  /** How many of those are scored at every search, as the graph may not reach them. */
  get outliers(): number {
    return this.#outliers.size;
  }

  /** `id`'s row: its vector and metadata set, replacing what it held; its row number. */
  set(id: string, vector: Float32Array, metadata: StoredMetadata | undefined): number {
    const { dimensions } = this;
    let row = this.#rows.get(id);
    if (row === undefined) {
      row = this.ids.length;
      if ((row + 1) * dimensions > this.#matrix.length) {
        const grown = new Float32Array(this.#matrix.length * 2);
        grown.set(this.#matrix);
        this.#matrix = grown;
      }
      this.ids.push(id);
      this.metadata.push(metadata);
      this.#rows.set(id, row);
    } else {
      this.metadata[row] = metadata;
      if (sameVector(this.#matrix, row * dimensions, vector)) return row;
      this.#building?.changed.add(row);
      if (this.#index && !this.#unindexed.has(row) && !this.#zeros.has(row)) this.#removeFromIndex(this.#index, row);
      this.#outliers.delete(row);
      this.#zeros.delete(row);
    }
    this.#matrix.set(vector, row * dimensions);
    if (this.#index) this.#unindexed.add(row);
    return row;
  }

  /**
   * The best rows for `asked`: through the index when there is one and it can help, else by a
   * scan. The index's candidates (and the rows it may not reach) are scored exactly; their answer
   * stands when it could not be beaten outside them: its worst kept score (or `minRelevance`, if
   * fewer than `topK` were kept) is at least the lowest candidate's. Otherwise (a filter most
   * candidates fail, say) the index is asked again for eight times as many, then the rows are
   * scanned: a filter never leaves the answer short.
   */
  search(asked: Float32Array, search: RowSearch): TopK<number> {
    // A zero query scores every row 0 (the best are then the smallest ids), which a graph cannot find.
    const index = isZero(asked) ? undefined : this.#readyIndex();
    if (index !== undefined && (this.#outliers.size + this.#unindexed.size) * 4 <= this.size) {
      for (let candidates = Math.max(MIN_CANDIDATES, 4 * search.topK), asks = 0; asks < 2 && candidates * 4 <= this.size; asks += 1, candidates *= 8) {
        const found = this.#nearest(index, asked, candidates);
        if (found === undefined) break;
        const best = new TopK<number>(search.topK);
        const offer = (row: number, score: number) => {
          if (search.filter !== undefined && !matchesFilter(this.metadata[row], search.filter)) return;
          if (score >= search.minRelevance && best.admits(score)) best.offer(score, this.ids[row] as string, row);
        };
        // What a row must score to get in: the worst kept once `topK` are, else `minRelevance`.
        const bar = () => (best.full ? best.worstScore : search.minRelevance);
        let lowest = Number.POSITIVE_INFINITY;
        // Scored four at a time (see dotFour); the bar a candidate is held to may be a batch old, which only scores more.
        const waiting: number[] = [];
        const scoreWaiting = () => {
          const scores = this.#scoreEach(asked, waiting);
          for (const [at, row] of waiting.entries()) {
            lowest = Math.min(lowest, scores[at] as number);
            offer(row, scores[at] as number);
          }
          waiting.length = 0;
        };
        for (const [at, row] of found.rows.entries()) {
          if (this.#outliers.has(row)) continue;
          // A candidate the graph scores too low to get in (even with its error) is not read: it is known below the bar.
          if ((found.scores[at] as number) + GRAPH_SCORE_ERROR < bar()) {
            lowest = Number.NEGATIVE_INFINITY;
            continue;
          }
          if (waiting.push(row) === 4) scoreWaiting();
        }
        scoreWaiting();
        for (const row of this.#outliers) offer(row, this.#score(asked, row));
        for (const row of this.#unindexed) offer(row, this.#score(asked, row));
        if (best.admits(0)) for (const row of this.#zeros) offer(row, 0);
        if (lowest <= bar()) return best;
      }
    }
    const best = new TopK<number>(search.topK);
    this.scan(asked, search.filter, search.minRelevance, best);
    return best;
  }

  /** Offers every row whose metadata matches `filter` and whose cosine with `asked` is at least `minRelevance` to `best`, keyed by id, with its row number. */
  scan(asked: Float32Array, filter: MetadataFilter | undefined, minRelevance: number, best: TopK<number>): void {
    const { dimensions, ids, metadata } = this;
    const matrix = this.#matrix;
    for (let row = 0, offset = 0; row < ids.length; row += 1, offset += dimensions) {
      if (filter !== undefined && !matchesFilter(metadata[row], filter)) continue;
      const score = clampCosine(dotAt(asked, matrix, offset, dimensions));
      if (score >= minRelevance && best.admits(score)) best.offer(score, ids[row] as string, row);
    }
  }

  #score(asked: Float32Array, row: number): number {
    return clampCosine(dotAt(asked, this.#matrix, row * this.dimensions, this.dimensions));
  }

  /** The scores of up to four `rows`, as {@link #score} gives each. */
  #scoreEach(asked: Float32Array, rows: readonly number[]): Float64Array {
    const { dimensions } = this;
    const scores = this.#four;
    if (rows.length === 4) {
      dotFour(asked, this.#matrix, [(rows[0] as number) * dimensions, (rows[1] as number) * dimensions, (rows[2] as number) * dimensions, (rows[3] as number) * dimensions], dimensions, scores);
      for (let at = 0; at < 4; at += 1) scores[at] = clampCosine(scores[at] as number);
    } else for (const [at, row] of rows.entries()) scores[at] = this.#score(asked, row);
    return scores;
  }

  /** The graph's candidates for `asked`, with its scores for them; undefined (and no index from then on) if it failed. */
  #nearest(index: VectorIndex, asked: Float32Array, count: number): ReturnType<VectorIndex["nearest"]> | undefined {
    try {
      return index.nearest(asked, count);
    } catch {
      this.#dropIndex(null);
      return undefined;
    }
  }

  #removeFromIndex(index: VectorIndex, row: number): void {
    try {
      index.remove(row);
    } catch {
      this.#dropIndex(null);
      return;
    }
    // A graph that lost many of its nodes leads less well to the rest: built again from the rows.
    this.#removed += 1;
    if (this.#removed * 2 > this.size) this.#dropIndex(undefined);
  }

  /** Forgets the index: `undefined` builds it again at the next search; `null` scans from now on (it failed: out of memory, say). */
  #dropIndex(then: null | undefined): void {
    this.#building?.build.end();
    this.#building = undefined;
    this.#index = then;
    this.#unindexed.clear();
    this.#outliers.clear();
    this.#zeros.clear();
    this.#removed = 0;
    this.#judgedEarly = false;
  }

  /**
   * The index, once the rows are many enough, having taken in up to {@link INTAKE_ROWS} of the
   * rows it lacks (a search holds the thread that long at most; the rest wait for later searches
   * and are scored exactly meanwhile); undefined when a search should scan.
   */
  #readyIndex(): VectorIndex | undefined {
    if (this.#scanOnly || this.size <= INDEX_MIN_ROWS || this.#index === null) return undefined;
    // Until the thread's graph is in, searches scan.
    if (this.#building !== undefined || (this.#index === undefined && this.size >= THREAD_BUILD_MIN_ROWS && this.#startBuild())) return undefined;
    if (this.#index === undefined) {
      this.#index = newVectorIndex(this.dimensions) ?? null;
      if (this.#index === null) return undefined;
      for (let row = 0; row < this.size; row += 1) this.#unindexed.add(row);
    }
    if (this.#unindexed.size > 0) {
      const batch: number[] = [];
      for (const row of this.#unindexed) {
        if (batch.length >= INTAKE_ROWS) break;
        batch.push(row);
      }
      const partial = batch.length < this.#unindexed.size;
      try {
        this.#takeIn(this.#index, batch);
        for (const row of batch) this.#unindexed.delete(row);
        // Rows taken in early were judged against part of the graph: judged again against all of it.
        if (partial) this.#judgedEarly = true;
        else if (this.#judgedEarly) {
          this.#judgedEarly = false;
          this.#judgeAgain(this.#index);
        }
      } catch {
        // A graph half built (usearch ran out of memory, say) cannot be trusted or finished: scan.
        this.#dropIndex(null);
        return undefined;
      }
    }
    return this.#index;
  }

  /** Asks for the graph of every row to be built on a thread; false when it is built here instead (threads are off, or one failed). */
  #startBuild(): boolean {
    if (!this.#buildOnThread) return false;
    const build = new IndexBuild(this.dimensions, () => ({ vectors: this.#matrix.slice(0, this.size * this.dimensions), count: this.size }));
    const building: Building = {
      build,
      changed: new Set<number>(),
      done: build.built.then(
        (built) => this.#install(building, built),
        () => {
          // A thread that could not build it (out of memory, no file to hand it over): the searches build it, as for fewer rows.
          if (this.#building !== building) return;
          this.#building = undefined;
          this.#buildOnThread = false;
        },
      ),
    };
    this.#building = building;
    return true;
  }

  /** Takes in the graph a thread built, unless it was stopped meanwhile: the rows set again or added since wait to be taken in as any other. */
  #install(building: Building, built: BuiltIndex & { readonly count: number }): void {
    if (this.#building !== building) return;
    this.#building = undefined;
    this.#dropIndex(undefined);
    this.#index = built.index;
    for (const row of built.outliers) this.#outliers.add(row);
    for (const row of built.zeros) this.#zeros.add(row);
    for (let row = built.count; row < this.size; row += 1) this.#unindexed.add(row);
    for (const row of building.changed) {
      if (this.#index !== built.index) return;
      if (row >= built.count) continue;
      this.#outliers.delete(row);
      if (!this.#zeros.delete(row)) this.#removeFromIndex(built.index, row);
      this.#unindexed.add(row);
    }
  }

  /** Adds `unindexed` to the graph (an all-zero row to `#zeros` instead), then marks those it may not lead to as outliers. */
  #takeIn(index: VectorIndex, unindexed: readonly number[]): void {
    const rows: number[] = [];
    for (const row of unindexed) {
      if (isZero(this.#vector(row))) this.#zeros.add(row);
      else rows.push(row);
    }
    const vectors = this.#vectorsOf(rows);
    index.add(rows, vectors);
    this.#judge(index, rows, vectors);
  }

  /** The outliers judged again, now that the graph holds every row: those it leads to are outliers no more. */
  #judgeAgain(index: VectorIndex): void {
    const rows = [...this.#outliers];
    for (const row of rows) this.#outliers.delete(row);
    this.#judge(index, rows, this.#vectorsOf(rows));
  }

  /** Marks as outliers the `rows` (in the graph, their vectors one after another in `vectors`) it may not lead to ({@link judgeOutliers}). */
  #judge(index: VectorIndex, rows: readonly number[], vectors: Float32Array): void {
    const judging = new Set(rows);
    const known = (row: number) => (judging.has(row) || this.#unindexed.has(row) || this.#zeros.has(row) ? undefined : this.#outliers.has(row));
    for (const row of judgeOutliers(index, rows, vectors, this.#matrix, this.dimensions, known)) this.#outliers.add(row);
  }

  #vector(row: number): Float32Array {
    return this.#matrix.subarray(row * this.dimensions, (row + 1) * this.dimensions);
  }

  /** The vectors of `rows`, one after another. */
  #vectorsOf(rows: readonly number[]): Float32Array {
    return rowsOf(this.#matrix, this.dimensions, rows);
  }
}

/** A graph being built on its own thread (or waiting to be): the rows set again since it was asked for, and when it is over (taken in or not). */
interface Building {
  readonly build: IndexBuild;
  readonly changed: Set<number>;
  readonly done: Promise<void>;
}

function sameVector(matrix: Float32Array, offset: number, vector: Float32Array): boolean {
  for (let index = 0; index < vector.length; index += 1) if (matrix[offset + index] !== vector[index]) return false;
  return true;
}

/** The results a search of `rows` found (`best`, by row), each with its passage's text from `contents` (by row) and its metadata, frozen. */
export function resultsOf(best: TopK<number>, rows: VectorRows, contents: readonly string[]): readonly KnowledgeResult[] {
  return Object.freeze(best.best().map(({ score, key, item: row }) => result(contents[row] as string, score, key, rows.metadata[row])));
}

/** The best `k` of the scores offered, kept in a small heap (the worst of them on top); ties go to the smaller key. */
export class TopK<T> {
  readonly #k: number;
  readonly #heap: { readonly score: number; readonly key: string; readonly item: T }[] = [];

  constructor(k: number) {
    this.#k = k;
  }

  /** Offers an item; it stays if it is among the best `k` so far. */
  offer(score: number, key: string, item: T): void {
    const heap = this.#heap;
    const entry = { score, key, item };
    if (heap.length < this.#k) {
      heap.push(entry);
      this.#up(heap.length - 1);
    } else if (worse(heap[0] as typeof entry, entry)) {
      heap[0] = entry;
      this.#down(0);
    }
  }

  /** Whether `k` are kept. */
  get full(): boolean {
    return this.#heap.length >= this.#k;
  }

  /** The worst kept score (-Infinity while none is). */
  get worstScore(): number {
    return this.#heap.length === 0 ? Number.NEGATIVE_INFINITY : (this.#heap[0] as { score: number }).score;
  }

  /** Whether `score` could still get in: fewer than `k` kept, or better than the worst kept. */
  admits(score: number): boolean {
    return this.#heap.length < this.#k || score >= (this.#heap[0] as { score: number }).score;
  }

  /** What was kept, best first. */
  best(): { readonly score: number; readonly key: string; readonly item: T }[] {
    return [...this.#heap].sort((a, b) => (worse(a, b) ? 1 : worse(b, a) ? -1 : 0));
  }

  #up(index: number): void {
    const heap = this.#heap;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!worse(heap[index] as (typeof heap)[number], heap[parent] as (typeof heap)[number])) return;
      [heap[index], heap[parent]] = [heap[parent] as (typeof heap)[number], heap[index] as (typeof heap)[number]];
      index = parent;
    }
  }

  #down(index: number): void {
    const heap = this.#heap;
    for (;;) {
      let worst = index;
      for (const child of [2 * index + 1, 2 * index + 2]) {
        if (child < heap.length && worse(heap[child] as (typeof heap)[number], heap[worst] as (typeof heap)[number])) worst = child;
      }
      if (worst === index) return;
      [heap[index], heap[worst]] = [heap[worst] as (typeof heap)[number], heap[index] as (typeof heap)[number]];
      index = worst;
    }
  }
}

/** Whether `a` ranks below `b`: a lower score, or the same score and a larger key. */
function worse(a: { score: number; key: string }, b: { score: number; key: string }): boolean {
  return a.score < b.score || (a.score === b.score && a.key > b.key);
}
