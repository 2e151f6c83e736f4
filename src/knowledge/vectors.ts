/**
 * What improv's retrievers share: the embedder checked, its vectors checked and normalised, the
 * passages and search options checked, and metadata filters.
 */
import { types } from "node:util";
import { describeType, isPlainJson } from "../shared/index.ts";
import type { Embedder, KnowledgeResult, MetadataFilter, Passage, SearchOptions } from "./types.ts";
import { vectorIndexAvailable } from "./vector-index.ts";

/** Metadata as a retriever keeps it: a frozen copy of the passage's. */
export type StoredMetadata = Readonly<Record<string, string | number | boolean | null>>;

/** A passage checked: its metadata copied and frozen. */
export interface CheckedPassage {
  readonly id: string;
  readonly content: string;
  readonly metadata: StoredMetadata | undefined;
}

/** A search's options checked, with defaults: 5 results, no minimum, no filter. */
export interface CheckedSearch {
  readonly topK: number;
  readonly minRelevance: number;
  readonly filter: MetadataFilter | undefined;
  readonly signal: AbortSignal | undefined;
}

/** `value` as an embedder, or a `TypeError` naming `caller` (`"memoryRetriever()"`) and what an embedder is. */
export function checkEmbedder(value: unknown, caller: string): Embedder {
  const shape = "an embedder: { model, dimensions, embed(texts) }, such as lexicalEmbedder() or openaiEmbedder()";
  if (value === undefined) throw new TypeError(`${caller} needs { embedder }: ${shape}.`);
  if (typeof value !== "object" || value === null) throw new TypeError(`${caller} option "embedder" must be ${shape}; got ${describeType(value)}.`);
  const { model, dimensions, embed } = value as Partial<Embedder>;
  if (typeof model !== "string" || model.trim() === "") throw new TypeError(`${caller} option "embedder" must be ${shape}; its model is ${describeType(model)}, not a non-empty string.`);
  if (!Number.isSafeInteger(dimensions) || (dimensions as number) < 1) throw new TypeError(`${caller} option "embedder" must be ${shape}; its dimensions are ${describeType(dimensions)}, not a whole number of 1 or more.`);
  if (typeof embed !== "function") throw new TypeError(`${caller} option "embedder" must be ${shape}; its embed is ${describeType(embed)}, not a function.`);
  return value as Embedder;
}

/**
 * The in-process retrievers' `index` option checked: "exact" (the default: every search scores
 * every passage) or "hnsw" (an index past 2,048 passages), which needs usearch to load:
 * otherwise a `TypeError` saying how.
 */
export function checkIndexOption(value: unknown, caller: string): "exact" | "hnsw" {
  if (value === undefined) return "exact";
  if (value !== "exact" && value !== "hnsw") throw new TypeError(`${caller} option "index" must be "exact" (every search scores every passage) or "hnsw" (an approximate index past 2,048 passages); got ${describeType(value)}.`);
  if (value === "hnsw" && !vectorIndexAvailable()) {
    throw new TypeError(`${caller} option index: "hnsw" needs the optional dependency "usearch", which does not load in this process. Install it (npm install usearch), or give index: "exact".`);
  }
  return value;
}

/**
 * What an embedder returned for `count` texts, checked: one vector per text, each of the
 * embedder's `dimensions` finite numbers. Otherwise a `TypeError` naming the embedder's model
 * and what was wrong.
 */
export function checkVectors(vectors: unknown, count: number, model: string, dimensions: number): readonly ArrayLike<number>[] {
  const problem = vectorsProblem(vectors, count, dimensions);
  if (problem === undefined) return vectors as ArrayLike<number>[];
  const hint = problem.length === undefined ? "" : " Give the embedder the length of the model's vectors as its dimensions.";
  throw new TypeError(`The embedder "${model}" ${problem.message}${hint}`);
}

/** What is wrong with vectors: said as the words after "The embedder …", with the length found when a vector's length is what is wrong. */
export interface VectorsProblem {
  readonly message: string;
  readonly length?: number;
}

/** What is wrong with `vectors` as the embedding of `count` texts of `dimensions` numbers each, or undefined when nothing is. */
export function vectorsProblem(vectors: unknown, count: number, dimensions: number): VectorsProblem | undefined {
  const problem = (message: string, length?: number): VectorsProblem => (length === undefined ? { message } : { message, length });
  if (!Array.isArray(vectors)) return problem(`returned ${describeType(vectors)}, not an array of vectors (one number[] per text).`);
  if (vectors.length !== count) return problem(`returned ${vectors.length} vector${vectors.length === 1 ? "" : "s"} for ${count} text${count === 1 ? "" : "s"}; an embedder returns one vector per text, in order.`);
  for (let index = 0; index < count; index += 1) {
    const vector: unknown = vectors[index];
    if (!Array.isArray(vector) && !(vector instanceof Float32Array) && !(vector instanceof Float64Array)) return problem(`returned ${describeType(vector)} for text ${index}, not an array of numbers.`);
    if (vector.length !== dimensions) return problem(`returned a vector of ${vector.length} numbers for text ${index}, not ${dimensions}.`, vector.length);
    for (let at = 0; at < dimensions; at += 1) {
      const number: unknown = vector[at];
      if (typeof number !== "number" || !Number.isFinite(number)) return problem(`returned a vector for text ${index} whose number ${at} is ${typeof number === "number" ? String(number) : describeType(number)}, not a finite number.`);
    }
  }
  return undefined;
}

/** Embeds `texts` with `embedder`, within `signal`: the vectors checked ({@link checkVectors}) and scaled to length 1 (all zeros stays all zeros). */
export async function embedNormalised(embedder: Embedder, texts: readonly string[], signal: AbortSignal | undefined): Promise<Float32Array[]> {
  signal?.throwIfAborted();
  const vectors = await embedder.embed(texts, { signal });
  signal?.throwIfAborted();
  return checkVectors(vectors, texts.length, embedder.model, embedder.dimensions).map((vector) => normalised(Float32Array.from(vector)));
}

/** `vector` scaled in place to length 1; all zeros stays all zeros (it then scores 0 against anything). */
export function normalised(vector: Float32Array): Float32Array {
  let sum = 0;
  for (let index = 0; index < vector.length; index += 1) sum += (vector[index] as number) * (vector[index] as number);
  if (sum === 0) return vector;
  const scale = 1 / Math.sqrt(sum);
  for (let index = 0; index < vector.length; index += 1) vector[index] = (vector[index] as number) * scale;
  return vector;
}

/** The cosine similarity of two vectors of length 1 (or 0): their dot product, kept within -1 to 1. */
export function cosine(a: Float32Array, b: Float32Array): number {
  return clampCosine(dotAt(a, b, 0, a.length));
}

/** Whether every number of `vector` is 0 (an empty passage's vector: it scores 0 against anything). */
export function isZero(vector: Float32Array): boolean {
  for (let index = 0; index < vector.length; index += 1) if (vector[index] !== 0) return false;
  return true;
}

/** The vectors of `rows` (row numbers into `matrix`, `dimensions` numbers each), one after another. */
export function rowsOf(matrix: Float32Array, dimensions: number, rows: readonly number[]): Float32Array {
  const vectors = new Float32Array(rows.length * dimensions);
  rows.forEach((row, at) => vectors.set(matrix.subarray(row * dimensions, (row + 1) * dimensions), at * dimensions));
  return vectors;
}

/** A dot product of unit vectors kept within -1 to 1 (rounding can take it past). */
export function clampCosine(sum: number): number {
  return sum > 1 ? 1 : sum < -1 ? -1 : sum;
}

/**
 * The dot product of `asked` with the `dimensions` numbers of `matrix` from `offset`, four sums
 * at once: the engine does not vectorise, and one sum makes each step wait for the last (a
 * quarter of a scan's time at 384 dimensions, measured).
 */
export function dotAt(asked: Float32Array, matrix: Float32Array, offset: number, dimensions: number): number {
  const whole = dimensions - (dimensions % 4);
  let sum0 = 0;
  let sum1 = 0;
  let sum2 = 0;
  let sum3 = 0;
  for (let index = 0; index < whole; index += 4) {
    sum0 += (asked[index] as number) * (matrix[offset + index] as number);
    sum1 += (asked[index + 1] as number) * (matrix[offset + index + 1] as number);
    sum2 += (asked[index + 2] as number) * (matrix[offset + index + 2] as number);
    sum3 += (asked[index + 3] as number) * (matrix[offset + index + 3] as number);
  }
  // A loop of its own: one index carried over from the loop above slows that loop down.
  for (let index = whole; index < dimensions; index += 1) sum0 += (asked[index] as number) * (matrix[offset + index] as number);
  return sum0 + sum1 + sum2 + sum3;
}

/**
 * {@link dotAt} for four rows at once (at `offsets`), into `into`, each sum made exactly as
 * `dotAt` makes it. Rows scattered over a large matrix are read side by side instead of one
 * after another, each waiting on memory: half the time for rows not in the caches.
 */
export function dotFour(asked: Float32Array, matrix: Float32Array, offsets: readonly [number, number, number, number], dimensions: number, into: Float64Array): void {
  const [a, b, c, d] = offsets;
  const whole = dimensions - (dimensions % 4);
  let a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0, c0 = 0, c1 = 0, c2 = 0, c3 = 0, d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  for (let index = 0; index < whole; index += 4) {
    const x0 = asked[index] as number;
    const x1 = asked[index + 1] as number;
    const x2 = asked[index + 2] as number;
    const x3 = asked[index + 3] as number;
    a0 += x0 * (matrix[a + index] as number);
    a1 += x1 * (matrix[a + index + 1] as number);
    a2 += x2 * (matrix[a + index + 2] as number);
    a3 += x3 * (matrix[a + index + 3] as number);
    b0 += x0 * (matrix[b + index] as number);
    b1 += x1 * (matrix[b + index + 1] as number);
    b2 += x2 * (matrix[b + index + 2] as number);
    b3 += x3 * (matrix[b + index + 3] as number);
    c0 += x0 * (matrix[c + index] as number);
    c1 += x1 * (matrix[c + index + 1] as number);
    c2 += x2 * (matrix[c + index + 2] as number);
    c3 += x3 * (matrix[c + index + 3] as number);
    d0 += x0 * (matrix[d + index] as number);
    d1 += x1 * (matrix[d + index + 1] as number);
    d2 += x2 * (matrix[d + index + 2] as number);
    d3 += x3 * (matrix[d + index + 3] as number);
  }
  for (let index = whole; index < dimensions; index += 1) {
    const x = asked[index] as number;
    a0 += x * (matrix[a + index] as number);
    b0 += x * (matrix[b + index] as number);
    c0 += x * (matrix[c + index] as number);
    d0 += x * (matrix[d + index] as number);
  }
  into[0] = a0 + a1 + a2 + a3;
  into[1] = b0 + b1 + b2 + b3;
  into[2] = c0 + c1 + c2 + c3;
  into[3] = d0 + d1 + d2 + d3;
}

/** `passages` checked, each a fresh record with its metadata copied and frozen; a `TypeError` naming `caller`, the passage and what is wrong. */
export function checkPassages(passages: unknown, caller: string): CheckedPassage[] {
  if (!Array.isArray(passages)) throw new TypeError(`${caller}.add(passages) takes an array of { id, content, metadata? }; got ${describeType(passages)}.`);
  return passages.map((passage: unknown, index): CheckedPassage => {
    const where = `${caller}.add(passages): passage ${index}`;
    if (typeof passage !== "object" || passage === null || Array.isArray(passage)) throw new TypeError(`${where} must be { id, content, metadata? }; got ${describeType(passage)}.`);
    const { id, content, metadata } = passage as Partial<Passage>;
    if (typeof id !== "string" || id === "") throw new TypeError(`${where} needs an id: a non-empty string (such as "refunds.md#2"); got ${describeType(id)}.`);
    if (typeof content !== "string") throw new TypeError(`${where} ("${id}") needs content: a string; got ${describeType(content)}.`);
    return { id, content, metadata: metadata === undefined ? undefined : checkMetadata(metadata, `${where} ("${id}")`) };
  });
}

function checkMetadata(metadata: unknown, where: string): StoredMetadata {
  if (!isPlainObject(metadata)) throw new TypeError(`${where} has metadata that is ${describeType(metadata)}; metadata is a plain object of strings, numbers, booleans and nulls.`);
  const copy: Record<string, string | number | boolean | null> = {};
  for (const [key, value] of Object.entries(metadata)) {
    if (!isPrimitive(value)) {
      throw new TypeError(`${where} has metadata "${key}" that is ${describeType(value)}; metadata values are strings, finite numbers, booleans or null.`);
    }
    copy[key] = value;
  }
  return Object.freeze(copy);
}

/** A search's `query` and options checked: a `TypeError` / `RangeError` naming `caller` and the option. */
export function checkSearch(query: unknown, options: unknown, caller: string): CheckedSearch {
  if (typeof query !== "string") throw new TypeError(`${caller}.search(query, options) takes the query as a string; got ${describeType(query)}.`);
  if (options !== undefined && (typeof options !== "object" || options === null)) throw new TypeError(`${caller}.search(query, options): options must be { topK, minRelevance, filter?, signal }; got ${describeType(options)}.`);
  const { topK = 5, minRelevance = Number.NEGATIVE_INFINITY, filter, signal } = (options ?? {}) as Partial<SearchOptions>;
  if (!Number.isSafeInteger(topK) || topK < 1) throw new RangeError(`${caller}.search() option "topK" must be a whole number of 1 or more; got ${describeType(topK)}.`);
  if (typeof minRelevance !== "number" || Number.isNaN(minRelevance)) throw new TypeError(`${caller}.search() option "minRelevance" must be a number (a cosine similarity, -1 to 1); got ${describeType(minRelevance)}.`);
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError(`${caller}.search() option "signal" must be an AbortSignal; got ${describeType(signal)}.`);
  return { topK, minRelevance, filter: filter === undefined ? undefined : checkFilter(filter, caller), signal };
}

function checkFilter(filter: unknown, caller: string): MetadataFilter {
  const shape = 'an object of metadata values, each a string, number, boolean, null or an array of them (one of), such as { product: "billing", year: [2024, 2025] }';
  if (!isPlainObject(filter)) throw new TypeError(`${caller}.search() option "filter" must be ${shape}; got ${describeType(filter)}.`);
  for (const [key, value] of Object.entries(filter)) {
    const values: unknown[] = Array.isArray(value) ? value : [value];
    for (const one of values) {
      if (!isPrimitive(one)) throw new TypeError(`${caller}.search() option "filter" has "${key}" matching ${describeType(one)}; it must be ${shape}.`);
    }
  }
  return filter as MetadataFilter;
}

/** Whether `metadata` matches `filter`: every key present with an equal value (of the same type), or one of an array's. */
export function matchesFilter(metadata: StoredMetadata | undefined, filter: MetadataFilter | undefined): boolean {
  if (filter === undefined) return true;
  for (const [key, wanted] of Object.entries(filter)) {
    if (metadata === undefined || !Object.hasOwn(metadata, key)) return false;
    const value = metadata[key];
    if (Array.isArray(wanted) ? !wanted.includes(value) : wanted !== value) return false;
  }
  return true;
}

/** Results made by improv's own retrievers ({@link result}): frozen, their content a string and their score a number. */
const ownResults = new WeakSet<object>();

/** A search result, frozen. */
export function result(content: string, score: number, sourceId: string, metadata: StoredMetadata | undefined): KnowledgeResult {
  const made = Object.freeze(metadata === undefined ? { content, score, sourceId } : { content, score, sourceId, metadata });
  ownResults.add(made);
  return made;
}

/**
 * The metadata of a result one of improv's retrievers made, as it is, when a JSON-safe copy of at
 * most `maxChars` characters (`toJsonSafe`) would be the same: a frozen plain object (no Proxy,
 * no getters) of strings, finite numbers, booleans and nulls, its keys at most 200 characters,
 * all of it within `maxChars` as that copy counts them. Undefined otherwise: then it is copied
 * as untrusted data (the pgvector retriever's metadata is what the application's `pg` made of it).
 */
export function ownFlatMetadata(item: object, maxChars: number): StoredMetadata | undefined {
  if (!ownResults.has(item)) return undefined;
  const { metadata } = item as KnowledgeResult;
  // Frozen and not a Proxy: what is checked now is what is read later. Plain JSON of that size has no getters; flat, it has nothing unfrozen inside.
  if (typeof metadata !== "object" || metadata === null || types.isProxy(metadata) || !Object.isFrozen(metadata) || !isPlainJson(metadata, maxChars)) return undefined;
  return Object.values(metadata).every(isPrimitive) ? (metadata as StoredMetadata) : undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function isPrimitive(value: unknown): value is string | number | boolean | null {
  return value === null || typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value));
}
