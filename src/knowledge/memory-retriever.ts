/**
 * A retriever in the process's memory: passages and their vectors in one matrix, searched
 * by cosine similarity. For tests, demos and small collections; it holds nothing across runs.
 */
import { checkOptionNames } from "../shared/index.ts";
import type { Embedder, KnowledgeResult, Passage, PassageRetriever, SearchOptions } from "./types.ts";
import { INDEX_BUILT, resultsOf, VectorRows } from "./vector-rows.ts";
import { checkEmbedder, checkIndexOption, checkPassages, checkSearch, embedNormalised } from "./vectors.ts";

/** Options of {@link memoryRetriever}. */
export interface MemoryRetrieverOptions {
  /** Turns passages and queries into vectors. */
  readonly embedder: Embedder;
  /**
   * How a search finds the best passages. "exact" (the default): every search scores every
   * passage the filter keeps, always the true best `topK` (3 ms at 10,000 passages of 384
   * dimensions). "hnsw": past 2,048 passages an HNSW index (the optional dependency `usearch`,
   * kept in the process) proposes candidates and each is scored exactly; about 50 times faster
   * at 10,000, but the set found is approximate: it may miss a passage a scan would find,
   * mostly for queries far from every passage (see docs/performance.md).
   */
  readonly index?: "exact" | "hnsw" | undefined;
}

const CALLER = "memoryRetriever()";

/**
 * A {@link PassageRetriever} in memory. A search embeds the query, keeps the passages whose
 * metadata matches the filter (before `topK`, so a filter never leaves the answer short), and
 * returns the best `topK` scoring at least `minRelevance`, best first; the score is the cosine
 * similarity (-1 to 1), and `sourceId` the passage's id. With `index: "hnsw"`, an index finds
 * the candidates past 2,048 passages.
 *
 * @example
 * const docs = memoryRetriever({ embedder: lexicalEmbedder() });
 * await docs.add([{ id: "refunds.md#2", content: "Refunds take 5 days.", metadata: { product: "billing" } }]);
 * const found = await docs.search("how long do refunds take", { topK: 3, minRelevance: 0.2, signal });
 */
export function memoryRetriever(options: MemoryRetrieverOptions): PassageRetriever {
  const given = checkOptionNames<MemoryRetrieverOptions>(options, ["embedder", "index"], CALLER);
  const embedder = checkEmbedder(given.embedder, CALLER);
  const index = checkIndexOption(given.index, CALLER);
  // Vectors of length 1 (or all zeros), so a dot product is the cosine; each row's content beside it.
  const rows = new VectorRows(embedder.dimensions, 64, { index });
  const contents: string[] = [];

  return Object.freeze({
    embedder,

    async add(passages: readonly Passage[], addOptions: { readonly signal?: AbortSignal | undefined } = {}): Promise<void> {
      const checked = checkPassages(passages, CALLER);
      if (checked.length === 0) return;
      const vectors = await embedNormalised(embedder, checked.map((passage) => passage.content), addOptions?.signal);
      // All or nothing: the map changes only once every vector is in hand.
      for (const [index, passage] of checked.entries()) contents[rows.set(passage.id, vectors[index] as Float32Array, passage.metadata)] = passage.content;
    },

    async search(query: string, searchOptions: SearchOptions): Promise<readonly KnowledgeResult[]> {
      const { topK, minRelevance, filter, signal } = checkSearch(query, searchOptions, CALLER);
      const [asked] = (await embedNormalised(embedder, [query], signal)) as [Float32Array];
      const best = rows.search(asked, { topK, minRelevance, filter });
      return resultsOf(best, rows, contents);
    },

    async count(): Promise<number> {
      return rows.size;
    },

    async close(): Promise<void> {
      rows.dispose();
    },

    [INDEX_BUILT]: () => rows.indexBuilt(),
  });
}
