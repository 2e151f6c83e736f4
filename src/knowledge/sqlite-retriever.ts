/**
 * The embedded retriever: passages in a table of a SQLite file through Node's
 * built-in `node:sqlite`, their vectors as Float32 BLOBs, searched in the process. The file
 * records the embedder's model and dimensions, and refuses another's.
 */
import { mkdirSync } from "node:fs";
import { endianness } from "node:os";
import { dirname, resolve } from "node:path";
import type { DatabaseSync, SQLInputValue, StatementSync } from "node:sqlite";
import { checkOptionNames, describeType, readSnapshot, sqliteDatabase } from "../shared/index.ts";
import type { Embedder, KnowledgeResult, MetadataFilter, Passage, PassageRetriever, SearchOptions } from "./types.ts";
import { INDEX_BUILT, resultsOf, TopK, VectorRows } from "./vector-rows.ts";
import { checkEmbedder, checkIndexOption, checkPassages, checkSearch, cosine, embedNormalised, result, type StoredMetadata } from "./vectors.ts";

/** Options of {@link sqliteRetriever}. */
export interface SqliteRetrieverOptions {
  /** Turns passages and queries into vectors; the file records its model and dimensions and refuses another's. */
  readonly embedder: Embedder;
  /** The table holding the passages (its embedder is recorded in `<table>_meta`). Default: "improv_passages". */
  readonly table?: string | undefined;
  /** How long a write waits for another process's to finish. Default: 5,000. @unit ms */
  readonly busyTimeoutMs?: number | undefined;
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

const OPTION_NAMES: { readonly [K in keyof SqliteRetrieverOptions]-?: true } = { embedder: true, table: true, busyTimeoutMs: true, index: true };

/** How vectors are stored: little-endian Float32, scaled to length 1. Recorded in the meta table. */
const VECTOR_FORMAT = "float32-le-unit";
const LITTLE_ENDIAN = endianness() === "LE";
const MAX_STATEMENTS = 64;
/**
 * The most a retriever keeps in the process between searches: the vectors, and the passages' text
 * too when both fit (counted at two bytes a character); a table whose vectors alone do not is
 * read at every search. @unit bytes
 */
const MAX_CACHE_BYTES = 256 * 2 ** 20;

/** The table as this connection last read it; good while the table has not changed. */
interface VectorCache {
  /** `PRAGMA data_version` when it was read: another connection's commit changes it. */
  readonly version: number;
  readonly rows: VectorRows;
  /** Each row's content, when it fits beside the vectors; undefined when a search reads its winners' content from the table. */
  readonly contents: string[] | undefined;
}

/**
 * A {@link PassageRetriever} on a SQLite file: one table of passages (id, content, metadata as
 * JSON, vector as a Float32 BLOB), in WAL mode with a busy timeout so several processes can add
 * to and search one file. The first use records the embedder's model and dimensions; opening
 * the file with another embedder throws, naming both.
 *
 * A search embeds the query, scores the passages whose metadata matches the filter (inside the
 * search, before `topK`) by cosine similarity in the process, and keeps the best `topK` scoring
 * at least `minRelevance`, best first. The vectors and the passages' text are kept in the
 * process between searches (up to 256 MiB of them) and read again once the table changed, here
 * or in another process; then a search is one statement (SQLite's `data_version`) and the work
 * in the process. When only the vectors fit, a search reads its winners' content from the
 * table; when not even they do, it reads every vector (35 ms for 10,000 passages of 384
 * dimensions, most of it reading the BLOBs).
 *
 * @example
 * const docs = await sqliteRetriever("kb.db", { embedder: openaiEmbedder() });
 * await docs.add([{ id: "refunds.md#2", content: "Refunds take 5 days.", metadata: { product: "billing" } }]);
 */
export async function sqliteRetriever(path: string, options: SqliteRetrieverOptions): Promise<PassageRetriever> {
  if (typeof path !== "string" || path.trim() === "") throw new TypeError(`sqliteRetriever(path, options) takes a file path such as "kb.db" (or ":memory:"); got ${describeType(path)}.`);
  const caller = `sqliteRetriever()`;
  const given = checkOptionNames<SqliteRetrieverOptions>(options, Object.keys(OPTION_NAMES), caller);
  const embedder = checkEmbedder(given.embedder, caller);
  const table = given.table ?? "improv_passages";
  if (typeof table !== "string" || !/^[A-Za-z_][A-Za-z0-9_]{0,57}$/.test(table) || /^sqlite_/i.test(table)) {
    throw new TypeError(`${caller} option "table" must be a table name of letters, digits and _ (up to 58, starting with a letter or _, not sqlite_); got ${describeType(table)}.`);
  }
  const busyTimeoutMs = given.busyTimeoutMs ?? 5_000;
  if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0) throw new RangeError(`${caller} option "busyTimeoutMs" must be a whole number of milliseconds, 0 or more; got ${describeType(busyTimeoutMs)}.`);
  const index = checkIndexOption(given.index, caller);
  return new SqliteRetriever(path === ":memory:" ? path : resolve(path), embedder, table, busyTimeoutMs, index);
}

class SqliteRetriever implements PassageRetriever {
  readonly embedder: Embedder;
  readonly #label: string;
  readonly #db: DatabaseSync;
  readonly #table: string;
  readonly #index: "exact" | "hnsw";
  readonly #statements = new Map<string, StatementSync>();
  #closed = false;
  #cache: VectorCache | undefined;
  /** This connection wrote since the cache was read (its own commits do not change `data_version`). */
  #wrote = true;

  constructor(path: string, embedder: Embedder, table: string, busyTimeoutMs: number, index: "exact" | "hnsw") {
    this.embedder = embedder;
    this.#index = index;
    this.#label = `sqliteRetriever(${JSON.stringify(path)})`;
    this.#table = table;
    try {
      if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
      this.#db = new (sqliteDatabase())(path, { timeout: busyTimeoutMs });
    } catch (error) {
      throw new Error(`${this.#label} cannot open the file: ${(error as Error).message}`, { cause: error });
    }
    try {
      // WAL is a property of the file: set once, kept by every later connection.
      this.#db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;");
      this.#transaction(() => this.#prepareTables());
    } catch (error) {
      this.#db.close();
      if (error instanceof EmbedderMismatch) throw error;
      throw new Error(`${this.#label} cannot open table "${table}": ${(error as Error).message}`, { cause: error });
    }
  }

  /** Makes the tables if they are not there, and records the embedder, or checks it against the one recorded. */
  #prepareTables(): void {
    const table = this.#table;
    const { model, dimensions } = this.embedder;
    this.#db.exec(`CREATE TABLE IF NOT EXISTS "${table}" (id TEXT PRIMARY KEY, content TEXT NOT NULL, metadata TEXT, vector BLOB NOT NULL)`);
    this.#db.exec(`CREATE TABLE IF NOT EXISTS "${table}_meta" (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
    const columns = (this.#db.prepare(`PRAGMA table_info("${table}")`).all() as { name: string }[]).map((column) => column.name);
    for (const column of ["id", "content", "metadata", "vector"]) {
      if (!columns.includes(column)) throw new EmbedderMismatch(`${this.#label}: the table "${table}" is not a table of passages (it has no "${column}" column). Give another { table }.`);
    }
    const meta = new Map((this.#db.prepare(`SELECT key, value FROM "${table}_meta"`).all() as { key: string; value: string }[]).map((row) => [row.key, row.value] as const));
    if (!meta.has("model")) {
      const held = (this.#db.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n;
      if (held > 0) throw new EmbedderMismatch(`${this.#label}: the table "${table}" holds ${held} passages but no record of the embedder that made their vectors. Use a new file or another { table }.`);
      const insert = this.#db.prepare(`INSERT INTO "${table}_meta" (key, value) VALUES (?, ?)`);
      insert.run("model", model);
      insert.run("dimensions", String(dimensions));
      insert.run("vector_format", VECTOR_FORMAT);
      return;
    }
    const fileModel = meta.get("model");
    const fileDimensions = Number(meta.get("dimensions"));
    if (fileModel !== model || fileDimensions !== dimensions) {
      throw new EmbedderMismatch(
        `${this.#label}: the table "${table}" holds vectors of the embedder "${fileModel}" (${fileDimensions} dimensions), not of the embedder given, "${model}" (${dimensions} dimensions): ` +
          "their vectors cannot be compared. Use the same embedder as the file was made with, or a new file (or another { table }) for this one.",
      );
    }
    if (meta.get("vector_format") !== VECTOR_FORMAT) {
      throw new EmbedderMismatch(`${this.#label}: the table "${table}" stores vectors as ${JSON.stringify(meta.get("vector_format"))}, which this improv does not read; use a new file.`);
    }
  }

  async add(passages: readonly Passage[], options: { readonly signal?: AbortSignal | undefined } = {}): Promise<void> {
    this.#open("add passages");
    const checked = checkPassages(passages, "sqliteRetriever()");
    if (checked.length === 0) return;
    const vectors = await embedNormalised(this.embedder, checked.map((passage) => passage.content), options?.signal);
    this.#guard("add passages", () =>
      this.#transaction(() => {
        const upsert = this.#statement(`INSERT INTO "${this.#table}" (id, content, metadata, vector) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET content = excluded.content, metadata = excluded.metadata, vector = excluded.vector`);
        for (const [index, passage] of checked.entries()) {
          upsert.run(passage.id, passage.content, passage.metadata === undefined ? null : JSON.stringify(passage.metadata), toBlob(vectors[index] as Float32Array));
        }
        this.#wrote = true;
      }),
    );
  }

  async search(query: string, options: SearchOptions): Promise<readonly KnowledgeResult[]> {
    this.#open("search");
    const { topK, minRelevance, filter, signal } = checkSearch(query, options, "sqliteRetriever()");
    const [asked] = (await embedNormalised(this.embedder, [query], signal)) as [Float32Array];
    return this.#guard("search", () => {
      // Nothing changed since the table was read, and its text is here too: one statement, no transaction.
      const current = this.#current();
      if (current?.contents !== undefined) return resultsOf(current.rows.search(asked, { topK, minRelevance, filter }), current.rows, current.contents);
      // One snapshot for both reads: the vectors, then the winners' content.
      return readSnapshot(this.#db, () => {
        const cache = this.#cached();
        const best = cache?.rows.search(asked, { topK, minRelevance, filter }) ?? new TopK<number>(topK);
        if (cache?.contents !== undefined) return resultsOf(best, cache.rows, cache.contents);
        if (cache === undefined) {
          const { where, params } = filterSql(filter);
          for (const row of this.#statement(`SELECT id, vector FROM "${this.#table}"${where}`).all(...params) as { id: string; vector: Uint8Array }[]) {
            const score = cosine(asked, this.#vector(row.id, row.vector));
            if (score >= minRelevance && best.admits(score)) best.offer(score, row.id, -1);
          }
        }
        const read = this.#statement(`SELECT content, metadata FROM "${this.#table}" WHERE id = ?`);
        return Object.freeze(
          best.best().map(({ score, key }) => {
            const row = read.get(key) as { content: string; metadata: string | null };
            return result(row.content, score, key, row.metadata === null ? undefined : (Object.freeze(JSON.parse(row.metadata)) as StoredMetadata));
          }),
        );
      });
    });
  }

  /** SQLite's `data_version` for this connection: another connection's commit changes it. */
  #dataVersion(): number {
    return Number((this.#statement("PRAGMA data_version").get() as { data_version: number | bigint }).data_version);
  }

  /** The cache, when it holds the text too and the table has not changed since it was read (here or in another process). */
  #current(): VectorCache | undefined {
    if (this.#cache?.contents === undefined || this.#wrote) return undefined;
    const version = this.#dataVersion();
    return this.#cache.version === version ? this.#cache : undefined;
  }

  /**
   * The vectors kept in the process, read again when the table changed; undefined when they would
   * take more than {@link MAX_CACHE_BYTES}. Inside a read transaction. Read again, the rows are
   * updated in place, so the index (if one was built) only takes in the vectors that changed.
   */
  #cached(): VectorCache | undefined {
    const version = this.#dataVersion();
    if (this.#cache !== undefined && !this.#wrote && this.#cache.version === version) return this.#cache;
    const kept = this.#cache?.rows;
    this.#cache = undefined;
    // Rows read again in part, then failed (a damaged vector, say): let go of, with their index and any build of it.
    try {
      this.#wrote = false;
      const { dimensions } = this.embedder;
      const size = this.#statement(`SELECT count(*) AS n, coalesce(sum(length(content)), 0) AS chars FROM "${this.#table}"`).get() as { n: number | bigint; chars: number | bigint };
      const held = Number(size.n);
      if (held * dimensions * 4 > MAX_CACHE_BYTES) {
        kept?.dispose();
        return undefined;
      }
      const withText = held * dimensions * 4 + Number(size.chars) * 2 <= MAX_CACHE_BYTES;
      const read = this.#statement(`SELECT id, metadata, vector${withText ? ", content" : ""} FROM "${this.#table}"`).all() as { id: string; metadata: string | null; vector: Uint8Array; content?: string }[];
      const contents: string[] | undefined = withText ? [] : undefined;
      const fill = (rows: VectorRows) => {
        for (const row of read) {
          const at = rows.set(row.id, this.#vector(row.id, row.vector), row.metadata === null ? undefined : (Object.freeze(JSON.parse(row.metadata)) as StoredMetadata));
          if (contents !== undefined) contents[at] = row.content as string;
        }
        return rows;
      };
      // Passages gone from the table (removed by other means than this API) leave rows that no longer are: start again.
      const added = kept === undefined ? 0 : read.filter((row) => !kept.has(row.id)).length;
      const rows = kept !== undefined && kept.size + added === read.length ? fill(kept) : fill(new VectorRows(dimensions, held, { index: this.#index }));
      if (rows !== kept) kept?.dispose();
      this.#cache = { version, rows, contents };
      return this.#cache;
    } catch (error) {
      kept?.dispose();
      throw error;
    }
  }

  /** A stored vector, checked to be of the embedder's dimensions. */
  #vector(id: string, blob: Uint8Array): Float32Array {
    const bytes = this.embedder.dimensions * 4;
    if (blob.byteLength !== bytes) throw new Error(`passage "${id}" has a vector of ${blob.byteLength} bytes, not ${bytes}; the table is damaged`);
    return fromBlob(blob);
  }

  /** Settles once no graph of the kept rows is being built on a thread (see `INDEX_BUILT`). */
  async [INDEX_BUILT](): Promise<void> {
    await this.#cache?.rows.indexBuilt();
  }

  async count(): Promise<number> {
    this.#open("count passages");
    return this.#guard("count passages", () => Number((this.#statement(`SELECT count(*) AS n FROM "${this.#table}"`).get() as { n: number | bigint }).n));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#cache?.rows.dispose();
    this.#cache = undefined;
    this.#statements.clear();
    this.#db.close();
  }

  #open(doing: string): void {
    if (this.#closed) throw new Error(`${this.#label} cannot ${doing}: it was closed.`);
  }

  #statement(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      // Filters make many shapes of statement: keep the recent ones.
      if (this.#statements.size >= MAX_STATEMENTS) this.#statements.delete(this.#statements.keys().next().value as string);
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /** Runs `work` in a `BEGIN IMMEDIATE` transaction: the write lock is taken at once (waiting up to the busy timeout), so two writers never deadlock upgrading. */
  #transaction<T>(work: () => T): T {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const done = work();
      this.#db.exec("COMMIT");
      return done;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  /** Runs `work`, naming this retriever and what it was doing in an error; also refuses once closed (a close while embedding). */
  #guard<T>(doing: string, work: () => T): T {
    this.#open(doing);
    try {
      return work();
    } catch (error) {
      throw new Error(`${this.#label} cannot ${doing}: ${(error as Error).message}`, { cause: error });
    }
  }
}

/** An error about the table itself (another embedder's, or not a table of passages): passed on as it is. */
class EmbedderMismatch extends Error {}

/**
 * The SQL of a metadata filter: for each key, a `json_each` row of that key with one of the
 * values wanted, of the same JSON type (so `true` matches `true`, not `1`).
 */
function filterSql(filter: MetadataFilter | undefined): { where: string; params: SQLInputValue[] } {
  if (filter === undefined) return { where: "", params: [] };
  const clauses: string[] = [];
  const params: SQLInputValue[] = [];
  for (const [key, wanted] of Object.entries(filter)) {
    const values = (Array.isArray(wanted) ? wanted : [wanted]) as readonly (string | number | boolean | null)[];
    const matches: string[] = [];
    const valueParams: SQLInputValue[] = [];
    for (const value of values) {
      if (value === null) matches.push("type = 'null'");
      else if (typeof value === "boolean") matches.push(value ? "type = 'true'" : "type = 'false'");
      else if (typeof value === "number") {
        matches.push("(type IN ('integer', 'real') AND atom = ?)");
        valueParams.push(value);
      } else {
        matches.push("(type = 'text' AND atom = ?)");
        valueParams.push(value);
      }
    }
    if (matches.length === 0) {
      clauses.push("0");
      continue;
    }
    clauses.push(`EXISTS (SELECT 1 FROM json_each(metadata) WHERE key = ? AND (${matches.join(" OR ")}))`);
    params.push(key, ...valueParams);
  }
  return { where: clauses.length === 0 ? "" : ` WHERE ${clauses.join(" AND ")}`, params };
}

/** A unit vector as a BLOB of little-endian Float32s. */
function toBlob(vector: Float32Array): Uint8Array {
  if (LITTLE_ENDIAN) return new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
  const view = new DataView(new ArrayBuffer(vector.length * 4));
  for (let index = 0; index < vector.length; index += 1) view.setFloat32(index * 4, vector[index] as number, true);
  return new Uint8Array(view.buffer);
}

/** A BLOB of little-endian Float32s as a vector (a view when it can be one). */
function fromBlob(blob: Uint8Array): Float32Array {
  if (LITTLE_ENDIAN) {
    if (blob.byteOffset % 4 === 0) return new Float32Array(blob.buffer, blob.byteOffset, blob.byteLength / 4);
    return new Float32Array(blob.slice().buffer);
  }
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
  return Float32Array.from({ length: blob.byteLength / 4 }, (_, index) => view.getFloat32(index * 4, true));
}
