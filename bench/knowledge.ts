/**
 * Figure 16: knowledge (DESIGN 18). What a call with three sources (a state value, a retrieval
 * over 10,000 passages of 384 dimensions, a literal) costs against the same kept program's call
 * without knowledge, for the memory and the SQLite retriever, and a search's p50 as the SQLite
 * retriever grows.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, fromRetrieval, fromState, lexicalEmbedder, literal, memoryRetriever, pgvectorRetriever, sqliteRetriever, type Passage, type PassageRetriever, type Provider } from "../src/index.ts";
import { startPglite } from "../test-support/pglite-server.ts";
import { expectOk, measure, measureInterleaved, type Summary } from "./stats.ts";

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

export interface KnowledgeFigures {
  readonly passages: number;
  readonly dimensions: number;
  /** A kept program's call: without knowledge, and with three sources on each retriever. @unit µs */
  readonly calls: { readonly without: Summary; readonly memory: Summary; readonly sqlite: Summary };
  /** One search alone, topK 5. @unit µs */
  readonly search: { readonly memory: Summary; readonly sqlite: Summary };
  /** The SQLite retriever's search p50 by passages held. @unit µs */
  readonly sqliteGrowth: readonly { readonly passages: number; readonly search: Summary; readonly addSeconds: number }[];
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
    const memory = await filled(memoryRetriever({ embedder }), options.passages);
    const sqlite = await filled(await sqliteRetriever(join(directory, "kb.db"), { embedder }), options.passages);
    // One kept program that reads its argument and its knowledge: asked once per agent, then run again.
    const provider: Provider = { generate: async () => ({ code: "return args[0] + knowledge.length", model: "bench" }) };
    const agentWith = (retriever: PassageRetriever | undefined) => {
      const agent = Agent.for<{ customer: { plan: string } }>("reader", {
        provider,
        log: false,
        ...(retriever === undefined ? {} : { knowledge: [fromState("customer.plan"), fromRetrieval(retriever, { name: "kb", query: (call) => `${String(call.args[0])} refund card`, topK: 5 }), literal("Cite the passages.")] }),
      });
      agent.customer = { plan: "gold" };
      return agent;
    };
    const agents = { without: agentWith(undefined), memory: agentWith(memory), sqlite: agentWith(sqlite) };
    for (const agent of Object.values(agents)) await expectOk(agent.read(1));
    let n = 0;
    const calls = await measureInterleaved(
      {
        without: { task: () => expectOk(agents.without.read(n++)) },
        memory: { task: () => expectOk(agents.memory.read(n++)) },
        sqlite: { task: () => expectOk(agents.sqlite.read(n++)) },
      },
      options.count,
      options.warmup,
    );
    const signal = new AbortController().signal;
    const search = await measureInterleaved(
      {
        memory: { task: () => memory.search("refund card week", { topK: 5, minRelevance: Number.NEGATIVE_INFINITY, signal }) },
        sqlite: { task: () => sqlite.search("refund card week", { topK: 5, minRelevance: Number.NEGATIVE_INFINITY, signal }) },
      },
      options.count,
      options.warmup,
    );
    await sqlite.close();
    const sqliteGrowth = [];
    for (const size of options.growth) {
      const began = performance.now();
      const grown = await filled(await sqliteRetriever(join(directory, `kb-${size}.db`), { embedder }), size);
      const addSeconds = (performance.now() - began) / 1000;
      const summary = await measure(() => grown.search("refund card week", { topK: 5, minRelevance: Number.NEGATIVE_INFINITY, signal }), Math.max(20, Math.round(options.count / 10)), 3);
      await grown.close();
      sqliteGrowth.push({ passages: size, search: summary, addSeconds });
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
    return { passages: options.passages, dimensions: embedder.dimensions, calls, search, sqliteGrowth, pgvectorGrowth };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
