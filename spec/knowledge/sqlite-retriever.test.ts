import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, test } from "vitest";
import { lexicalEmbedder } from "../../src/knowledge/embedders.ts";
import { sqliteRetriever } from "../../src/knowledge/sqlite-retriever.ts";
import type { PassageRetriever } from "../../src/knowledge/types.ts";

const dirs: string[] = [];
const open: PassageRetriever[] = [];

afterEach(async () => {
  for (const retriever of open.splice(0)) await retriever.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function freshPath(): string {
  const dir = mkdtempSync(join(tmpdir(), "improv-sqlite-retriever-"));
  dirs.push(dir);
  return join(dir, "nested", "kb.db");
}

async function opened(path: string, options: Parameters<typeof sqliteRetriever>[1]): Promise<PassageRetriever> {
  const retriever = await sqliteRetriever(path, options);
  open.push(retriever);
  return retriever;
}

const never = () => new AbortController().signal;

describe("sqliteRetriever", () => {
  test("the vectors kept between searches are read again once the table changed: by this retriever, by another connection, or by hand", async () => {
    const path = freshPath();
    const embedder = lexicalEmbedder();
    const here = await opened(path, { embedder });
    const there = await opened(path, { embedder });
    const ask = async (query: string) => (await here.search(query, { topK: 1, minRelevance: 0.2, signal: never() })).map((found) => found.sourceId);
    await here.add([{ id: "refunds", content: "Refunds take five business days.", metadata: { topic: "billing" } }]);
    expect(await ask("refunds business days")).toEqual(["refunds"]);
    expect(await ask("parcels ship abroad")).toEqual([]);
    // Another connection (another process, in effect) adds a passage: the next search finds it.
    await there.add([{ id: "shipping", content: "Parcels ship abroad within two weeks.", metadata: { topic: "orders" } }]);
    expect(await ask("parcels ship abroad")).toEqual(["shipping"]);
    // This retriever replaces one: the next search scores the new text.
    await here.add([{ id: "shipping", content: "Gift cards never expire." }]);
    expect(await ask("parcels ship abroad")).toEqual([]);
    expect(await ask("gift cards expire")).toEqual(["shipping"]);
    // A filter is applied to the kept vectors as it is in SQL: by each key's value and type.
    expect((await here.search("refunds business days", { topK: 5, minRelevance: -1, filter: { topic: "orders" }, signal: never() })).map((found) => found.sourceId)).toEqual([]);
    expect((await here.search("refunds business days", { topK: 5, minRelevance: -1, filter: { topic: ["billing", "orders"] }, signal: never() })).map((found) => found.sourceId)).toEqual(["refunds"]);
    // A row deleted by hand through SQLite itself.
    const db = new DatabaseSync(path);
    db.prepare('DELETE FROM "improv_passages" WHERE id = ?').run("refunds");
    db.close();
    expect(await ask("refunds business days")).toEqual([]);
  });

  test("the passages' text kept between searches is the table's: after another connection's write, one by hand, and this retriever's own", async () => {
    const path = freshPath();
    const embedder = lexicalEmbedder();
    const here = await opened(path, { embedder });
    const there = await opened(path, { embedder });
    const ask = async (query: string) => (await here.search(query, { topK: 1, minRelevance: 0.2, signal: never() })).map((found) => [found.sourceId, found.content, found.metadata]);
    await here.add([{ id: "refunds", content: "Refunds take five business days.", metadata: { topic: "billing" } }]);
    expect(await ask("refunds business days")).toEqual([["refunds", "Refunds take five business days.", { topic: "billing" }]]);
    await there.add([{ id: "refunds", content: "Refunds take five business days, or ten abroad.", metadata: { topic: "billing", region: "all" } }]);
    expect(await ask("refunds business days")).toEqual([["refunds", "Refunds take five business days, or ten abroad.", { topic: "billing", region: "all" }]]);
    // Only the text changed, by hand: the vector is the same, the text read is the new one.
    const db = new DatabaseSync(path);
    db.prepare('UPDATE "improv_passages" SET content = ?, metadata = ? WHERE id = ?').run("Refunds: five business days.", '{"topic":"money"}', "refunds");
    db.close();
    expect(await ask("refunds business days")).toEqual([["refunds", "Refunds: five business days.", { topic: "money" }]]);
    await here.add([{ id: "refunds", content: "Refunds take five business days. Gift cards never." }]);
    expect(await ask("refunds business days")).toEqual([["refunds", "Refunds take five business days. Gift cards never.", undefined]]);
  });

  test('with index: "hnsw", the index kept between searches learns what changed: another connection\'s passage, a replaced one, one deleted by hand', async () => {
    const path = freshPath();
    const embedder = lexicalEmbedder({ dimensions: 128 });
    const here = await opened(path, { embedder, index: "hnsw" });
    const there = await opened(path, { embedder, index: "hnsw" });
    const words = "refund order ship card account password label return credit invoice tracking email store gift day week price discount address payment".split(" ");
    // Enough passages that the index is built, each of a few words of one vocabulary.
    await here.add(Array.from({ length: 2_100 }, (_, at) => ({ id: `doc-${at}`, content: [0, 1, 2, 3, 4].map((step) => words[(at * (step + 3) + step * step) % words.length]).join(" ") })));
    const best = async (query: string) => (await here.search(query, { topK: 3, minRelevance: -1, signal: never() })).map((found) => [found.sourceId, Number(found.score.toFixed(4))]);
    const first = "refund card week label zebra";
    expect((await best(first))[0]?.[0]).not.toBe("late");
    await there.add([{ id: "late", content: first }]);
    expect((await best(first))[0]).toEqual(["late", 1]);
    // Replaced here: found by its new words, and no longer by its old ones.
    await here.add([{ id: "late", content: "quokka wombat platypus" }]);
    expect((await best("quokka wombat platypus"))[0]).toEqual(["late", 1]);
    expect((await best(first)).map((found) => found[0])).not.toContain("late");
    // Deleted through SQLite itself: never found again.
    const db = new DatabaseSync(path);
    db.prepare('DELETE FROM "improv_passages" WHERE id = ?').run("late");
    db.close();
    expect((await best("quokka wombat platypus")).map((found) => found[0])).not.toContain("late");
    expect(await here.count()).toBe(2_100);
  });

  test("passages persist across close and reopen, in WAL mode, with vectors as Float32 BLOBs", async () => {
    const path = freshPath();
    const first = await sqliteRetriever(path, { embedder: lexicalEmbedder() });
    await first.add([
      { id: "refunds", content: "Refunds take five business days.", metadata: { product: "billing" } },
      { id: "shipping", content: "Parcels ship within two days." },
    ]);
    const before = await first.search("refunds days", { topK: 2, minRelevance: -1, signal: never() });
    await first.close();
    await first.close();
    await expect(first.count()).rejects.toThrow(/sqliteRetriever\(".*kb\.db"\) cannot count passages: it was closed/);
    await expect(first.search("x", { topK: 1, minRelevance: 0, signal: never() })).rejects.toThrow(/cannot search: it was closed/);

    const again = await opened(path, { embedder: lexicalEmbedder() });
    expect(await again.count()).toBe(2);
    expect(await again.search("refunds days", { topK: 2, minRelevance: -1, signal: never() })).toEqual(before);
    expect(before[0]).toMatchObject({ sourceId: "refunds", metadata: { product: "billing" } });

    const db = new DatabaseSync(path, { readOnly: true });
    try {
      expect(db.prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
      const row = db.prepare("SELECT vector, metadata FROM improv_passages WHERE id = 'refunds'").get() as { vector: Uint8Array; metadata: string };
      expect(row.vector.byteLength).toBe(384 * 4);
      const vector = new Float32Array(row.vector.slice().buffer);
      expect(Math.hypot(...vector)).toBeCloseTo(1, 5);
      expect(JSON.parse(row.metadata)).toEqual({ product: "billing" });
      expect(db.prepare("SELECT key, value FROM improv_passages_meta ORDER BY key").all()).toEqual([
        { key: "dimensions", value: "384" },
        { key: "model", value: "improv-lexical-v1" },
        { key: "vector_format", value: "float32-le-unit" },
      ]);
    } finally {
      db.close();
    }
  });

  test("a file made with another embedder (model or dimensions) is refused, naming both; the right one still opens it", async () => {
    const path = freshPath();
    const made = await sqliteRetriever(path, { embedder: lexicalEmbedder() });
    await made.add([{ id: "a", content: "alpha" }]);
    await made.close();

    await expect(sqliteRetriever(path, { embedder: lexicalEmbedder({ dimensions: 256 }) })).rejects.toThrow(
      /the table "improv_passages" holds vectors of the embedder "improv-lexical-v1" \(384 dimensions\), not of the embedder given, "improv-lexical-v1" \(256 dimensions\).*Use the same embedder as the file was made with, or a new file/,
    );
    const other = { model: "text-embedding-3-small", dimensions: 384, embed: async (texts: readonly string[]) => texts.map(() => new Array<number>(384).fill(1)) };
    await expect(sqliteRetriever(path, { embedder: other })).rejects.toThrow(/holds vectors of the embedder "improv-lexical-v1" \(384 dimensions\), not of the embedder given, "text-embedding-3-small" \(384 dimensions\)/);

    // Another table of the same file can hold the other embedder's vectors.
    const beside = await opened(path, { embedder: other, table: "openai_passages" });
    await beside.add([{ id: "b", content: "beta" }]);
    expect(await beside.count()).toBe(1);
    const right = await opened(path, { embedder: lexicalEmbedder() });
    expect(await right.count()).toBe(1);
  });

  test("a table that is not a table of passages, or holds passages without a recorded embedder, is refused", async () => {
    const path = freshPath();
    const first = await sqliteRetriever(path, { embedder: lexicalEmbedder() });
    await first.add([{ id: "a", content: "alpha" }]);
    await first.close();
    const db = new DatabaseSync(path);
    db.exec("CREATE TABLE people (name TEXT); DELETE FROM improv_passages_meta;");
    db.close();
    await expect(sqliteRetriever(path, { embedder: lexicalEmbedder(), table: "people" })).rejects.toThrow(/the table "people" is not a table of passages \(it has no "id" column\)/);
    await expect(sqliteRetriever(path, { embedder: lexicalEmbedder() })).rejects.toThrow(/holds 1 passages but no record of the embedder that made their vectors/);
  });

  test("options are checked with clear errors", async () => {
    const embedder = lexicalEmbedder();
    await expect(sqliteRetriever("", { embedder })).rejects.toThrow(/takes a file path such as "kb.db"/);
    await expect(sqliteRetriever(freshPath(), { embedder, table: "drop table;" })).rejects.toThrow(/option "table" must be a table name of letters, digits and _/);
    await expect(sqliteRetriever(freshPath(), { embedder, table: "sqlite_master" })).rejects.toThrow(/option "table"/);
    await expect(sqliteRetriever(freshPath(), { embedder, busyTimeoutMs: -1 })).rejects.toThrow(RangeError);
    await expect(sqliteRetriever(freshPath(), { embedder, tabel: "x" } as never)).rejects.toThrow(/Unknown option "tabel" for sqliteRetriever\(\)/);
    await expect(sqliteRetriever(freshPath(), { embedder, index: true } as never)).rejects.toThrow(/option "index" must be "exact" .* or "hnsw" .*; got a boolean\./);
    const memory = await opened(":memory:", { embedder });
    await memory.add([{ id: "m", content: "in memory" }]);
    expect(await memory.count()).toBe(1);
  });

  test("two processes adding to one file at once: every passage of both is there afterwards", async () => {
    const path = freshPath();
    // The file is made first, so both processes open a file whose embedder is recorded.
    await (await sqliteRetriever(path, { embedder: lexicalEmbedder() })).close();
    const retrieverModule = new URL("../../src/knowledge/sqlite-retriever.ts", import.meta.url).href;
    const embedderModule = new URL("../../src/knowledge/embedders.ts", import.meta.url).href;
    // Each opens the file, says "ready", waits for "go", then adds 20 batches of 25 passages,
    // each batch its own transaction, so the two processes' writes interleave.
    const script = `
      const { sqliteRetriever } = await import(${JSON.stringify(retrieverModule)});
      const { lexicalEmbedder } = await import(${JSON.stringify(embedderModule)});
      const [path, who] = process.argv.slice(-2);
      const docs = await sqliteRetriever(path, { embedder: lexicalEmbedder() });
      process.stdout.write("ready\\n");
      await new Promise((resolve) => process.stdin.once("data", resolve));
      const began = Date.now();
      for (let batch = 0; batch < 20; batch += 1) {
        await docs.add(Array.from({ length: 25 }, (_, n) => ({ id: who + "-" + (batch * 25 + n), content: who + " passage " + (batch * 25 + n), metadata: { who } })));
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await docs.close();
      process.stdout.write("done " + began + " " + Date.now() + "\\n");
    `;
    const children = ["left", "right"].map((who) => {
      const child = spawn(process.execPath, ["--input-type=module", "--no-warnings", "-e", script, path, who], { stdio: ["pipe", "pipe", "pipe"] });
      let out = "";
      let err = "";
      child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
      child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
      const ready = new Promise<void>((resolve, reject) => {
        child.stdout.on("data", () => out.includes("ready") && resolve());
        child.once("exit", () => reject(new Error(`child ${who} ended before it was ready: ${err}`)));
      });
      const done = new Promise<{ code: number | null; out: string; err: string }>((resolve) => child.once("exit", (code) => resolve({ code, out, err })));
      return { child, ready, done };
    });
    await Promise.all(children.map((child) => child.ready));
    for (const { child } of children) child.stdin.end("go\n");
    const ended = await Promise.all(children.map((child) => child.done));
    for (const end of ended) expect(end).toMatchObject({ code: 0, out: expect.stringMatching(/^ready\ndone \d+ \d+\n$/), err: "" });
    // They added at the same time: each began before the other ended.
    const [left, right] = ended.map((end) => end.out.split("\n")[1]!.split(" ").slice(1).map(Number)) as [number[], number[]];
    expect(left[0]!).toBeLessThan(right[1]!);
    expect(right[0]!).toBeLessThan(left[1]!);

    const docs = await opened(path, { embedder: lexicalEmbedder() });
    expect(await docs.count()).toBe(1_000);
    for (const who of ["left", "right"]) {
      const found = await docs.search(`${who} passage 499`, { topK: 1, minRelevance: -1, filter: { who }, signal: never() });
      expect(found[0]).toMatchObject({ sourceId: `${who}-499`, content: `${who} passage 499` });
      const db = new DatabaseSync(path, { readOnly: true });
      try {
        expect(db.prepare("SELECT count(*) AS n FROM improv_passages WHERE id LIKE ?").get(`${who}-%`)).toEqual({ n: 500 });
      } finally {
        db.close();
      }
    }
  });
});
