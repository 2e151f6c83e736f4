/**
 * Embedders: a deterministic offline one that matches words, OpenAI's embeddings
 * endpoint through the `openai` SDK, and any AI SDK embedding model through `embedMany`.
 */
import { createRequire } from "node:module";
import type OpenAI from "openai";
import type * as Ai from "ai";
import { apiKeyFrom, checkOptionNames, describeType, loadOpenAI, readEnv } from "../shared/index.ts";
import type { Embedder } from "./types.ts";
import { checkVectors, vectorsProblem } from "./vectors.ts";

/** What embed() takes besides the texts. */
type EmbedOptions = { readonly signal?: AbortSignal | undefined };

const MAX_DIMENSIONS = 16_384;

function checkDimensions(value: unknown, owner: string): number {
  if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > MAX_DIMENSIONS) {
    throw new RangeError(`${owner} option "dimensions" must be a whole number from 1 to ${MAX_DIMENSIONS} (the length of the model's vectors); got ${describeType(value)}.`);
  }
  return value as number;
}

function checkTexts(texts: unknown, owner: string): readonly string[] {
  if (!Array.isArray(texts)) throw new TypeError(`${owner}.embed(texts) takes an array of strings; got ${describeType(texts)}.`);
  for (const [index, text] of texts.entries()) {
    if (typeof text !== "string") throw new TypeError(`${owner}.embed(texts): text ${index} is ${describeType(text)}, not a string.`);
  }
  return texts as readonly string[];
}

// ---------------------------------------------------------------------------------------------
// Lexical

/** Options of {@link lexicalEmbedder}. */
export interface LexicalEmbedderOptions {
  /** The length of its vectors. Default: 384. */
  readonly dimensions?: number | undefined;
}

/** The lexical embedder's model name; its vectors also depend on `dimensions`, which a stored retriever records beside it. */
export const LEXICAL_MODEL = "improv-lexical-v1";

/** Words too common to say what a text is about. */
const STOP_WORDS = new Set(
  "a an and are as at be been but by can could did do does for from had has have how i if in into is it its me my no not of on or our so that the their them then there these they this to was we were what when where which who why will with would you your".split(" "),
);

/**
 * A deterministic, offline embedder that matches WORDS, NOT MEANING: each word (lower-cased,
 * split on anything but letters and digits, common English words left out) and each of its
 * character trigrams is hashed, with a sign, into one of `dimensions` buckets, and the vector is
 * scaled to length 1. Texts sharing words score high, "refund" is close to "refunds", but
 * "money back" is nowhere near "refund" (and unrelated words sharing a bucket add some noise). For demos and tests; use a real embedding model
 * (openaiEmbedder(), aiSdkEmbedder()) for an application's documents.
 *
 * @example
 * const docs = memoryRetriever({ embedder: lexicalEmbedder() });
 */
export function lexicalEmbedder(options: LexicalEmbedderOptions = {}): Embedder {
  const given = checkOptionNames<LexicalEmbedderOptions>(options, ["dimensions"], "lexicalEmbedder()");
  const dimensions = checkDimensions(given.dimensions ?? 384, "lexicalEmbedder()");
  return Object.freeze({
    model: LEXICAL_MODEL,
    dimensions,
    async embed(texts: readonly string[], embedOptions: EmbedOptions = {}): Promise<number[][]> {
      checkTexts(texts, "lexicalEmbedder()");
      embedOptions?.signal?.throwIfAborted();
      return texts.map((text) => lexicalVector(text, dimensions));
    },
  });
}

/** The lexical vector of `text`: words and their trigrams hashed into signed buckets, scaled to length 1. */
function lexicalVector(text: string, dimensions: number): number[] {
  const vector = new Float64Array(dimensions);
  const add = (hash: number, weight: number) => {
    const index = hash % dimensions;
    vector[index] = (vector[index] as number) + (mix(hash) & 1 ? -weight : weight);
  };
  // NFKC leaves ASCII as it is, and costs more than the rest of a short query.
  const ascii = ASCII.test(text);
  const normal = ascii ? text : text.normalize("NFKC");
  for (const word of normal.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (word === "" || STOP_WORDS.has(word)) continue;
    add(fnv1a(word, WORD_SEED) >>> 0, 1);
    // The word's trigrams, marked at its ends, together as heavy as the word itself: they
    // make a word close to its other forms (refund, refunds, refunded).
    const marked = `^${word}$`;
    // By code point: an ASCII word's are its code units, read without splitting it.
    const chars = ascii ? undefined : [...marked];
    const grams = (chars?.length ?? marked.length) - 2;
    if (grams < 2) continue;
    const weight = 1 / Math.sqrt(grams);
    for (let at = 0; at < grams; at += 1) {
      if (chars === undefined) {
        let hash = Math.imul(TRIGRAM_SEED ^ marked.charCodeAt(at), 0x01000193);
        hash = Math.imul(hash ^ marked.charCodeAt(at + 1), 0x01000193);
        add(Math.imul(hash ^ marked.charCodeAt(at + 2), 0x01000193) >>> 0, weight);
      } else add(fnv1a(chars[at + 2] as string, fnv1a(chars[at + 1] as string, fnv1a(chars[at] as string, TRIGRAM_SEED))) >>> 0, weight);
    }
  }
  let sum = 0;
  for (let index = 0; index < dimensions; index += 1) sum += (vector[index] as number) * (vector[index] as number);
  const scale = sum === 0 ? 0 : 1 / Math.sqrt(sum);
  const scaled = new Array<number>(dimensions);
  for (let index = 0; index < dimensions; index += 1) scaled[index] = (vector[index] as number) * scale;
  return scaled;
}

const ASCII = /^[\x00-\x7f]*$/;

/** FNV-1a over the UTF-16 code units of `text`, going on from `hash` (a signed 32-bit state; `>>> 0` makes it the unsigned hash). */
function fnv1a(text: string, hash = FNV_OFFSET): number {
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash;
}

const FNV_OFFSET = 0x811c9dc5;
/** The hash state after a feature's kind: "w:" for a word, "t:" for a trigram. */
const WORD_SEED = fnv1a("w:");
const TRIGRAM_SEED = fnv1a("t:");

/** A second hash from the first (murmur3's finaliser), for the sign: independent of the bucket. */
function mix(hash: number): number {
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  return (hash ^ (hash >>> 16)) >>> 0;
}

// ---------------------------------------------------------------------------------------------
// OpenAI

/** Options of {@link openaiEmbedder}. Anything left out is read from the environment. */
export interface OpenAIEmbedderOptions {
  /** The embedding model. Default: "text-embedding-3-small". */
  readonly model?: string | undefined;
  /**
   * The length of its vectors. Default: 1536. Sent as the request's `dimensions` for the
   * text-embedding-3 models (which can shorten their vectors); for another model, give the
   * length its vectors have.
   */
  readonly dimensions?: number | undefined;
  /** API key. Default: `OPENAI_API_KEY`. */
  readonly apiKey?: string | undefined;
  /** Base URL of the server (any OpenAI-compatible one). Default: `OPENAI_BASE_URL`, else OpenAI's. */
  readonly baseURL?: string | undefined;
  /** A ready client, for full control over the SDK (then apiKey and baseURL are not read). */
  readonly client?: OpenAI | undefined;
  /** HTTP retries of each request (429, 5xx, connection errors). Default: 2. */
  readonly maxRetries?: number | undefined;
  /** The most texts in one request. Default (and most): 2,048, OpenAI's limit. */
  readonly batchSize?: number | undefined;
}

const OPENAI_OPTION_NAMES: { readonly [K in keyof OpenAIEmbedderOptions]-?: true } = {
  model: true,
  dimensions: true,
  apiKey: true,
  baseURL: true,
  client: true,
  maxRetries: true,
  batchSize: true,
};

const MAX_BATCH = 2_048;
/** The most characters in one request, well under OpenAI's 300,000 tokens a request. */
const MAX_BATCH_CHARS = 400_000;

/**
 * OpenAI's embeddings endpoint (or any OpenAI-compatible server's, through `baseURL`) through
 * the `openai` SDK. Texts go in batches of up to `batchSize`, one request after another; each
 * reply is checked (one vector per text, each of `dimensions` numbers) and read in its `index`
 * order.
 *
 * @example
 * const docs = await sqliteRetriever("kb.db", { embedder: openaiEmbedder() });
 * const local = openaiEmbedder({ baseURL: "http://127.0.0.1:11434/v1", model: "nomic-embed-text", dimensions: 768 });
 */
export function openaiEmbedder(options: OpenAIEmbedderOptions = {}): Embedder {
  const owner = "openaiEmbedder()";
  const given = checkOptionNames<OpenAIEmbedderOptions>(options, Object.keys(OPENAI_OPTION_NAMES), owner, { baseurl: ' (it is spelled "baseURL")', apikey: ' (it is spelled "apiKey")' });
  for (const name of ["model", "apiKey", "baseURL"] as const) {
    if (given[name] !== undefined && typeof given[name] !== "string") throw new TypeError(`${owner} option "${name}" must be a string; got ${describeType(given[name])}.`);
  }
  const model = given.model ?? "text-embedding-3-small";
  if (model.trim() === "") throw new TypeError(`${owner} option "model" must name an embedding model, such as "text-embedding-3-small"; got an empty string.`);
  const dimensions = checkDimensions(given.dimensions ?? 1536, owner);
  const batchSize = given.batchSize ?? MAX_BATCH;
  if (!Number.isSafeInteger(batchSize) || batchSize < 1 || batchSize > MAX_BATCH) throw new RangeError(`${owner} option "batchSize" must be a whole number from 1 to ${MAX_BATCH}; got ${describeType(batchSize)}.`);
  const maxRetries = given.maxRetries ?? 2;
  if (!Number.isSafeInteger(maxRetries) || maxRetries < 0) throw new RangeError(`${owner} option "maxRetries" must be a whole number of 0 or more; got ${describeType(maxRetries)}.`);
  if (given.client !== undefined && (typeof given.client !== "object" || given.client === null)) throw new TypeError(`${owner} option "client" must be an OpenAI client; got ${describeType(given.client)}.`);
  if (given.baseURL !== undefined && !URL.canParse(given.baseURL)) throw new TypeError(`${owner} option "baseURL" must be a URL such as http://127.0.0.1:11434/v1; got ${describeType(given.baseURL)}.`);

  if (given.client !== undefined) {
    const ready = given.client;
    return makeOpenAIEmbedder(model, dimensions, batchSize, async () => ready);
  }
  const apiKey = apiKeyFrom(given.apiKey, "OPENAI_API_KEY", owner);
  const baseURL = given.baseURL ?? readEnv("OPENAI_BASE_URL");
  const settings = { apiKey, maxRetries, ...(baseURL === undefined ? {} : { baseURL }) };
  // The client is made on the first embedding, so making an embedder loads nothing.
  let made: Promise<OpenAI> | undefined;
  return makeOpenAIEmbedder(model, dimensions, batchSize, () => (made ??= loadOpenAI().then(({ default: Client }) => new Client(settings))));
}

function makeOpenAIEmbedder(model: string, dimensions: number, batchSize: number, clientOf: () => Promise<OpenAI>): Embedder {
  const who = `openaiEmbedder ("${model}")`;
  // Only the text-embedding-3 models take a length; others make their own.
  const sendDimensions = /^text-embedding-3/.test(model);
  return Object.freeze({
    model,
    dimensions,
    async embed(texts: readonly string[], embedOptions: EmbedOptions = {}): Promise<number[][]> {
      checkTexts(texts, "openaiEmbedder()");
      const signal = embedOptions?.signal;
      signal?.throwIfAborted();
      if (texts.length === 0) return [];
      const client = await clientOf();
      const vectors: number[][] = [];
      for (const batch of batches(texts, batchSize)) {
        let reply: OpenAI.CreateEmbeddingResponse;
        try {
          reply = await client.embeddings.create({ model, input: batch, ...(sendDimensions ? { dimensions } : {}) }, signal === undefined ? {} : { signal });
        } catch (error) {
          signal?.throwIfAborted();
          throw new Error(`${who} failed: ${(error as Error)?.message ?? String(error)}`, { cause: error });
        }
        vectors.push(...readReply(reply, batch.length, who, dimensions));
      }
      return vectors;
    },
  });
}

/** `texts` in batches of at most `size` texts and about {@link MAX_BATCH_CHARS} characters (a longer text goes alone). */
function* batches(texts: readonly string[], size: number): Generator<string[]> {
  let batch: string[] = [];
  let chars = 0;
  for (const text of texts) {
    if (batch.length > 0 && (batch.length === size || chars + text.length > MAX_BATCH_CHARS)) {
      yield batch;
      batch = [];
      chars = 0;
    }
    batch.push(text);
    chars += text.length;
  }
  if (batch.length > 0) yield batch;
}

/** An embeddings reply's vectors in input order: one per input, each of `dimensions` finite numbers, or an Error naming the model. */
function readReply(reply: unknown, count: number, who: string, dimensions: number): number[][] {
  const data = (reply as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw new Error(`${who}: the server's reply has no data array; it does not look like an OpenAI embeddings reply.`);
  if (data.length !== count) throw new Error(`${who}: the server returned ${data.length} embedding${data.length === 1 ? "" : "s"} for ${count} input${count === 1 ? "" : "s"}.`);
  const ordered: unknown[] = new Array(count);
  const seen = new Set<number>();
  for (const [position, item] of data.entries()) {
    const index = (item as { index?: unknown } | null)?.index ?? position;
    if (!Number.isSafeInteger(index) || (index as number) < 0 || (index as number) >= count || seen.has(index as number)) {
      throw new Error(`${who}: the server's embedding ${position} has index ${describeType(index)}; each of the ${count} inputs needs one embedding, indexed 0 to ${count - 1}.`);
    }
    seen.add(index as number);
    ordered[index as number] = (item as { embedding?: unknown }).embedding;
  }
  const problem = vectorsProblem(ordered, count, dimensions);
  if (problem === undefined) return ordered as number[][];
  const hint = problem.length === undefined ? "" : ` Give openaiEmbedder the length of this model's vectors: { dimensions: ${problem.length} }.`;
  throw new Error(`${who}: the server ${problem.message.replaceAll("text", "input")}${hint}`);
}

// ---------------------------------------------------------------------------------------------
// AI SDK

/** What improv reads of an AI SDK embedding model (`openai.embedding("text-embedding-3-small")`, …), or a model id the AI SDK resolves through its gateway. */
export type AISDKEmbeddingModel = string | { readonly specificationVersion: string; readonly provider: string; readonly modelId: string };

/** Options of {@link aiSdkEmbedder}. */
export interface AISDKEmbedderOptions {
  /** The length of the model's vectors (1536 for text-embedding-3-small): required, the model does not say. */
  readonly dimensions: number;
  /** Ask the model for vectors of `dimensions` (the AI SDK's `dimensions`; for models that can shorten theirs). Default: false. */
  readonly requestDimensions?: boolean | undefined;
  /** The AI SDK's retries of each model call. Default: 2. */
  readonly maxRetries?: number | undefined;
}

/** The AI SDK, loaded when the first AI SDK embedder is made: it is an optional dependency. */
function loadAi(): typeof Ai {
  try {
    return createRequire(import.meta.url)("ai") as typeof Ai;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "MODULE_NOT_FOUND" || code === "ERR_MODULE_NOT_FOUND") {
      throw new TypeError("aiSdkEmbedder() needs the ai package (the AI SDK), which is not installed. Install it: npm install ai", { cause: error });
    }
    throw error;
  }
}

/**
 * Any AI SDK embedding model, through `embedMany` (which splits the texts into the model's
 * batches). Its `model` is the model's id, so it matches openaiEmbedder()'s for the same model.
 *
 * @example
 * import { openai } from "@ai-sdk/openai";
 * const embedder = aiSdkEmbedder(openai.embedding("text-embedding-3-small"), { dimensions: 1536 });
 */
export function aiSdkEmbedder(model: AISDKEmbeddingModel, options: AISDKEmbedderOptions): Embedder {
  const owner = "aiSdkEmbedder()";
  const isModel = typeof model === "object" && model !== null && typeof model.modelId === "string" && model.modelId !== "" && typeof model.specificationVersion === "string";
  if (!isModel && !(typeof model === "string" && model.trim() !== "")) {
    throw new TypeError(`${owner} takes an AI SDK embedding model, such as openai.embedding("text-embedding-3-small") (an object with specificationVersion and modelId), or a model id; got ${describeType(model)}.`);
  }
  if (options === undefined) throw new TypeError(`${owner} needs { dimensions }: the length of the model's vectors (1536 for text-embedding-3-small).`);
  const given = checkOptionNames<AISDKEmbedderOptions>(options, ["dimensions", "requestDimensions", "maxRetries"], owner);
  const dimensions = checkDimensions(given.dimensions, owner);
  const requestDimensions = given.requestDimensions ?? false;
  if (typeof requestDimensions !== "boolean") throw new TypeError(`${owner} option "requestDimensions" must be true or false; got ${describeType(requestDimensions)}.`);
  const maxRetries = given.maxRetries ?? 2;
  if (!Number.isSafeInteger(maxRetries) || maxRetries < 0) throw new RangeError(`${owner} option "maxRetries" must be a whole number of 0 or more; got ${describeType(maxRetries)}.`);
  const ai = loadAi();
  const name = typeof model === "string" ? model : model.modelId;
  return Object.freeze({
    model: name,
    dimensions,
    async embed(texts: readonly string[], embedOptions: EmbedOptions = {}): Promise<number[][]> {
      checkTexts(texts, owner);
      const signal = embedOptions?.signal;
      signal?.throwIfAborted();
      if (texts.length === 0) return [];
      const { embeddings } = await ai.embedMany({
        model: model as Ai.EmbeddingModel,
        values: [...texts],
        maxRetries,
        ...(requestDimensions ? { dimensions } : {}),
        ...(signal === undefined ? {} : { abortSignal: signal }),
      });
      signal?.throwIfAborted();
      return checkVectors(embeddings, texts.length, name, dimensions) as number[][];
    },
  });
}
