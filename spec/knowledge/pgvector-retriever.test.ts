/**
 * pgvectorRetriever against a real PostgreSQL with pgvector: PGlite (PostgreSQL 18 in WASM, with
 * pgvector 0.8) served over TCP by pglite-socket in a child process, so `pg` speaks the wire
 * protocol to it as to any server. PGlite ignores CancelRequests, so a cancelled query runs to
 * its end there; what these tests check is that the caller is answered at once and the
 * connection is not reused.
 */
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { lexicalEmbedder } from "../../src/knowledge/embedders.ts";
import { memoryRetriever } from "../../src/knowledge/memory-retriever.ts";
import { pgvectorRetriever } from "../../src/knowledge/pgvector-retriever.ts";
import type { Embedder, MetadataFilter, Passage, PassageRetriever } from "../../src/knowledge/types.ts";
import { startPglite, type PgliteServer } from "../../test-support/pglite-server.ts";
import { Agent, fromRetrieval, ScriptedProvider } from "../../src/index.ts";

let server: PgliteServer;
let admin: pg.Pool;
const open: PassageRetriever[] = [];
let tables = 0;

beforeAll(async () => {
  server = await startPglite({ maxConnections: 16 });
  admin = new pg.Pool({ connectionString: server.url, max: 1 });
}, 60_000);

afterEach(async () => {
  for (const retriever of open.splice(0)) await retriever.close();
});

afterAll(async () => {
  await admin?.end();
  await server?.stop();
});

/** A table of its own for each test: they share one database. */
function freshTable(): string {
  tables += 1;
  return `passages_${tables}`;
}

/** A retriever on the shared server; two connections at most, closed after the test. */
async function opened(options: Partial<Parameters<typeof pgvectorRetriever>[1]> & { table: string }): Promise<PassageRetriever> {
  const retriever = await pgvectorRetriever(server.url, { embedder: lexicalEmbedder(), maxConnections: 2, ...options });
  open.push(retriever);
  return retriever;
}

const never = () => new AbortController().signal;

const PASSAGES: Passage[] = [
  { id: "refunds", content: "Refunds take five business days to reach your card.", metadata: { product: "billing", year: 2024, public: true } },
  { id: "refund-policy", content: "Our refund policy: refunds within 30 days of purchase.", metadata: { product: "billing", year: 2025, public: false } },
  { id: "invoices", content: "Invoices are sent on the first business day of each month.", metadata: { product: "billing", year: "2024", public: 1 } },
  { id: "shipping", content: "Parcels ship within two business days.", metadata: { product: "shipping", year: 2024, region: null } },
  { id: "returns", content: "Returns are accepted within 30 days; refunds follow.", metadata: { product: "shipping", year: 2025 } },
  { id: "passwords", content: "Reset your password from the login page.", metadata: { product: "accounts" } },
  { id: "bare", content: "Business days are Monday to Friday." },
];

describe("pgvectorRetriever on PostgreSQL with pgvector (PGlite over a socket)", () => {
  test("ranks passages as the memory retriever does, best first, with cosine scores, content and metadata", async () => {
    const docs = await opened({ table: freshTable() });
    const memory = memoryRetriever({ embedder: lexicalEmbedder() });
    await docs.add(PASSAGES);
    await memory.add(PASSAGES);
    for (const query of ["how long do refunds take", "business days", "password reset", "the and of"]) {
      const found = await docs.search(query, { topK: 4, minRelevance: -1, signal: never() });
      const expected = await memory.search(query, { topK: 4, minRelevance: -1, signal: never() });
      expect(found.map((one) => one.sourceId)).toEqual(expected.map((one) => one.sourceId));
      for (const [index, one] of found.entries()) {
        expect(one.score).toBeCloseTo(expected[index]!.score, 6);
        expect(one.content).toBe(expected[index]!.content);
        expect(one.metadata).toEqual(expected[index]!.metadata);
      }
      expect(Object.isFrozen(found)).toBe(true);
      expect(found.every((one) => Object.isFrozen(one))).toBe(true);
    }
    const [best] = await docs.search("how long do refunds take", { topK: 1, minRelevance: -1, signal: never() });
    expect(best).toMatchObject({ sourceId: "refunds", content: PASSAGES[0]!.content, metadata: { product: "billing", year: 2024, public: true } });
    expect(best!.score).toBeGreaterThan(0.3);
    expect(best!.score).toBeLessThanOrEqual(1);
    // A query whose vector is all zeros (only common words) scores 0 against everything, never NaN.
    const zeros = await docs.search("the and of", { topK: 10, minRelevance: -1, signal: never() });
    expect(zeros.map((one) => one.score)).toEqual(PASSAGES.map(() => 0));
    expect(zeros.map((one) => one.sourceId)).toEqual(PASSAGES.map((passage) => passage.id).sort());
    expect(await docs.count()).toBe(PASSAGES.length);
  });

  test("filters are applied in the SQL before topK, matching the metadata's type as the other retrievers do", async () => {
    const table = freshTable();
    const docs = await opened({ table });
    const memory = memoryRetriever({ embedder: lexicalEmbedder() });
    // Many close matches of one product, and a few weaker ones of another: a filter for the
    // other still fills topK, because it is applied before the best are chosen.
    const many: Passage[] = [
      ...Array.from({ length: 40 }, (_, n) => ({ id: `close-${n}`, content: `refunds refunds take days ${n}`, metadata: { product: "billing" } })),
      ...Array.from({ length: 3 }, (_, n) => ({ id: `far-${n}`, content: `a parcel about refunds ${n}`, metadata: { product: "shipping" } })),
    ];
    await docs.add([...PASSAGES, ...many]);
    await memory.add([...PASSAGES, ...many]);
    const shipping = await docs.search("refunds take days", { topK: 5, minRelevance: -1, filter: { product: "shipping" }, signal: never() });
    expect(shipping.map((one) => one.sourceId).sort()).toEqual(["far-0", "far-1", "far-2", "returns", "shipping"]);

    const filters: MetadataFilter[] = [
      { product: "billing" },
      { year: 2024 },
      { year: "2024" },
      { year: [2024, "2024"] },
      { year: [2025], product: "shipping" },
      { public: true },
      { public: 1 },
      { public: [false, 1] },
      { region: null },
      { missing: null },
      { product: [] },
      { product: ["accounts", "shipping"], year: 2025 },
      { product: "billing", year: 2024, public: true },
      {},
    ];
    for (const filter of filters) {
      const found = await docs.search("refunds business days", { topK: 60, minRelevance: -1, filter, signal: never() });
      const expected = await memory.search("refunds business days", { topK: 60, minRelevance: -1, filter, signal: never() });
      expect({ filter, ids: found.map((one) => one.sourceId).sort() }).toEqual({ filter, ids: expected.map((one) => one.sourceId).sort() });
    }
    // The filter's values are parameters, never SQL.
    const tricky = await docs.search("refunds", { topK: 5, minRelevance: -1, filter: { "product') OR true --": "x", product: "billing' OR '1'='1" }, signal: never() });
    expect(tricky).toEqual([]);
    const { rows } = await admin.query<{ indexdef: string }>("SELECT indexdef FROM pg_indexes WHERE tablename = $1 ORDER BY indexname", [table]);
    expect(rows.map((row) => row.indexdef)).toEqual([expect.stringMatching(/USING gin \(metadata jsonb_path_ops\)/), expect.stringMatching(/UNIQUE INDEX .* \(id\)/)]);
  });

  test("minRelevance keeps only results scoring at least it; topK bounds the rest", async () => {
    const docs = await opened({ table: freshTable() });
    const memory = memoryRetriever({ embedder: lexicalEmbedder() });
    await docs.add(PASSAGES);
    await memory.add(PASSAGES);
    const all = await docs.search("refunds within 30 days", { topK: 10, minRelevance: -1, signal: never() });
    expect(all).toHaveLength(PASSAGES.length);
    const threshold = (all[1]!.score + all[2]!.score) / 2;
    const kept = await docs.search("refunds within 30 days", { topK: 10, minRelevance: threshold, signal: never() });
    expect(kept.map((one) => one.sourceId)).toEqual(all.slice(0, 2).map((one) => one.sourceId));
    expect((await memory.search("refunds within 30 days", { topK: 10, minRelevance: threshold, signal: never() })).map((one) => one.sourceId)).toEqual(kept.map((one) => one.sourceId));
    expect(await docs.search("refunds within 30 days", { topK: 1, minRelevance: threshold, signal: never() })).toHaveLength(1);
    expect(await docs.search("refunds within 30 days", { topK: 10, minRelevance: 1.01, signal: never() })).toEqual([]);
  });

  test("an id added again replaces its passage (content, metadata and vector); in one call, the last of an id wins", async () => {
    const table = freshTable();
    const docs = await opened({ table });
    await docs.add(PASSAGES);
    await docs.add([{ id: "refunds", content: "Gift cards never expire.", metadata: { product: "gifts" } }]);
    expect(await docs.count()).toBe(PASSAGES.length);
    const [gift] = await docs.search("gift cards expire", { topK: 1, minRelevance: -1, signal: never() });
    expect(gift).toMatchObject({ sourceId: "refunds", content: "Gift cards never expire.", metadata: { product: "gifts" } });
    expect(await docs.search("refunds", { topK: 5, minRelevance: -1, filter: { product: "billing" }, signal: never() })).toHaveLength(2);
    // Metadata dropped when the passage comes again without it.
    await docs.add([{ id: "refunds", content: "Gift cards never expire." }]);
    expect((await docs.search("gift cards", { topK: 1, minRelevance: -1, signal: never() }))[0]).not.toHaveProperty("metadata");

    await docs.add([
      { id: "twice", content: "first version" },
      { id: "once", content: "only version" },
      { id: "twice", content: "second version", metadata: { n: 2 } },
    ]);
    expect(await docs.count()).toBe(PASSAGES.length + 2);
    const { rows } = await admin.query(`SELECT id, content, metadata FROM "${table}" WHERE id IN ('twice', 'once') ORDER BY id`);
    expect(rows).toEqual([
      { id: "once", content: "only version", metadata: null },
      { id: "twice", content: "second version", metadata: { n: 2 } },
    ]);
    await docs.add([]);
    expect(await docs.count()).toBe(PASSAGES.length + 2);
  });

  test("passages persist across close and reopen; the table holds vector(384) of length 1 and records the embedder", async () => {
    const table = freshTable();
    const first = await pgvectorRetriever(server.url, { embedder: lexicalEmbedder(), table, maxConnections: 2 });
    await first.add(PASSAGES);
    const before = await first.search("refunds business days", { topK: 3, minRelevance: -1, filter: { product: "billing" }, signal: never() });
    await first.close();
    await first.close();
    await expect(first.count()).rejects.toThrow(/pgvectorRetriever\("postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres"\) cannot count passages: it was closed/);
    await expect(first.search("x", { topK: 1, minRelevance: 0, signal: never() })).rejects.toThrow(/cannot search: it was closed/);
    await expect(first.add([{ id: "x", content: "x" }])).rejects.toThrow(/cannot add passages: it was closed/);

    const again = await opened({ table });
    expect(await again.count()).toBe(PASSAGES.length);
    expect(await again.search("refunds business days", { topK: 3, minRelevance: -1, filter: { product: "billing" }, signal: never() })).toEqual(before);

    const columns = await admin.query("SELECT attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 ORDER BY attnum", [table]);
    expect(columns.rows).toEqual([
      { attname: "id", type: "text" },
      { attname: "content", type: "text" },
      { attname: "metadata", type: "jsonb" },
      { attname: "embedding", type: "vector(384)" },
    ]);
    const norm = await admin.query<{ norm: number }>(`SELECT vector_norm(embedding) AS norm FROM "${table}" WHERE id = 'refunds'`);
    expect(norm.rows[0]!.norm).toBeCloseTo(1, 5);
    expect((await admin.query(`SELECT key, value FROM "${table}_meta" ORDER BY key`)).rows).toEqual([
      { key: "dimensions", value: "384" },
      { key: "model", value: "improv-lexical-v1" },
      { key: "vector_format", value: "pgvector-unit" },
    ]);
  });

  test("a table made with another embedder (model or dimensions) is refused, naming both; another table can hold it", async () => {
    const table = freshTable();
    const made = await opened({ table });
    await made.add([{ id: "a", content: "alpha" }]);

    await expect(pgvectorRetriever(server.url, { embedder: lexicalEmbedder({ dimensions: 256 }), table })).rejects.toThrow(
      new RegExp(
        `the table "${table}" holds vectors of the embedder "improv-lexical-v1" \\(384 dimensions\\), not of the embedder given, "improv-lexical-v1" \\(256 dimensions\\).*Use the same embedder as the table was made with, or another \\{ table \\}`,
      ),
    );
    const other: Embedder = { model: "text-embedding-3-small", dimensions: 384, embed: async (texts) => texts.map(() => new Array<number>(384).fill(1)) };
    await expect(pgvectorRetriever(server.url, { embedder: other, table })).rejects.toThrow(/holds vectors of the embedder "improv-lexical-v1" \(384 dimensions\), not of the embedder given, "text-embedding-3-small" \(384 dimensions\)/);

    const beside = await opened({ table: `${table}_other`, embedder: other });
    await beside.add([{ id: "b", content: "beta" }]);
    expect(await beside.count()).toBe(1);
    expect(await made.count()).toBe(1);
  });

  test("a table that is not a table of passages, or holds passages with no recorded embedder, is refused", async () => {
    const table = freshTable();
    await admin.query(`CREATE TABLE "${table}" (name text)`);
    await expect(pgvectorRetriever(server.url, { embedder: lexicalEmbedder(), table })).rejects.toThrow(new RegExp(`the table "${table}" is not a table of passages \\(it has no "id" column\\)`));
    const second = freshTable();
    const made = await pgvectorRetriever(server.url, { embedder: lexicalEmbedder(), table: second });
    await made.add([{ id: "a", content: "alpha" }]);
    await made.close();
    await admin.query(`DELETE FROM "${second}_meta"`);
    await expect(pgvectorRetriever(server.url, { embedder: lexicalEmbedder(), table: second })).rejects.toThrow(/holds 1 passages but no record of the embedder that made their vectors/);
  });

  test("bad passages are refused before anything is added", async () => {
    const table = freshTable();
    const docs = await opened({ table });
    await docs.add([{ id: "kept", content: "kept" }]);
    const good = { id: "good", content: "good" };
    await expect(docs.add([good, { id: "", content: "no id" }])).rejects.toThrow(/passage 1 needs an id/);
    await expect(docs.add([good, { id: "x" } as never])).rejects.toThrow(/passage 1 \("x"\) needs content: a string/);
    await expect(docs.add([good, { id: "m", content: "m", metadata: { nested: { a: 1 } } } as never])).rejects.toThrow(/metadata "nested" that is an object/);
    await expect(docs.add([good, { id: "nul", content: "a\u0000b" }])).rejects.toThrow(/passage 1 \("nul"\) has content with the character U\+0000, which PostgreSQL text cannot hold/);
    await expect(docs.add([good, { id: "nul", content: "ok", metadata: { k: "a\u0000" } }])).rejects.toThrow(/has metadata "k" with the character U\+0000/);
    await expect(docs.add("nope" as never)).rejects.toThrow(/takes an array of \{ id, content, metadata\? \}/);
    // An embedder that returns the wrong vectors: refused before the transaction.
    const short: Embedder = { model: "improv-lexical-v1", dimensions: 384, embed: async (texts) => texts.map(() => [1, 2, 3]) };
    const wrong = await opened({ table, embedder: short });
    await expect(wrong.add([good])).rejects.toThrow(/returned a vector of 3 numbers for text 0, not 384/);
    expect(await docs.count()).toBe(1);
  });

  test("an aborted signal rejects with its reason: before, while embedding, while the query runs; nothing of an aborted add is kept", async () => {
    const table = freshTable();
    const lexical = lexicalEmbedder();
    let abortAfterEmbed: AbortController | undefined;
    // Aborts its controller as soon as it has returned vectors: the abort lands while the query runs.
    const aborting: Embedder = {
      model: lexical.model,
      dimensions: lexical.dimensions,
      async embed(texts, options) {
        const vectors = await lexical.embed(texts, options);
        const controller = abortAfterEmbed;
        if (controller !== undefined) setTimeout(() => controller.abort(new Error("caller gone")), 0);
        return vectors;
      },
    };
    const docs = await opened({ table, embedder: aborting, maxConnections: 1 });
    const bulk = Array.from({ length: 2_000 }, (_, n) => ({ id: `p-${n}`, content: `passage ${n} about refunds and parcels`, metadata: { n } }));
    await docs.add(bulk);

    const reason = new Error("cancelled by the caller");
    const done = new AbortController();
    done.abort(reason);
    await expect(docs.search("refunds", { topK: 3, minRelevance: -1, signal: done.signal })).rejects.toBe(reason);
    await expect(docs.add([{ id: "x", content: "x" }], { signal: done.signal })).rejects.toBe(reason);

    // While embedding: an embedder that waits for the signal.
    const waiting: Embedder = {
      model: lexical.model,
      dimensions: lexical.dimensions,
      embed: (_texts, options) => new Promise((_, reject) => options?.signal?.addEventListener("abort", () => reject(options.signal!.reason as Error))),
    };
    const slow = await opened({ table, embedder: waiting });
    const embedding = new AbortController();
    const pending = slow.search("refunds", { topK: 3, minRelevance: -1, signal: embedding.signal });
    embedding.abort(reason);
    await expect(pending).rejects.toBe(reason);

    // While the query runs (the server has 2,000 vectors to compare): rejected at once. The
    // count first leaves an open connection in the pool (an abort ends the one it cut off), so
    // the abort lands while the search's statement runs, not while a connection is made.
    // The abort is a timer set as the embedder returns: on a loaded machine the query can win the
    // race, and then it answers whole; most rounds, and at least one, are cut off.
    let cutOff = 0;
    for (let round = 0; round < 5; round += 1) {
      expect(await docs.count()).toBe(2_000);
      abortAfterEmbed = new AbortController();
      const began = performance.now();
      const settled = await docs.search("refunds parcels", { topK: 5, minRelevance: -1, signal: abortAfterEmbed.signal }).then(
        (found) => ({ found }),
        (error: unknown) => ({ error }),
      );
      if ("error" in settled) {
        expect(settled.error).toMatchObject({ message: "caller gone" });
        expect(performance.now() - began).toBeLessThan(1_000);
        cutOff += 1;
      } else expect(settled.found).toHaveLength(5);
    }
    expect(cutOff).toBeGreaterThan(0);
    // An add aborted while its rows go in keeps none of them.
    expect(await docs.count()).toBe(2_000);
    abortAfterEmbed = new AbortController();
    const more = Array.from({ length: 3_000 }, (_, n) => ({ id: `more-${n}`, content: `more ${n}` }));
    await expect(docs.add(more, { signal: abortAfterEmbed.signal })).rejects.toThrow("caller gone");
    abortAfterEmbed = undefined;

    // The connection an abort left behind is not reused: later answers are this query's own.
    expect(await docs.count()).toBe(2_000);
    const [found] = await docs.search("passage 1234", { topK: 1, minRelevance: -1, filter: { n: 1234 }, signal: never() });
    expect(found).toMatchObject({ sourceId: "p-1234", metadata: { n: 1234 } });
    const still = await docs.search("refunds parcels", { topK: 5, minRelevance: -1, signal: never() });
    expect(still).toHaveLength(5);
  });

  test("index: \"hnsw\" makes an HNSW index; a filtered search through it still fills topK", async () => {
    const table = freshTable();
    const docs = await opened({ table, index: "hnsw" });
    const exact = memoryRetriever({ embedder: lexicalEmbedder() });
    const passages = Array.from({ length: 600 }, (_, n) => ({ id: `h-${n}`, content: `topic ${n % 7} note ${n} refunds parcels invoices`, metadata: { rare: n % 100 === 0, group: n % 3 } }));
    await docs.add(passages);
    await exact.add(passages);
    const { rows } = await admin.query<{ indexdef: string }>("SELECT indexdef FROM pg_indexes WHERE tablename = $1 AND indexdef LIKE '%hnsw%'", [table]);
    expect(rows).toEqual([{ indexdef: expect.stringMatching(/USING hnsw \(embedding vector_ip_ops\)/) }]);
    // 6 of 600 passages match: the index scan goes on until it has found them.
    const rare = await docs.search("topic 3 refunds", { topK: 6, minRelevance: -1, filter: { rare: true }, signal: never() });
    expect(rare.map((one) => one.sourceId).sort()).toEqual(["h-0", "h-100", "h-200", "h-300", "h-400", "h-500"]);
    // More than the index's default 40 candidates.
    expect(await docs.search("topic 3 refunds", { topK: 100, minRelevance: -1, signal: never() })).toHaveLength(100);
    const found = await docs.search("note 42 refunds", { topK: 1, minRelevance: -1, filter: { group: 0 }, signal: never() });
    const expected = await exact.search("note 42 refunds", { topK: 1, minRelevance: -1, filter: { group: 0 }, signal: never() });
    expect(found[0]!.sourceId).toBe(expected[0]!.sourceId);
    // A retriever opened without the option still searches the table through its index.
    const plain = await opened({ table });
    expect((await plain.search("topic 3 refunds", { topK: 6, minRelevance: -1, filter: { rare: true }, signal: never() })).map((one) => one.sourceId).sort()).toEqual(rare.map((one) => one.sourceId).sort());
  });

  test("{ pool }: the application's pool is used and left open by close()", async () => {
    const pool = new pg.Pool({ connectionString: server.url, max: 2 });
    try {
      const docs = await pgvectorRetriever({ pool }, { embedder: lexicalEmbedder(), table: freshTable() });
      await docs.add(PASSAGES.slice(0, 2));
      expect(await docs.count()).toBe(2);
      await docs.close();
      await expect(docs.count()).rejects.toThrow(/pgvectorRetriever\(\{ pool \}\) cannot count passages: it was closed/);
      expect((await pool.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
      await expect(pgvectorRetriever({ pool }, { embedder: lexicalEmbedder(), maxConnections: 2 })).rejects.toThrow(/with \{ pool \}, size your pool instead/);
    } finally {
      await pool.end();
    }
  });

  test("{ pool } whose jsonb parser makes metadata with getters: a call's knowledge holds what each getter gave once, never the live object", async () => {
    const JSONB = 3802;
    let secondReads = 0;
    const withGetters = (text: string): unknown => {
      const parsed = JSON.parse(text) as Record<string, unknown>;
      const made = {};
      for (const [key, value] of Object.entries(parsed)) {
        let reads = 0;
        Object.defineProperty(made, key, {
          enumerable: true,
          get() {
            reads += 1;
            if (reads === 1) return value;
            secondReads += 1;
            return "y".repeat(300_000);
          },
        });
      }
      return made;
    };
    const pool = new pg.Pool({ connectionString: server.url, max: 2, types: { getTypeParser: ((oid: number, format?: string) => (oid === JSONB ? withGetters : pg.types.getTypeParser(oid, format as "text"))) as typeof pg.types.getTypeParser } });
    try {
      const docs = await pgvectorRetriever({ pool }, { embedder: lexicalEmbedder(), table: freshTable() });
      open.push(docs);
      await docs.add([{ id: "one", content: "refunds take five days", metadata: { note: "small" } }]);
      const provider = new ScriptedProvider({ programs: { look: "const m = knowledge[0].results[0].metadata; return [m, JSON.stringify(knowledge).length < 10_000]" } });
      const agent = Agent.for("pg-getters", { provider, knowledge: [fromRetrieval(docs, { name: "kb", query: "refunds" })] });
      const outcome = await agent.look();
      expect(outcome.errorMessage).toBeUndefined();
      expect(outcome.value).toEqual([{ note: "small" }, true]);
      expect(secondReads).toBe(0);
      await Agent.close(agent);
    } finally {
      await pool.end();
    }
  });

  test("options are checked with clear errors", async () => {
    const embedder = lexicalEmbedder();
    await expect(pgvectorRetriever("kb.db", { embedder })).rejects.toThrow(/takes a postgres:\/\/ URL/);
    await expect(pgvectorRetriever({ pool: 3 } as never, { embedder })).rejects.toThrow(/or \{ pool \}, a pg\.Pool; got \{ pool: the number 3 \}/);
    await expect(pgvectorRetriever(server.url, { embedder, table: "drop table x;" })).rejects.toThrow(/option "table" must be a table name of letters, digits and _/);
    await expect(pgvectorRetriever(server.url, { embedder, table: "pg_class" })).rejects.toThrow(/option "table"/);
    await expect(pgvectorRetriever(server.url, { embedder, table: "a".repeat(49) })).rejects.toThrow(/option "table"/);
    await expect(pgvectorRetriever(server.url, { embedder, maxConnections: 0 })).rejects.toThrow(RangeError);
    await expect(pgvectorRetriever(server.url, { embedder, index: "ivfflat" as never })).rejects.toThrow(/option "index" must be "exact" or "hnsw"/);
    await expect(pgvectorRetriever(server.url, { embedder: lexicalEmbedder({ dimensions: 4_096 }), index: "hnsw" })).rejects.toThrow(/HNSW index takes at most 2000/);
    await expect(pgvectorRetriever(server.url, { embedder, tabel: "x" } as never)).rejects.toThrow(/Unknown option "tabel" for pgvectorRetriever\(\)/);
    await expect(pgvectorRetriever(server.url, {} as never)).rejects.toThrow(/pgvectorRetriever\(\) needs \{ embedder \}/);
    const docs = await opened({ table: freshTable() });
    await expect(docs.search("x", { topK: 0, minRelevance: 0, signal: never() })).rejects.toThrow(/option "topK" must be a whole number of 1 or more/);
    await expect(docs.search("x", { topK: 1, minRelevance: 0, filter: { a: { b: 1 } } as never, signal: never() })).rejects.toThrow(/option "filter" has "a" matching an object/);
  });

  test("a server that cannot be reached fails with the retriever's name", async () => {
    await expect(pgvectorRetriever("postgres://nobody:secret@127.0.0.1:1/none", { embedder: lexicalEmbedder() })).rejects.toThrow(
      /^pgvectorRetriever\("postgres:\/\/nobody@127\.0\.0\.1:1\/none"\) cannot open table "improv_passages": .*ECONNREFUSED/,
    );
  });
});

describe("pgvectorRetriever on a server without pgvector", () => {
  let plain: PgliteServer;
  beforeAll(async () => {
    plain = await startPglite({ vector: false });
  }, 60_000);
  afterAll(async () => plain?.stop());

  test("is refused, saying how to install pgvector", async () => {
    await expect(pgvectorRetriever(plain.url, { embedder: lexicalEmbedder() })).rejects.toThrow(
      /^pgvectorRetriever\("postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres"\) needs the pgvector extension, which this PostgreSQL server does not have \(CREATE EXTENSION vector: extension "vector" is not available\)\. Install pgvector on the database server/,
    );
    // Nothing was made.
    const client = new pg.Client({ connectionString: plain.url });
    await client.connect();
    try {
      expect((await client.query("SELECT to_regclass('improv_passages') AS t")).rows).toEqual([{ t: null }]);
    } finally {
      await client.end();
    }
  });
});
