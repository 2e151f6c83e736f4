/**
 * The rows both in-process retrievers search: a scan scores every row by its dot product with the
 * asked vector, whatever the number of dimensions (it sums four at a time); past a few thousand
 * rows an HNSW index proposes candidates, each scored exactly.
 */
import fs, { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, test } from "vitest";
import { indexBuilds, MAX_THREAD_BUILDS } from "../../src/knowledge/index-build.ts";
import { vectorIndexAvailable } from "../../src/knowledge/vector-index.ts";
import { INDEX_MIN_ROWS, TopK, VectorRows } from "../../src/knowledge/vector-rows.ts";
import { dotAt, dotFour } from "../../src/knowledge/vectors.ts";

function vectorsOf(count: number, dimensions: number, seed: number): Float32Array[] {
  let state = seed;
  const next = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31 - 0.5;
  return Array.from({ length: count }, () => {
    const vector = Float32Array.from({ length: dimensions }, next);
    const length = Math.hypot(...vector);
    return vector.map((value) => value / length);
  });
}

describe("VectorRows.scan", () => {
  test.each([1, 3, 4, 7, 384, 385])("with %i dimensions, the best rows and their scores are those of a plain dot product", (dimensions) => {
    const vectors = vectorsOf(200, dimensions, dimensions);
    const rows = new VectorRows(dimensions, 8);
    vectors.forEach((vector, index) => rows.set(`row-${index}`, vector, index % 2 === 0 ? { half: "even" } : undefined));
    const [asked] = vectorsOf(1, dimensions, 99) as [Float32Array];
    const dot = (vector: Float32Array) => vector.reduce((sum, value, index) => sum + value * (asked[index] as number), 0);
    const expected = vectors
      .map((vector, index) => ({ key: `row-${index}`, score: Math.min(1, Math.max(-1, dot(vector))), index }))
      .filter(({ index }) => index % 2 === 0)
      .sort((a, b) => b.score - a.score || (a.key < b.key ? -1 : 1))
      .slice(0, 10);
    const best = new TopK<number>(10);
    rows.scan(asked, { half: ["even"] }, Number.NEGATIVE_INFINITY, best);
    const found = best.best();
    expect(found.map((entry) => entry.key)).toEqual(expected.map((entry) => entry.key));
    found.forEach((entry, at) => expect(entry.score).toBeCloseTo(expected[at]!.score, 6));
  });
});

describe("dotFour", () => {
  test.each([1, 3, 4, 7, 384, 385])("with %i dimensions, each of four rows' sums is exactly dotAt's", (dimensions) => {
    const vectors = vectorsOf(9, dimensions, dimensions + 7);
    const matrix = new Float32Array(9 * dimensions);
    vectors.forEach((vector, row) => matrix.set(vector, row * dimensions));
    const [asked] = vectorsOf(1, dimensions, 5) as [Float32Array];
    const into = new Float64Array(4);
    for (const rows of [[0, 1, 2, 3], [8, 3, 3, 5], [7, 0, 6, 4]] as const) {
      dotFour(asked, matrix, [rows[0] * dimensions, rows[1] * dimensions, rows[2] * dimensions, rows[3] * dimensions], dimensions, into);
      expect(Array.from(into)).toEqual(rows.map((row) => dotAt(asked, matrix, row * dimensions, dimensions)));
    }
  });
});

/** `count` rows of `dimensions` in `topics` tight groups (like sentence embeddings of documents on a few subjects), the same groups whatever the `seed`. */
function topicalVectors(count: number, dimensions: number, topics: number, seed: number): Float32Array[] {
  let state = seed;
  const next = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31 - 0.5;
  const centres = vectorsOf(topics, dimensions, 1);
  return Array.from({ length: count }, (_, index) => {
    const centre = centres[index % topics] as Float32Array;
    const vector = centre.map((value) => value + next() * 0.08);
    const length = Math.hypot(...vector);
    return vector.map((value) => value / length);
  });
}

/** The best `topK` of `rows` for `asked` by a scan: the answer an index is held to. */
function scanned(rows: VectorRows, asked: Float32Array, topK: number, filter?: Record<string, string[]>) {
  const best = new TopK<number>(topK);
  rows.scan(asked, filter, Number.NEGATIVE_INFINITY, best);
  return best.best();
}

describe("VectorRows.search through the index (usearch)", () => {
  const dimensions = 64;
  const count = INDEX_MIN_ROWS + 1_000;
  const vectors = topicalVectors(count, dimensions, 50, 7);
  /** The rows, with `{ index: "hnsw" }` unless other options are given. */
  const fill = (options: { readonly index?: "exact" | "hnsw" } = { index: "hnsw" }) => {
    const rows = new VectorRows(dimensions, 64, options);
    vectors.forEach((vector, at) => rows.set(`row-${at}`, vector, { group: at % 100 === 0 ? "rare" : "common" }));
    return rows;
  };
  const search = { topK: 5, minRelevance: Number.NEGATIVE_INFINITY, filter: undefined };

  test("usearch loads here, so these tests measure the index and not the scan", () => {
    expect(vectorIndexAvailable()).toBe(true);
  });

  test("below the threshold nothing is indexed; past it every row is, and what it finds is scored exactly and nearly always the scan's best", () => {
    const small = new VectorRows(dimensions, 64, { index: "hnsw" });
    vectors.slice(0, INDEX_MIN_ROWS - 1).forEach((vector, at) => small.set(`row-${at}`, vector, undefined));
    small.search(vectors[0] as Float32Array, search);
    expect(small.indexed).toBe(0);

    const rows = fill();
    const queries = topicalVectors(60, dimensions, 50, 99);
    let agreed = 0;
    for (const asked of queries) {
      const found = rows.search(asked, search).best();
      expect(found).toHaveLength(5);
      const exact = scanned(rows, asked, 5);
      for (const [at, entry] of found.entries()) {
        // Every score is the row's exact cosine, whichever way the row was found.
        const row = vectors[entry.item] as Float32Array;
        expect(entry.score).toBeCloseTo(row.reduce((sum, value, index) => sum + value * (asked[index] as number), 0), 5);
        if (entry.score >= (exact[at] as { score: number }).score - 1e-6) agreed += 1;
      }
    }
    expect(rows.indexed).toBe(count);
    // Approximate: measured 100% for queries on the rows' topics; 90% leaves room for another build of the graph.
    expect(agreed / (queries.length * 5)).toBeGreaterThanOrEqual(0.9);
  });

  test('index: "exact", as by default, never builds one, and finds exactly what a scan finds', () => {
    const byDefault = fill({});
    expect(byDefault.search(vectors[3] as Float32Array, search).best()).toEqual(scanned(byDefault, vectors[3] as Float32Array, 5));
    expect(byDefault.indexed).toBe(0);
    const rows = fill({ index: "exact" });
    const [asked] = topicalVectors(1, dimensions, 50, 5) as [Float32Array];
    expect(rows.search(asked, search).best()).toEqual(scanned(rows, asked, 5));
    expect(rows.indexed).toBe(0);
  });

  test("a filter that few candidates pass still fills topK, with the scan's answer", () => {
    const rows = fill();
    for (const asked of topicalVectors(10, dimensions, 50, 11)) {
      const filter = { group: ["rare"] };
      const found = rows.search(asked, { ...search, topK: 8, filter }).best();
      expect(found.map((entry) => entry.key)).toEqual(scanned(rows, asked, 8, filter).map((entry) => entry.key));
    }
  });

  test("a row set again is found by its new vector and no longer by its old one; a row added after the index was built is found too", () => {
    const rows = fill();
    const [fresh] = vectorsOf(1, dimensions, 1234) as [Float32Array];
    rows.search(fresh, search);
    const old = vectors[17] as Float32Array;
    rows.set("row-17", fresh, undefined);
    rows.set("added", old, undefined);
    const forFresh = rows.search(fresh, search).best()[0];
    expect(forFresh).toMatchObject({ key: "row-17" });
    expect(forFresh?.score).toBeCloseTo(1, 5);
    const forOld = rows.search(old, search).best();
    expect(forOld[0]).toMatchObject({ key: "added" });
    expect(forOld.map((entry) => entry.key)).not.toContain("row-17");
    expect(rows.indexed).toBe(count + 1);
  });

  test("an all-zero query scores every row 0 and gets the scan's answer (the smallest ids)", () => {
    const rows = fill();
    const zero = new Float32Array(dimensions);
    expect(rows.search(zero, search).best()).toEqual(scanned(rows, zero, 5));
  });

  test("rows of all zeros (empty passages) stay out of the graph and are no outliers, and searches still find what a scan finds", () => {
    const rows = new VectorRows(dimensions, 64, { index: "hnsw" });
    vectors.forEach((vector, at) => rows.set(`row-${at}`, at % 3 === 0 ? new Float32Array(dimensions) : vector, undefined));
    const queries = topicalVectors(20, dimensions, 50, 21);
    for (const asked of queries) expect(rows.search(asked, search).best().map((entry) => entry.score)).toEqual(scanned(rows, asked, 5).map((entry) => entry.score));
    expect(rows.indexed).toBe(count);
    // A third of the rows are zeros: were they outliers, every search would scan.
    expect(rows.outliers).toBeLessThan(count / 20);
    // Asked for more than the rows that score above 0, the zeros fill the answer as a scan's do (score 0, smallest ids first).
    const [far] = vectorsOf(1, dimensions, 4321) as [Float32Array];
    expect(rows.search(far, { ...search, topK: 40, minRelevance: 0 }).best()).toEqual(scanned(rows, far, 40).filter((entry) => entry.score >= 0));
  });

  test("copies of a passage unlike the rest are scored at every search: the graph does not lead to them", () => {
    const rows = new VectorRows(dimensions, 64, { index: "hnsw" });
    const centre = topicalVectors(1, dimensions, 1, 3)[0] as Float32Array;
    vectors.forEach((vector, at) => rows.set(`row-${at}`, vector, undefined));
    const [odd] = vectorsOf(1, dimensions, 777) as [Float32Array];
    for (let copy = 0; copy < 4; copy += 1) rows.set(`odd-${copy}`, odd, undefined);
    const asked = odd.map((value, at) => value + (centre[at] as number) * 0.3);
    // The four copies are the best; what comes after them is far from the query, where the graph may pick another near-tie.
    expect(rows.search(asked, { ...search, topK: 4 }).best().map((entry) => entry.key)).toEqual(["odd-0", "odd-1", "odd-2", "odd-3"]);
    expect(scanned(rows, asked, 4).map((entry) => entry.key)).toEqual(["odd-0", "odd-1", "odd-2", "odd-3"]);
  });

  test("passages present in many copies (more than a search for one finds) are no outliers when their topic has others", () => {
    const rows = new VectorRows(dimensions, 64, { index: "hnsw" });
    const distinct = topicalVectors(300, dimensions, 30, 41);
    for (let copy = 0; copy < 10; copy += 1) distinct.forEach((vector, at) => rows.set(`row-${at}-copy-${copy}`, vector, undefined));
    const asked = topicalVectors(1, dimensions, 30, 43)[0] as Float32Array;
    expect(rows.search(asked, search).best().map((entry) => entry.score)).toEqual(scanned(rows, asked, 5).map((entry) => entry.score));
    // Were the copies outliers, every search would scan them all.
    expect(rows.outliers).toBeLessThan(300);
  });

  test("a search takes in at most 1,024 rows the index lacks, and scores the rest exactly meanwhile: the answer is a scan's all along", () => {
    const rows = fill();
    const queries = topicalVectors(6, dimensions, 50, 51);
    const taken: number[] = [];
    for (const asked of queries) {
      const found = rows.search(asked, search).best();
      // While rows wait, the search scans; once all are in, the graph answers (by score: a tie may fall either way).
      if (rows.indexed < count) expect(found).toEqual(scanned(rows, asked, 5));
      else expect(found.map((entry) => entry.score)).toEqual(scanned(rows, asked, 5).map((entry) => entry.score));
      taken.push(rows.indexed);
    }
    expect(taken).toEqual([1_024, 2_048, count, count, count, count]);
  });

  test("when usearch fails part-way (out of memory, say), searches scan from then on and never fail", () => {
    const { Index } = createRequire(import.meta.url)("usearch") as { Index: { prototype: { add: (this: unknown, keys: BigUint64Array, vectors: Float32Array, threads: number) => void } } };
    const add = Index.prototype.add;
    Index.prototype.add = function (this: unknown, keys: BigUint64Array, rowVectors: Float32Array, threads: number) {
      // Half the rows go in, as with the addon's threads, then it throws.
      const half = Math.floor(keys.length / 2);
      add.call(this, keys.slice(0, half), rowVectors.slice(0, half * dimensions), threads);
      throw new Error("Out of memory!");
    };
    try {
      const rows = fill();
      for (const asked of topicalVectors(3, dimensions, 50, 31)) expect(rows.search(asked, search).best()).toEqual(scanned(rows, asked, 5));
      expect(rows.indexed).toBe(0);
    } finally {
      Index.prototype.add = add;
    }
  });
});

describe("VectorRows: a large first graph is built on a thread of its own", () => {
  const dimensions = 64;
  const count = 5_000;
  const vectors = topicalVectors(count, dimensions, 50, 61);
  const search = { topK: 5, minRelevance: Number.NEGATIVE_INFINITY, filter: undefined };
  const fill = () => {
    const rows = new VectorRows(dimensions, 64, { index: "hnsw" });
    vectors.forEach((vector, at) => rows.set(`row-${at}`, vector, undefined));
    return rows;
  };
  /** Until no build runs or waits (a stopped one's thread may take a moment to go). */
  const threadsGone = async () => {
    while (indexBuilds().running + indexBuilds().waiting > 0) await new Promise((resolve) => setTimeout(resolve, 10));
  };
  // Each test's builds start at once: none of an earlier test's still holds a turn.
  beforeEach(threadsGone);
  /** The build files of this process left in the temporary folder. */
  const leftFiles = () => readdirSync(tmpdir()).filter((name) => name.startsWith(`improv-hnsw-${process.pid}-`));

  test("searches scan until it is in, take nothing in on the caller's thread, and then use it; its file is gone", async () => {
    const rows = fill();
    const queries = topicalVectors(4, dimensions, 50, 71);
    expect(rows.search(queries[0] as Float32Array, search).best()).toEqual(scanned(rows, queries[0] as Float32Array, 5));
    expect(rows.indexed).toBe(0);
    await rows.indexBuilt();
    expect(rows.indexed).toBe(count);
    for (const asked of queries) expect(rows.search(asked, search).best().map((entry) => entry.score)).toEqual(scanned(rows, asked, 5).map((entry) => entry.score));
    await threadsGone();
    expect(leftFiles()).toEqual([]);
  });

  test("rows set again or added while it builds wait to be taken in, and searches find their new vectors", async () => {
    const rows = fill();
    const [asked] = topicalVectors(1, dimensions, 50, 81) as [Float32Array];
    rows.search(asked, search);
    // Row 7 moves onto the query, a new row sits next to it; both are newer than the thread's copy.
    rows.set("row-7", asked, undefined);
    rows.set("row-new", asked.map((value, at) => (at === 0 ? value + 0.01 : value)), undefined);
    await rows.indexBuilt();
    expect(rows.indexed).toBe(count - 1);
    const found = rows.search(asked, search).best();
    expect(found.slice(0, 2).map((entry) => entry.key)).toEqual(["row-7", "row-new"]);
    expect(found.map((entry) => entry.score)).toEqual(scanned(rows, asked, 5).map((entry) => entry.score));
    expect(rows.indexed).toBe(count + 1);
  });

  test("a thread that cannot hand its graph over (no temporary folder) leaves the searches to build it, 1,024 rows at a time", async () => {
    const before = process.env.TMPDIR;
    process.env.TMPDIR = join(tmpdir(), `improv-missing-${process.pid}`, "nowhere");
    try {
      const rows = fill();
      const [asked] = topicalVectors(1, dimensions, 50, 91) as [Float32Array];
      rows.search(asked, search);
      await rows.indexBuilt();
      expect(rows.indexed).toBe(0);
      expect(rows.search(asked, search).best()).toEqual(scanned(rows, asked, 5));
      expect(rows.indexed).toBe(1_024);
    } finally {
      if (before === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = before;
    }
  });

  test("many retrievers' graphs are built a few at a time (a core left to the application); one dropped while it waits never starts, one stopped keeps its turn until its thread is gone", async () => {
    const many = Array.from({ length: MAX_THREAD_BUILDS + 2 }, () => fill());
    const [asked] = topicalVectors(1, dimensions, 50, 99) as [Float32Array];
    for (const rows of many) expect(rows.search(asked, search).best()).toEqual(scanned(rows, asked, 5));
    expect(indexBuilds()).toEqual({ running: MAX_THREAD_BUILDS, waiting: 2 });
    many.at(-1)?.dispose();
    expect(indexBuilds()).toEqual({ running: MAX_THREAD_BUILDS, waiting: 1 });
    // Native code cannot be stopped mid-way: the next build waits for the stopped one's thread to be gone.
    many[0]?.dispose();
    expect(indexBuilds()).toEqual({ running: MAX_THREAD_BUILDS, waiting: 1 });
    await Promise.all(many.map((rows) => rows.indexBuilt()));
    expect(many.map((rows) => rows.indexed)).toEqual([0, ...Array.from({ length: MAX_THREAD_BUILDS }, () => count), 0]);
    await threadsGone();
  });

  test("a build file that cannot be removed (still open, on Windows) costs no turn, and throws nowhere", async () => {
    const remove = fs.rmSync;
    let refused = 0;
    fs.rmSync = ((...args: Parameters<typeof fs.rmSync>) => {
      if (String(args[0]).includes("improv-hnsw-") && refused === 0) {
        refused += 1;
        throw Object.assign(new Error("EBUSY: resource busy or locked"), { code: "EBUSY" });
      }
      return remove(...args);
    }) as typeof fs.rmSync;
    syncBuiltinESMExports();
    try {
      const [first, second] = [fill(), fill()];
      const [asked] = topicalVectors(1, dimensions, 50, 97) as [Float32Array];
      first.search(asked, search);
      first.dispose();
      second.search(asked, search);
      await threadsGone();
      expect(refused).toBe(1);
      expect(second.indexed).toBe(count);
    } finally {
      fs.rmSync = remove;
      syncBuiltinESMExports();
    }
  });

  test("a build never keeps the process alive, unless its end is awaited", async () => {
    const script = join(mkdtempSync(join(tmpdir(), "improv-build-exit-")), "exits.ts");
    const rowsModule = pathToFileURL(fileURLToPath(new URL("../../src/knowledge/vector-rows.ts", import.meta.url))).href;
    writeFileSync(
      script,
      `import { VectorRows } from ${JSON.stringify(rowsModule)};
      const rows = new VectorRows(64, 64, { index: "hnsw" });
      let seed = 5;
      const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31 - 0.5;
      for (let at = 0; at < 20_000; at += 1) rows.set("row-" + at, Float32Array.from({ length: 64 }, next), undefined);
      rows.search(Float32Array.from({ length: 64 }, next), { topK: 5, minRelevance: -1, filter: undefined });
      // Had the process waited for the build, its graph would be in by now.
      process.on("exit", () => console.log("indexed at exit: " + rows.indexed));
      if (process.argv[2] === "await") await rows.indexBuilt();`,
    );
    const run = (...args: string[]) => spawnSync(process.execPath, ["--no-node-snapshot", script, ...args], { encoding: "utf8" });
    const left = run();
    expect(left.stderr).toBe("");
    expect(left.stdout.trim()).toBe("indexed at exit: 0");
    const awaited = run("await");
    expect(awaited.stderr).toBe("");
    expect(awaited.stdout.trim()).toBe("indexed at exit: 20000");
  });

  test("disposed while it builds, the thread stops and nothing is taken in", async () => {
    const rows = fill();
    const [asked] = topicalVectors(1, dimensions, 50, 95) as [Float32Array];
    rows.search(asked, search);
    rows.dispose();
    await rows.indexBuilt();
    expect(rows.indexed).toBe(0);
    await threadsGone();
    expect(rows.indexed).toBe(0);
    expect(leftFiles()).toEqual([]);
  });
});
