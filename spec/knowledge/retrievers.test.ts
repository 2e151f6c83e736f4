import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { lexicalEmbedder } from "../../src/knowledge/embedders.ts";
import { memoryRetriever } from "../../src/knowledge/memory-retriever.ts";
import { sqliteRetriever } from "../../src/knowledge/sqlite-retriever.ts";
import type { Embedder, Passage, PassageRetriever } from "../../src/knowledge/types.ts";
import { indexBuilds } from "../../src/knowledge/index-build.ts";
import { indexBuiltOf } from "../../src/knowledge/vector-rows.ts";

/** What every improv retriever does alike, run against each. */

const made: PassageRetriever[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const retriever of made.splice(0)) await retriever.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

type IndexOption = { readonly index?: "exact" | "hnsw" | undefined };
const kinds: [string, (embedder: Embedder, options?: IndexOption) => Promise<PassageRetriever>][] = [
  ["memoryRetriever", async (embedder, options = {}) => memoryRetriever({ embedder, ...options })],
  [
    "sqliteRetriever",
    async (embedder, options = {}) => {
      const dir = mkdtempSync(join(tmpdir(), "improv-knowledge-"));
      dirs.push(dir);
      return sqliteRetriever(join(dir, "kb.db"), { embedder, ...options });
    },
  ],
];

const WORDS = "refund order ship card account password label return credit invoice tracking email store gift day week price discount address payment plan billing support warranty repair".split(" ");

/** `count` passages of eight words each from a small vocabulary, the same every run. */
function wordPassages(count: number): Passage[] {
  let seed = 7;
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  return Array.from({ length: count }, (_, index) => ({
    id: `doc-${index}`,
    content: Array.from({ length: 8 }, () => WORDS[Math.floor(next() * WORDS.length)]).join(" "),
    metadata: { shelf: index % 50 === 0 ? "rare" : "common" },
  }));
}

const PASSAGES: Passage[] = [
  { id: "refunds.md#1", content: "Refunds take five business days to reach your card.", metadata: { product: "billing", year: 2024 } },
  { id: "shipping.md#1", content: "Parcels ship within two days from our warehouse.", metadata: { product: "shipping", year: 2025 } },
  { id: "login.md#1", content: "Reset your password from the login page.", metadata: { product: "account", year: 2025, owner: null } },
  { id: "invoices.md#2", content: "Invoices are emailed monthly to the billing contact.", metadata: { product: "billing", year: 2025, archived: true } },
  { id: "notes.txt", content: "Loose notes about nothing in particular." },
];

const never = () => new AbortController().signal;
const ids = (results: readonly { sourceId: string }[]) => results.map((result) => result.sourceId);

/** An embedder answering with whatever `reply` makes of the texts. */
function fakeEmbedder(reply: (texts: readonly string[]) => unknown, dimensions = 3): Embedder {
  return { model: "fake-embedder", dimensions, embed: async (texts) => reply(texts) as number[][] };
}

describe.each(kinds)("%s", (_name, make) => {
  async function filled(embedder: Embedder = lexicalEmbedder()): Promise<PassageRetriever> {
    const retriever = await make(embedder);
    made.push(retriever);
    await retriever.add(PASSAGES);
    return retriever;
  }

  test("a query sharing words with one passage ranks it first; results come best first, with cosine scores", async () => {
    const docs = await filled();
    expect(await docs.count()).toBe(5);
    const refunds = await docs.search("How long do refunds take?", { topK: 5, minRelevance: -1, signal: never() });
    expect(refunds[0]).toMatchObject({ sourceId: "refunds.md#1", content: PASSAGES[0]!.content, metadata: { product: "billing", year: 2024 } });
    expect(refunds).toHaveLength(5);
    const scores = refunds.map((result) => result.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    for (const score of scores) expect(Math.abs(score)).toBeLessThanOrEqual(1);
    expect(scores[0]).toBeGreaterThan(scores[1]! + 0.1);

    expect(ids(await docs.search("reset my password", { topK: 1, minRelevance: -1, signal: never() }))).toEqual(["login.md#1"]);
    const same = await docs.search(PASSAGES[1]!.content, { topK: 1, minRelevance: -1, signal: never() });
    expect(same[0]!.sourceId).toBe("shipping.md#1");
    expect(same[0]!.score).toBeCloseTo(1, 5);
  });

  test("a filter applies inside the search, before topK: topK 1 finds the matching passage though others score higher", async () => {
    const docs = await filled();
    const query = "refunds take five business days";
    expect(ids(await docs.search(query, { topK: 1, minRelevance: -1, signal: never() }))).toEqual(["refunds.md#1"]);
    expect(ids(await docs.search(query, { topK: 1, minRelevance: -1, filter: { product: "shipping" }, signal: never() }))).toEqual(["shipping.md#1"]);
  });

  test("filters: equality of each type, one of an array, every key, and a missing key never matches", async () => {
    const docs = await filled();
    const search = async (filter: Record<string, unknown>) => ids(await docs.search("days", { topK: 10, minRelevance: -1, filter: filter as never, signal: never() })).sort();
    expect(await search({ product: "billing" })).toEqual(["invoices.md#2", "refunds.md#1"]);
    expect(await search({ year: 2025 })).toEqual(["invoices.md#2", "login.md#1", "shipping.md#1"]);
    expect(await search({ year: 2025.0, product: "billing" })).toEqual(["invoices.md#2"]);
    expect(await search({ product: ["account", "shipping"] })).toEqual(["login.md#1", "shipping.md#1"]);
    expect(await search({ year: [2024, "2025"] })).toEqual(["refunds.md#1"]);
    expect(await search({ archived: true })).toEqual(["invoices.md#2"]);
    expect(await search({ archived: false })).toEqual([]);
    expect(await search({ owner: null })).toEqual(["login.md#1"]);
    // The same value of another type does not match: "2025" is not 2025, 1 is not true.
    expect(await search({ year: "2025" })).toEqual([]);
    expect(await search({ product: [] })).toEqual([]);
    expect(await search({ nowhere: "x" })).toEqual([]);
    expect(await search({})).toHaveLength(5);
  });

  test("metadata keys of any characters filter alike", async () => {
    const docs = await filled();
    await docs.add([{ id: "odd", content: "odd keys", metadata: { "a.b": 1, 'quote"d': "yes", "$.x": true, "": "empty" } }]);
    const one = async (filter: Record<string, unknown>) => ids(await docs.search("odd keys", { topK: 10, minRelevance: -1, filter: filter as never, signal: never() }));
    expect(await one({ "a.b": 1 })).toEqual(["odd"]);
    expect(await one({ 'quote"d': "yes" })).toEqual(["odd"]);
    expect(await one({ "$.x": true, "": "empty" })).toEqual(["odd"]);
    // A dotted key is a key, not a path.
    expect(await one({ a: 1 })).toEqual([]);
  });

  test("minRelevance keeps only results scoring at least it", async () => {
    const docs = await filled();
    const all = await docs.search("refunds take days", { topK: 10, minRelevance: -1, signal: never() });
    const cut = (all[0]!.score + all[1]!.score) / 2;
    const kept = await docs.search("refunds take days", { topK: 10, minRelevance: cut, signal: never() });
    expect(ids(kept)).toEqual(["refunds.md#1"]);
    expect(await docs.search("refunds take days", { topK: 10, minRelevance: 1.5, signal: never() })).toEqual([]);
    const some = await docs.search("refunds take days", { topK: 10, minRelevance: 0, signal: never() });
    expect(some.every((result) => result.score >= 0)).toBe(true);
    expect(ids(some)).toEqual(ids(all.filter((result) => result.score >= 0)));
  });

  test("an id added again replaces its passage: content, metadata and vector", async () => {
    const docs = await filled();
    await docs.add([{ id: "refunds.md#1", content: "Gift cards never expire.", metadata: { product: "gifts" } }]);
    expect(await docs.count()).toBe(5);
    const gift = await docs.search("gift cards expire", { topK: 1, minRelevance: -1, signal: never() });
    expect(gift[0]).toEqual({ sourceId: "refunds.md#1", content: "Gift cards never expire.", score: expect.any(Number), metadata: { product: "gifts" } });
    const refunds = await docs.search("refunds business days card", { topK: 5, minRelevance: -1, signal: never() });
    expect(refunds.map((result) => result.content)).not.toContain(PASSAGES[0]!.content);
    expect(ids(await docs.search("x", { topK: 5, minRelevance: -1, filter: { product: "billing" }, signal: never() }))).toEqual(["invoices.md#2"]);
    // Within one add, the last of an id wins.
    await docs.add([
      { id: "twice", content: "first" },
      { id: "twice", content: "second" },
    ]);
    expect(await docs.count()).toBe(6);
    expect((await docs.search("second", { topK: 1, minRelevance: -1, signal: never() }))[0]).toMatchObject({ sourceId: "twice", content: "second" });
  });

  test("results and their metadata are frozen copies: changing the passage given changes nothing", async () => {
    const docs = await make(lexicalEmbedder());
    made.push(docs);
    const metadata: Record<string, unknown> = { product: "billing" };
    await docs.add([{ id: "a", content: "refunds", metadata: metadata as never }]);
    metadata.product = "changed";
    const [found] = await docs.search("refunds", { topK: 1, minRelevance: -1, signal: never() });
    expect(found!.metadata).toEqual({ product: "billing" });
    expect(Object.isFrozen(found!.metadata)).toBe(true);
    expect(Object.isFrozen(found)).toBe(true);
    expect(() => ((found!.metadata as Record<string, unknown>).product = "x")).toThrow(TypeError);
    expect((await docs.search("refunds", { topK: 1, minRelevance: -1, signal: never() }))[0]!.metadata).toEqual({ product: "billing" });
  });

  test("a search or an add rejects with the signal's reason when it is aborted, before or during the embedding", async () => {
    const docs = await filled();
    const reason = new Error("the call was cancelled");
    const aborted = AbortSignal.abort(reason);
    await expect(docs.search("refunds", { topK: 1, minRelevance: -1, signal: aborted })).rejects.toBe(reason);
    await expect(docs.add([{ id: "late", content: "late" }], { signal: aborted })).rejects.toBe(reason);
    expect(await docs.count()).toBe(5);

    // An embedder that ignores the signal: the retriever still stops once it is aborted.
    const slow = lexicalEmbedder();
    const slowDocs = await make({ model: slow.model, dimensions: slow.dimensions, embed: async (texts) => (await new Promise((resolve) => setTimeout(resolve, 50)), slow.embed(texts)) });
    made.push(slowDocs);
    const controller = new AbortController();
    const adding = slowDocs.add(PASSAGES, { signal: controller.signal });
    controller.abort(reason);
    await expect(adding).rejects.toBe(reason);
    expect(await slowDocs.count()).toBe(0);
    const searching = slowDocs.search("refunds", { topK: 1, minRelevance: -1, signal: AbortSignal.timeout(10) });
    await expect(searching).rejects.toMatchObject({ name: "TimeoutError" });
  });

  test("bad passages are refused with a clear TypeError, and none of their batch is added", async () => {
    const docs = await filled();
    const bad: [unknown, RegExp][] = [
      ["refunds", /add\(passages\) takes an array of \{ id, content, metadata\? \}; got the string "refunds"/],
      [[{ id: "", content: "x" }], /passage 0 needs an id: a non-empty string .*; got the string ""/],
      [[{ id: "ok", content: "x" }, { id: 7, content: "x" }], /passage 1 needs an id: a non-empty string .*; got the number 7/],
      [[{ id: "c", content: null }], /passage 0 \("c"\) needs content: a string; got null/],
      [[{ id: "m", content: "x", metadata: [] }], /passage 0 \("m"\) has metadata that is an array; metadata is a plain object/],
      [[{ id: "m", content: "x", metadata: new Date() }], /has metadata that is an object; metadata is a plain object/],
      [[{ id: "m", content: "x", metadata: { nested: { a: 1 } } }], /has metadata "nested" that is an object; metadata values are strings, finite numbers, booleans or null/],
      [[{ id: "m", content: "x", metadata: { n: Number.NaN } }], /has metadata "n" that is the number NaN/],
      [[null], /passage 0 must be \{ id, content, metadata\? \}; got null/],
    ];
    for (const [passages, message] of bad) await expect(docs.add(passages as Passage[])).rejects.toThrow(message);
    await expect(docs.add([{ id: "fine", content: "x" }, { id: "bad" } as Passage])).rejects.toThrow(TypeError);
    expect(await docs.count()).toBe(5);
  });

  test("bad search options are refused with a clear error", async () => {
    const docs = await filled();
    await expect(docs.search(42 as never, { topK: 1, minRelevance: 0, signal: never() })).rejects.toThrow(/takes the query as a string; got the number 42/);
    await expect(docs.search("x", { topK: 0, minRelevance: 0, signal: never() })).rejects.toThrow(RangeError);
    await expect(docs.search("x", { topK: 1.5, minRelevance: 0, signal: never() })).rejects.toThrow(/option "topK" must be a whole number of 1 or more; got the number 1.5/);
    await expect(docs.search("x", { topK: 1, minRelevance: Number.NaN, signal: never() })).rejects.toThrow(/option "minRelevance" must be a number/);
    await expect(docs.search("x", { topK: 1, minRelevance: 0, filter: { a: { b: 1 } } as never, signal: never() })).rejects.toThrow(/option "filter" has "a" matching an object/);
    await expect(docs.search("x", { topK: 1, minRelevance: 0, filter: "billing" as never, signal: never() })).rejects.toThrow(/option "filter" must be an object of metadata values/);
  });

  test("an embedder's wrong output is a TypeError naming its model and what was wrong, on add and on search", async () => {
    const wrong: [string, (texts: readonly string[]) => unknown, RegExp][] = [
      ["too few", (texts) => texts.slice(1).map(() => [1, 0, 0]), /The embedder "fake-embedder" returned 0 vectors for 1 text; an embedder returns one vector per text, in order/],
      ["too many", (texts) => [...texts, "extra"].map(() => [1, 0, 0]), /The embedder "fake-embedder" returned 2 vectors for 1 text/],
      ["too short", (texts) => texts.map(() => [1, 0]), /The embedder "fake-embedder" returned a vector of 2 numbers for text 0, not 3\. Give the embedder the length of the model's vectors as its dimensions/],
      ["NaN", (texts) => texts.map(() => [1, Number.NaN, 0]), /The embedder "fake-embedder" returned a vector for text 0 whose number 1 is NaN, not a finite number/],
      ["Infinity", (texts) => texts.map(() => [1, 0, Number.POSITIVE_INFINITY]), /whose number 2 is Infinity/],
      ["a string", (texts) => texts.map(() => [1, "0", 0]), /whose number 1 is the string "0"/],
      ["not an array", () => ({ vectors: [] }), /The embedder "fake-embedder" returned an object, not an array of vectors/],
    ];
    for (const [, reply, message] of wrong) {
      const docs = await make(fakeEmbedder(reply));
      made.push(docs);
      await expect(docs.add([{ id: "a", content: "x" }])).rejects.toThrow(message);
      await expect(docs.search("x", { topK: 1, minRelevance: -1, signal: never() })).rejects.toThrow(message);
      expect(await docs.count()).toBe(0);
    }
    // A vector of zeros is allowed: it scores 0 against anything.
    const zeros = await make(fakeEmbedder((texts) => texts.map(() => [0, 0, 0])));
    made.push(zeros);
    await zeros.add([{ id: "z", content: "x" }]);
    expect(await zeros.search("x", { topK: 1, minRelevance: -1, signal: never() })).toEqual([{ sourceId: "z", content: "x", score: 0 }]);
  });

  test('index: "hnsw" past 2,048 passages finds what index: "exact" finds, filtered or not, and passages added after it was built', async () => {
    const embedder = lexicalEmbedder({ dimensions: 128 });
    const passages = wordPassages(2_500);
    const [exact, indexed] = [await make(embedder, { index: "exact" }), await make(embedder, { index: "hnsw" })];
    made.push(exact, indexed);
    for (const docs of [exact, indexed]) for (let from = 0; from < passages.length; from += 500) await docs.add(passages.slice(from, from + 500));
    const found = async (docs: PassageRetriever, query: string, filter?: Passage["metadata"]) =>
      (await docs.search(query, { topK: 5, minRelevance: -1, signal: never(), ...(filter === undefined ? {} : { filter: filter as never }) })).map((result) => [result.sourceId, result.score]);
    let agreed = 0;
    const queries = Array.from({ length: 20 }, (_, index) => `${WORDS[index]} ${WORDS[(index * 7) % WORDS.length]} ${WORDS[(index * 3 + 1) % WORDS.length]}`);
    for (const query of queries) {
      const [want, got] = [await found(exact, query), await found(indexed, query)];
      // The same scores (exact either way), nearly always for the same passages (ties go to the smaller id).
      got.forEach((entry, at) => (entry[1] as number) >= (want[at]![1] as number) - 1e-6 && (agreed += 1));
      expect(await found(indexed, query, { shelf: "rare" })).toEqual(await found(exact, query, { shelf: "rare" }));
    }
    expect(agreed / (queries.length * 5)).toBeGreaterThanOrEqual(0.9);
    for (const docs of [exact, indexed]) await docs.add([{ id: "late", content: "zebra quokka" }]);
    expect((await found(indexed, "zebra quokka"))[0]).toEqual(["late", expect.closeTo(1, 5)]);
  });

  test('index: "hnsw" finds a passage unlike all the others (which a graph search alone misses), alone or in copies, added before or after the index was built', async () => {
    const embedder = lexicalEmbedder();
    const filler = Array.from({ length: 2_100 }, (_, at) => ({ id: `filler-${at}`, content: `lorem ipsum ${at}` }));
    const ask = async (docs: PassageRetriever) => (await docs.search("refunds business days", { topK: 1, minRelevance: 0.5, signal: never() })).map((result) => result.sourceId);
    for (const copies of [1, 3, 6]) {
      const refunds = Array.from({ length: copies }, (_, copy) => ({ id: `refunds-${copy}`, content: "Refunds take five business days." }));
      const before = await make(embedder, { index: "hnsw" });
      const after = await make(embedder, { index: "hnsw" });
      made.push(before, after);
      await before.add([...refunds, ...filler]);
      await after.add(filler);
      await ask(after);
      await after.add(refunds);
      expect(await ask(before)).toEqual(["refunds-0"]);
      expect(await ask(after)).toEqual(["refunds-0"]);
    }
  });

  test('index: "hnsw" past 4,096 passages builds its graph on a thread: searches answer exactly meanwhile, and the same after; close stops a build', async () => {
    const embedder = lexicalEmbedder({ dimensions: 64 });
    const passages = wordPassages(4_500);
    const [exact, indexed, closed] = [await make(embedder, { index: "exact" }), await make(embedder, { index: "hnsw" }), await make(embedder, { index: "hnsw" })];
    made.push(exact, indexed, closed);
    for (const docs of [exact, indexed, closed]) await docs.add(passages);
    const found = async (docs: PassageRetriever, query: string) => (await docs.search(query, { topK: 5, minRelevance: -1, signal: never() })).map((result) => [result.sourceId, result.score]);
    // The first search starts the build and scans: exactly the exact retriever's answer.
    expect(await found(indexed, "refund card week")).toEqual(await found(exact, "refund card week"));
    await indexBuiltOf(indexed);
    let agreed = 0;
    for (const query of ["refund card week", "ship label order", "password account email", "gift price discount"]) {
      const [want, got] = [await found(exact, query), await found(indexed, query)];
      got.forEach((entry, at) => (entry[1] as number) >= (want[at]![1] as number) - 1e-6 && (agreed += 1));
    }
    expect(agreed).toBeGreaterThanOrEqual(18);
    await found(closed, "refund card week");
    await closed.close();
    await indexBuiltOf(closed);
    while (indexBuilds().running + indexBuilds().waiting > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    // A closed retriever starts no build (the memory one scans; the SQLite one refuses).
    await closed.search("refund card week", { topK: 5, minRelevance: -1, signal: never() }).catch(() => undefined);
    expect(indexBuilds()).toEqual({ running: 0, waiting: 0 });
    expect(readdirSync(tmpdir()).filter((name) => name.startsWith(`improv-hnsw-${process.pid}-`))).toEqual([]);
  });

  test('a bad index option is refused, naming the two there are', async () => {
    await expect(make(lexicalEmbedder(), { index: "ivf" as never })).rejects.toThrow(/option "index" must be "exact" \(every search scores every passage\) or "hnsw" \(an approximate index past 2,048 passages\); got the string "ivf"/);
  });

  test("a retriever is refused an embedder that is not one", async () => {
    await expect(make(undefined as never)).rejects.toThrow(/needs \{ embedder \}: an embedder: \{ model, dimensions, embed\(texts\) \}/);
    await expect(make({ model: "m", dimensions: 0, embed: async () => [] })).rejects.toThrow(/its dimensions are the number 0, not a whole number of 1 or more/);
    await expect(make({ model: "", dimensions: 3, embed: async () => [] })).rejects.toThrow(/its model is the string "", not a non-empty string/);
    await expect(make({ model: "m", dimensions: 3 } as never)).rejects.toThrow(/its embed is undefined, not a function/);
  });
});

describe("memoryRetriever options", () => {
  test("unknown options are refused by name", () => {
    expect(() => memoryRetriever({ embedder: lexicalEmbedder(), table: "x" } as never)).toThrow(/Unknown option "table" for memoryRetriever\(\)\. Valid options: embedder, index/);
  });
});
