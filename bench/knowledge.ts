/**
 * Figure 16: knowledge (DESIGN 18). What a call with three sources (a state value, a retrieval
 * over 10,000 passages of 384 dimensions, a literal) costs against the same kept program's call
 * without knowledge, for the memory and the SQLite retriever, each exact and through the HNSW
 * index; how much of the exact answer the index finds; and a search's p50 as the SQLite
 * retriever grows.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, fromRetrieval, fromState, lexicalEmbedder, literal, memoryRetriever, pgvectorRetriever, sqliteRetriever, type Embedder, type Passage, type PassageRetriever, type Provider, type Retriever } from "../src/index.ts";
import { startPglite } from "../test-support/pglite-server.ts";
import { INDEX_MIN_ROWS, indexBuiltOf, MIN_CANDIDATES, TopK, VectorRows } from "../src/knowledge/vector-rows.ts";
import { newVectorIndex } from "../src/knowledge/vector-index.ts";
import { embedNormalised } from "../src/knowledge/vectors.ts";
import { expectOk, measure, measureInterleaved, summarize, type Summary } from "./stats.ts";

const WORDS = "refund order ship card account password label return credit invoice tracking email store gift day week price discount address payment plan billing support warranty repair".split(" ");

/** `count` passages of ten words each, from a fixed vocabulary, the same for every run. */
function passages(count: number, from = 0): Passage[] {
  let seed = 42 + from;
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  return Array.from({ length: count }, (_, index) => ({
    id: `doc-${from + index}`,
    content: Array.from({ length: 10 }, () => WORDS[Math.floor(next() * WORDS.length)]).join(" "),
    metadata: { topic: WORDS[(from + index) % 5] as string },
  }));
}

async function filled(retriever: PassageRetriever, count: number): Promise<PassageRetriever> {
  for (let from = 0; from < count; from += 1_000) await retriever.add(passages(Math.min(1_000, count - from), from));
  return retriever;
}

/** Each retriever, exact and through the HNSW index. */
type Retrievers<T> = { readonly memory: T; readonly memoryHnsw: T; readonly sqlite: T; readonly sqliteHnsw: T };

export interface KnowledgeFigures {
  readonly passages: number;
  readonly dimensions: number;
  /**
   * A kept program's call: without knowledge, and with three sources on each retriever. Each
   * indexed retriever's calls alternate with calls without knowledge on their own (`without`
   * beside the memory retriever's, `withoutBesideSqlite` beside the SQLite one's), as an
   * application with one knowledge base would make them; the exact ones together, with
   * `withoutBesideExact`. @unit µs
   */
  readonly calls: { readonly without: Summary; readonly withoutBesideSqlite: Summary; readonly withoutBesideExact: Summary } & Retrievers<Summary>;
  /**
   * What any retriever on the memory retriever's graph adds at least, and what improv adds
   * without a search, in rounds of their own: the call without knowledge; the same call right
   * after a bare search of a graph like the retriever's (usearch with the same vectors and
   * settings, the query's vector made beforehand: no improv code); and the call with the three
   * sources on a retriever that hands back five of the memory retriever's results at once,
   * searching nothing. Undefined without usearch. @unit µs
   */
  readonly floor: { readonly without: Summary; readonly afterBareSearch: Summary; readonly answeredAtOnce: Summary } | undefined;
  /** One search alone, topK 5. @unit µs */
  readonly search: Retrievers<Summary>;
  /**
   * The same search as the measured calls made it (timed around the retriever's `search`): slower
   * than alone, as between two calls the caches lose the rows and the graph. @unit µs
   */
  readonly searchInCalls: Retrievers<Summary>;
  /**
   * The share of the exact top 5 the index finds (a result counts when it scores at least the
   * exact result of its rank): for the figure's own queries, and for dense vectors of 384
   * dimensions in 200 tight topics, asked about one of the topics or in a random direction.
   */
  readonly recall: { readonly lexical: number; readonly denseOnTopic: number; readonly denseRandom: number };
  /**
   * The SQLite retriever's search p50 by passages held, exact and through the index, which the
   * first search starts building on a thread of its own (in `indexSeconds`; searches scan
   * meanwhile). @unit µs
   */
  readonly sqliteGrowth: readonly { readonly passages: number; readonly search: Summary; readonly hnsw: Summary; readonly addSeconds: number; readonly indexSeconds: number }[];
  /**
   * The pgvector retriever's search p50 by passages held, exact, through PGlite (PostgreSQL in
   * WASM, one thread, behind a socket: not a real server's speed). @unit µs
   */
  readonly pgvectorGrowth: readonly { readonly passages: number; readonly search: Summary; readonly addSeconds: number }[];
}

export async function knowledgeFigures(options: { readonly passages: number; readonly growth: readonly number[]; readonly pgvectorGrowth: readonly number[]; readonly count: number; readonly warmup: number }): Promise<KnowledgeFigures> {
  const embedder = lexicalEmbedder({ dimensions: 384 });
  const directory = mkdtempSync(join(tmpdir(), "improv-bench-knowledge-"));
  try {
    const retrievers: Retrievers<PassageRetriever> = {
      memory: await filled(memoryRetriever({ embedder }), options.passages),
      memoryHnsw: await filled(memoryRetriever({ embedder, index: "hnsw" }), options.passages),
      sqlite: await filled(await sqliteRetriever(join(directory, "kb.db"), { embedder }), options.passages),
      sqliteHnsw: await filled(await sqliteRetriever(join(directory, "kb-hnsw.db"), { embedder, index: "hnsw" }), options.passages),
    };
    // One kept program that reads its argument and its knowledge: asked once per agent, then run again.
    const provider: Provider = { generate: async () => ({ code: "return args[0] + knowledge.length", model: "bench" }) };
    // Each retriever's searches as the calls make them; the last `count` are the measured calls'.
    const searchTimes = mapRetrievers(retrievers, () => [] as number[]);
    const timed = (retriever: PassageRetriever, samples: number[]): Retriever => ({
      search: async (query, searchOptions) => {
        const began = performance.now();
        try {
          return await retriever.search(query, searchOptions);
        } finally {
          samples.push((performance.now() - began) * 1000);
        }
      },
    });
    const agentWith = (retriever: Retriever | undefined) => {
      const agent = Agent.for<{ customer: { plan: string } }>("reader", {
        provider,
        log: false,
        ...(retriever === undefined ? {} : { knowledge: [fromState("customer.plan"), fromRetrieval(retriever, { name: "kb", query: (call) => `${String(call.args[0])} refund card`, topK: 5 }), literal("Cite the passages.")] }),
      });
      agent.customer = { plan: "gold" };
      return agent;
    };
    const agents = { without: agentWith(undefined), ...mapRetrievers(retrievers, (retriever, key) => agentWith(timed(retriever, searchTimes[key]))) };
    for (const agent of Object.values(agents)) await expectOk(agent.read(1));
    // The first search started each index's build on its own thread (searches scan until it is in): measured once it is.
    for (const retriever of Object.values(retrievers)) await indexBuiltOf(retriever);
    // Each index measured apart: a scan reads 15 MiB, and another retriever's search its own graph and rows, either of which leaves this graph out of the caches.
    let n = 0;
    const task = (agent: (typeof agents)["without"]) => ({ task: () => expectOk(agent.read(n++)) });
    const memoryCalls = await measureInterleaved({ without: task(agents.without), memoryHnsw: task(agents.memoryHnsw) }, options.count, options.warmup);
    const sqliteCalls = await measureInterleaved({ without: task(agents.without), sqliteHnsw: task(agents.sqliteHnsw) }, options.count, options.warmup);
    const exactCalls = await measureInterleaved({ without: task(agents.without), memory: task(agents.memory), sqlite: task(agents.sqlite) }, options.count, options.warmup);
    const calls = { ...exactCalls, ...memoryCalls, sqliteHnsw: sqliteCalls.sqliteHnsw, withoutBesideSqlite: sqliteCalls.without, withoutBesideExact: exactCalls.without };
    const floor = await floorCalls(embedder, options, agents.without, agentWith, () => n++);
    const searchInCalls = mapRetrievers(searchTimes, (samples) => summarize(samples.slice(-options.count)));
    const signal = new AbortController().signal;
    const searchTask = (retriever: PassageRetriever) => ({ task: () => retriever.search("refund card week", { topK: 5, minRelevance: Number.NEGATIVE_INFINITY, signal }) });
    const search = {
      ...(await measureInterleaved({ memoryHnsw: searchTask(retrievers.memoryHnsw), sqliteHnsw: searchTask(retrievers.sqliteHnsw) }, options.count, options.warmup)),
      ...(await measureInterleaved({ memory: searchTask(retrievers.memory), sqlite: searchTask(retrievers.sqlite) }, options.count, options.warmup)),
    };
    let agreed = 0;
    const queries = Array.from({ length: 100 }, (_, index) => `${WORDS[index % WORDS.length]} ${WORDS[(index * 7 + 3) % WORDS.length]} ${index}`);
    for (const query of queries) {
      const [exact, found] = await Promise.all([retrievers.memory, retrievers.memoryHnsw].map((retriever) => retriever.search(query, { topK: 5, minRelevance: Number.NEGATIVE_INFINITY, signal })));
      found?.forEach((result, rank) => result.score >= (exact?.[rank]?.score ?? Number.POSITIVE_INFINITY) - 1e-6 && (agreed += 1));
    }
    const recall = { lexical: agreed / (queries.length * 5), ...(await denseRecall(options.passages)) };
    for (const retriever of Object.values(retrievers)) await retriever.close();
    const sqliteGrowth = [];
    for (const size of options.growth) {
      const began = performance.now();
      const grown = await filled(await sqliteRetriever(join(directory, `kb-${size}.db`), { embedder }), size);
      const addSeconds = (performance.now() - began) / 1000;
      const asked = () => grown.search("refund card week", { topK: 5, minRelevance: Number.NEGATIVE_INFINITY, signal });
      const summary = await measure(asked, Math.max(20, Math.round(options.count / 10)), 3);
      await grown.close();
      const indexed = await sqliteRetriever(join(directory, `kb-${size}.db`), { embedder, index: "hnsw" });
      // The first search starts the build (below 4,096 passages, it takes them all in itself).
      const indexing = performance.now();
      await indexed.search("refund card week", { topK: 5, minRelevance: Number.NEGATIVE_INFINITY, signal });
      await indexBuiltOf(indexed);
      const indexSeconds = (performance.now() - indexing) / 1000;
      const hnsw = await measure(() => indexed.search("refund card week", { topK: 5, minRelevance: Number.NEGATIVE_INFINITY, signal }), Math.max(20, Math.round(options.count / 10)), 3);
      await indexed.close();
      sqliteGrowth.push({ passages: size, search: summary, hnsw, addSeconds, indexSeconds });
    }
    for (const agent of Object.values(agents)) await Agent.close(agent);
    const pgvectorGrowth = [];
    const server = await startPglite({ maxConnections: 4 });
    try {
      for (const size of options.pgvectorGrowth) {
        const began = performance.now();
        const grown = await filled(await pgvectorRetriever(server.url, { embedder, table: `kb_${size}`, maxConnections: 2 }), size);
        const addSeconds = (performance.now() - began) / 1000;
        const summary = await measure(() => grown.search("refund card week", { topK: 5, minRelevance: Number.NEGATIVE_INFINITY, signal }), Math.max(20, Math.round(options.count / 10)), 3);
        await grown.close();
        pgvectorGrowth.push({ passages: size, search: summary, addSeconds });
      }
    } finally {
      await server.stop();
    }
    return { passages: options.passages, dimensions: embedder.dimensions, calls, floor, search, searchInCalls, recall, sqliteGrowth, pgvectorGrowth };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

type Reader = ReturnType<typeof Agent.for<{ customer: { plan: string } }>>;

/** {@link KnowledgeFigures.floor}: undefined when usearch is not available. */
async function floorCalls(
  embedder: Embedder,
  options: { readonly passages: number; readonly count: number; readonly warmup: number },
  without: Reader,
  agentWith: (retriever: Retriever) => Reader,
  nextN: () => number,
): Promise<KnowledgeFigures["floor"]> {
  const graph = newVectorIndex(embedder.dimensions);
  if (graph === undefined) return undefined;
  const all = passages(options.passages);
  const vectors = new Float32Array(all.length * embedder.dimensions);
  (await embedNormalised(embedder, all.map((passage) => passage.content), undefined)).forEach((vector, row) => vectors.set(vector, row * embedder.dimensions));
  graph.add(all.map((_, row) => row), vectors);
  const few = memoryRetriever({ embedder });
  await few.add(all.slice(0, 50));
  const fixed = await few.search("refund card", { topK: 5, minRelevance: Number.NEGATIVE_INFINITY, signal: new AbortController().signal });
  const atOnce = agentWith({ search: async () => fixed });
  await expectOk(atOnce.read(0));
  // Each query's vector is made before the rounds: the bare search is the graph's work alone.
  const first = nextN();
  const asked = await embedNormalised(embedder, Array.from({ length: 3 * (options.count + options.warmup) + 1 }, (_, index) => `${first + index} refund card`), undefined);
  const floor = await measureInterleaved(
    {
      without: { task: () => expectOk(without.read(nextN())) },
      afterBareSearch: {
        task: () => {
          const n = nextN();
          graph.nearest(asked[n - first] as Float32Array, MIN_CANDIDATES);
          return expectOk(without.read(n));
        },
      },
      answeredAtOnce: { task: () => expectOk(atOnce.read(nextN())) },
    },
    options.count,
    options.warmup,
  );
  await Agent.close(atOnce);
  return floor;
}

function mapRetrievers<T, U>(retrievers: Retrievers<T>, each: (retriever: T, key: keyof Retrievers<T>) => U): Retrievers<U> {
  return { memory: each(retrievers.memory, "memory"), memoryHnsw: each(retrievers.memoryHnsw, "memoryHnsw"), sqlite: each(retrievers.sqlite, "sqlite"), sqliteHnsw: each(retrievers.sqliteHnsw, "sqliteHnsw") };
}

/** The index's recall on `count` dense unit vectors of 384 dimensions in 200 tight topics, asked 100 queries on a topic and 100 in random directions. */
async function denseRecall(count: number): Promise<{ readonly denseOnTopic: number; readonly denseRandom: number }> {
  const dimensions = 384;
  let seed = 11;
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31 - 0.5;
  const unit = (vector: Float32Array) => {
    const length = Math.hypot(...vector);
    return vector.map((value) => value / length);
  };
  const topics = Array.from({ length: 200 }, () => unit(Float32Array.from({ length: dimensions }, next)));
  const nearTopic = (at: number) => unit((topics[at % topics.length] as Float32Array).map((value) => value + next() * 0.1));
  const rows = new VectorRows(dimensions, Math.max(count, INDEX_MIN_ROWS), { index: "hnsw" });
  for (let at = 0; at < Math.max(count, INDEX_MIN_ROWS); at += 1) rows.set(`row-${at}`, nearTopic(at * 7), undefined);
  // The first search starts the graph's build on its own thread; the figure is the graph's, once it is in.
  rows.search(nearTopic(0), { topK: 5, minRelevance: Number.NEGATIVE_INFINITY, filter: undefined });
  await rows.indexBuilt();
  const share = (queries: Float32Array[]) => {
    let agreed = 0;
    for (const asked of queries) {
      const exact = new TopK<number>(5);
      rows.scan(asked, undefined, Number.NEGATIVE_INFINITY, exact);
      const best = exact.best();
      rows.search(asked, { topK: 5, minRelevance: Number.NEGATIVE_INFINITY, filter: undefined }).best().forEach((entry, rank) => entry.score >= (best[rank]?.score ?? Number.POSITIVE_INFINITY) - 1e-6 && (agreed += 1));
    }
    return agreed / (queries.length * 5);
  };
  return {
    denseOnTopic: share(Array.from({ length: 100 }, (_, at) => nearTopic(at * 13 + 5))),
    denseRandom: share(Array.from({ length: 100 }, () => unit(Float32Array.from({ length: dimensions }, next)))),
  };
}
