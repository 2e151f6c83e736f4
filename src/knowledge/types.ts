/**
 * What knowledge is made of: retrievers that search the application's documents,
 * the embedders that turn text into vectors for them, and the passages they hold and return.
 */

/** A passage a retriever found for a query, best first. */
export interface KnowledgeResult {
  readonly content: string;
  /** How relevant the passage is to the query: higher is better (cosine similarity for improv's retrievers, -1 to 1). */
  readonly score: number;
  /** The passage's id in its retriever (what `add` was given). */
  readonly sourceId: string;
  readonly metadata?: Readonly<Record<string, unknown>> | undefined;
}

/**
 * Which passages a search keeps by their metadata: every key must match, a value by equality
 * (strings, numbers, booleans, null), an array by being one of its values.
 */
export type MetadataFilter = Readonly<Record<string, string | number | boolean | null | readonly (string | number | boolean | null)[]>>;

/** What a search is asked. */
export interface SearchOptions {
  /** At most this many results. */
  readonly topK: number;
  /** Only results scoring at least this. */
  readonly minRelevance: number;
  /** Only passages whose metadata matches; applied inside the search, before `topK`. */
  readonly filter?: MetadataFilter | undefined;
  /** Aborts when the call no longer needs the answer (cancelled, or out of time). */
  readonly signal: AbortSignal;
}

/** Anything that finds passages for a query: improv's retrievers, or the application's own. */
export interface Retriever {
  search(query: string, options: SearchOptions): Promise<readonly KnowledgeResult[]>;
}

/** A passage to add to a retriever; an id added again replaces its passage. */
export interface Passage {
  readonly id: string;
  readonly content: string;
  readonly metadata?: Readonly<Record<string, string | number | boolean | null>> | undefined;
}

/** Turns texts into vectors: one `number[]` of `dimensions` numbers per text, in order. */
export interface Embedder {
  /** The embedding model: a stored retriever records it, and refuses another's vectors. */
  readonly model: string;
  readonly dimensions: number;
  embed(texts: readonly string[], options?: { readonly signal?: AbortSignal | undefined }): Promise<number[][]>;
}

/** A retriever that holds passages, made with an embedder. */
export interface PassageRetriever extends Retriever {
  readonly embedder: Embedder;
  /** Adds passages (embedding them), replacing those whose id is already there. */
  add(passages: readonly Passage[], options?: { readonly signal?: AbortSignal | undefined }): Promise<void>;
  /** How many passages it holds. */
  count(): Promise<number>;
  /** Releases what it holds open (a database connection, an index being built on a thread); a memory retriever searched after it scans every passage. */
  close(): Promise<void>;
}
