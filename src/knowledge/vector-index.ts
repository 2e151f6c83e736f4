/**
 * The approximate nearest-neighbour index the in-process retrievers use past a few thousand
 * passages: an HNSW graph from `usearch` (an optional dependency, a native addon), its vectors
 * kept as int8. It only proposes candidates; the retriever scores them exactly from its own
 * Float32 rows. Without `usearch` (not installed, or no build for this platform) there is no
 * index and every search scans.
 */
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";

/** What improv uses of usearch's `Index`. */
interface UsearchIndex {
  add(keys: BigUint64Array, vectors: Float32Array, threads?: number): void;
  search(vector: Float32Array, k: number, threads: number): { readonly keys: BigUint64Array; readonly distances: Float32Array; get?(query: number): { readonly keys: BigUint64Array } };
  remove(keys: bigint): number;
  save(path: string): void;
  load(path: string): void;
}
type UsearchModule = { readonly Index: new (config: Record<string, unknown>) => UsearchIndex };

let loaded: UsearchModule | null | undefined;

/** usearch, loaded once per process; null when it cannot be (then every search scans). */
function usearch(): UsearchModule | null {
  if (loaded === undefined) {
    try {
      const module = createRequire(import.meta.url)("usearch") as Partial<UsearchModule>;
      loaded = typeof module.Index === "function" ? (module as UsearchModule) : null;
    } catch {
      loaded = null;
    }
  }
  return loaded;
}

/** Whether this process can build an index (usearch loads). */
export function vectorIndexAvailable(): boolean {
  return usearch() !== null;
}

/**
 * Graph settings, measured on 10,000 passages of 384 dimensions asking 40 candidates: 16 links
 * a node and 32 candidates followed found every exact top 5 of the knowledge benchmark's
 * lexical vectors, and 92% of them for dense vectors in 200 tight topics (where the top 50
 * nearly tie), in 18-35 µs; following 64 found 93% in 50 µs.
 */
const SETTINGS = { metric: "cos", quantization: "i8", connectivity: 16, expansion_add: 64, expansion_search: 32, multi: false } as const;
/**
 * How far the graph's cosine (int8 vectors) may be from the exact one: measured at most 0.022
 * over 40 candidates of 600 queries on lexical and dense 384-dimension vectors; twice that and
 * more, so a candidate the graph scores this far below what it needs is not scored exactly.
 */
export const GRAPH_SCORE_ERROR = 0.05;
/** Work on many rows at once (adding them, looking each up) uses this many threads; the caller waits either way. */
const BATCH_THREADS = Math.min(4, availableParallelism());

/** An HNSW index of rows (keyed by row number), or undefined when usearch is not available. `threads`: how many its work on many rows at once may use. */
export function newVectorIndex(dimensions: number, threads = BATCH_THREADS): VectorIndex | undefined {
  const module = usearch();
  return module === null ? undefined : new VectorIndex(new module.Index({ dimensions, ...SETTINGS }), threads);
}

/** The index saved at `path` (by {@link VectorIndex.save}, in this process or another); throws when it cannot be read. */
export function loadVectorIndex(dimensions: number, path: string): VectorIndex {
  const index = newVectorIndex(dimensions);
  if (index === undefined) throw new Error("usearch is not available");
  index.load(path);
  return index;
}

export class VectorIndex {
  readonly #index: UsearchIndex;
  readonly #threads: number;

  constructor(index: UsearchIndex, threads: number) {
    this.#index = index;
    this.#threads = threads;
  }

  /** Adds `rows`, whose vectors are `vectors` (one after another, in the same order). */
  add(rows: readonly number[], vectors: Float32Array): void {
    if (rows.length === 0) return;
    this.#index.add(BigUint64Array.from(rows, (row) => BigInt(row)), vectors, this.#threads);
  }

  save(path: string): void {
    this.#index.save(path);
  }

  load(path: string): void {
    this.#index.load(path);
  }

  remove(row: number): void {
    this.#index.remove(BigInt(row));
  }

  /** For each of `vectors` (one after another), up to `count` rows near it, nearest first as the graph sees them. */
  nearestEach(vectors: Float32Array, dimensions: number, count: number): number[][] {
    const queries = vectors.length / dimensions;
    if (queries === 0) return [];
    const found = this.#index.search(vectors, count, this.#threads);
    if (queries === 1) return [Array.from(found.keys, Number)];
    return Array.from({ length: queries }, (_, query) => Array.from((found.get as NonNullable<typeof found.get>).call(found, query).keys, Number));
  }

  /** Up to `count` rows near `asked` (a unit vector), nearest first as the graph sees them, with the cosine the graph computed for each (from int8 vectors: within {@link GRAPH_SCORE_ERROR} of the exact one). */
  nearest(asked: Float32Array, count: number): { readonly rows: number[]; readonly scores: Float32Array } {
    const found = this.#index.search(asked, count, 1);
    return { rows: Array.from(found.keys, Number), scores: found.distances.map((distance) => 1 - distance) };
  }
}
