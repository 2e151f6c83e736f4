/**
 * The retriever for many processes and hosts: passages in a PostgreSQL table with
 * the `pgvector` extension, searched by the server. The database records the embedder's model
 * and dimensions, and refuses another's. `pg` is loaded only when one is made.
 */
import { connect as connectSocket } from "node:net";
import type pg from "pg";
import { checkOptionNames, describeType, postgresLabel } from "../shared/index.ts";
import type { Embedder, KnowledgeResult, MetadataFilter, Passage, PassageRetriever, SearchOptions } from "./types.ts";
import { checkEmbedder, checkPassages, checkSearch, embedNormalised, result, type CheckedPassage, type StoredMetadata } from "./vectors.ts";

/** Options of {@link pgvectorRetriever}. */
export interface PgvectorRetrieverOptions {
  /** Turns passages and queries into vectors; the database records its model and dimensions and refuses another's. */
  readonly embedder: Embedder;
  /** The table holding the passages (its embedder is recorded in `<table>_meta`). Default: "improv_passages". */
  readonly table?: string | undefined;
  /** Most connections the pool it makes opens at once (not with `{ pool }`). Default: 10. */
  readonly maxConnections?: number | undefined;
  /**
   * How searches find the nearest passages. `"exact"` (the default) compares the query with
   * every passage the filter keeps: always the true best `topK`. `"hnsw"` also makes an HNSW
   * index (`vector_ip_ops`), which is approximate: much faster on large tables, but it may miss
   * a close passage, and on pgvector before 0.8 a filtered search may return fewer than `topK`.
   * A table that already has an HNSW index is searched through it either way.
   */
  readonly index?: "exact" | "hnsw" | undefined;
}

/**
 * Where the passages are: a postgres:// URL (the retriever makes and ends its pool), or the
 * application's `pg` pool (a `pg.Pool`, left open). Typed structurally, so these declarations do
 * not need `pg`'s own.
 */
export type PgvectorDatabase = string | { readonly pool: PgPoolLike };

/** What the retriever uses of a `pg.Pool`. */
export interface PgPoolLike {
  connect(): Promise<unknown>;
}

const OPTION_NAMES: { readonly [K in keyof PgvectorRetrieverOptions]-?: true } = { embedder: true, table: true, maxConnections: true, index: true };
const CALLER = "pgvectorRetriever()";

/** How vectors are stored: pgvector's `vector`, scaled to length 1. Recorded in the meta table. */
const VECTOR_FORMAT = "pgvector-unit";
/** pgvector's limits: a `vector` column, and an HNSW index on one. */
const MAX_DIMENSIONS = 16_000;
const MAX_HNSW_DIMENSIONS = 2_000;
/** Rows per INSERT of an `add`: bounds one statement's size (256 × 1,536 dimensions ≈ 4 MB of text). */
const ROWS_PER_INSERT = 256;
/** Serialises enabling pgvector and making tables and indexes across processes (an arbitrary, fixed advisory lock key). */
const SETUP_LOCK = 4_821_338;
/** Like PostgresStore's: a connection that cannot be made, or a query with no answer, fails instead of waiting forever. */
const CONNECTION_LIMITS = { connectionTimeoutMillis: 10_000, query_timeout: 60_000, keepAlive: true } as const;

/**
 * A {@link PassageRetriever} on PostgreSQL with pgvector: one table of passages (`id text
 * primary key, content text, metadata jsonb, embedding vector(<dimensions>)`) and `<table>_meta`
 * recording the embedder's model and dimensions; opening it with another embedder throws,
 * naming both. Opening enables the extension (`CREATE EXTENSION IF NOT EXISTS vector`) and
 * makes the tables if they are not there; a server without pgvector is refused with how to
 * install it.
 *
 * `add` embeds the passages, then upserts them in one transaction (all or none). A search embeds
 * the query and asks the server for the best `topK` by inner product (`<#>`: the vectors are
 * stored scaled to length 1, so it is their cosine similarity, the score, -1 to 1; a text whose
 * vector is all zeros scores 0, as in the other retrievers), with the metadata filter in the SQL
 * (`metadata @> …` on a GIN index, before `topK`) and `minRelevance` applied to what it
 * returns. Searches are exact unless the table has an HNSW index (`index: "hnsw"`): on a local
 * PostgreSQL 15, about 1 ms for 1,000 passages of 384 dimensions and 15 ms for 10,000 (2 ms
 * through HNSW, whose index makes adding about 8 times slower). An aborted signal rejects at once
 * with its reason, and a statement in flight is cancelled on the server (a CancelRequest).
 *
 * @example
 * const docs = await pgvectorRetriever("postgres://app@db:5432/app", { embedder: openaiEmbedder() });
 * await docs.add([{ id: "refunds.md#2", content: "Refunds take 5 days.", metadata: { product: "billing" } }]);
 */
export async function pgvectorRetriever(database: PgvectorDatabase, options: PgvectorRetrieverOptions): Promise<PassageRetriever> {
  const given = checkOptionNames<PgvectorRetrieverOptions>(options, Object.keys(OPTION_NAMES), CALLER);
  const embedder = checkEmbedder(given.embedder, CALLER);
  const table = given.table ?? "improv_passages";
  if (typeof table !== "string" || !/^[A-Za-z_][A-Za-z0-9_]{0,47}$/.test(table) || /^pg_/i.test(table)) {
    throw new TypeError(`${CALLER} option "table" must be a table name of letters, digits and _ (up to 48, starting with a letter or _, not pg_); got ${describeType(table)}.`);
  }
  const index = given.index ?? "exact";
  if (index !== "exact" && index !== "hnsw") throw new TypeError(`${CALLER} option "index" must be "exact" or "hnsw"; got ${describeType(index)}.`);
  if (embedder.dimensions > MAX_DIMENSIONS) throw new RangeError(`${CALLER}: the embedder "${embedder.model}" makes vectors of ${embedder.dimensions} dimensions; pgvector's vector holds at most ${MAX_DIMENSIONS}.`);
  if (index === "hnsw" && embedder.dimensions > MAX_HNSW_DIMENSIONS) {
    throw new RangeError(`${CALLER}: the embedder "${embedder.model}" makes vectors of ${embedder.dimensions} dimensions; pgvector's HNSW index takes at most ${MAX_HNSW_DIMENSIONS}. Use index: "exact", or an embedder with fewer dimensions.`);
  }

  let pool: pg.Pool;
  let owned: boolean;
  let label: string;
  if (typeof database === "string") {
    if (!/^postgres(ql)?:\/\//i.test(database)) throw new TypeError(`${CALLER} takes a postgres:// URL (such as "postgres://app@127.0.0.1:5432/app") or { pool }; got ${describeType(database)}.`);
    const maxConnections = given.maxConnections ?? 10;
    if (!Number.isSafeInteger(maxConnections) || maxConnections < 1) throw new RangeError(`${CALLER} option "maxConnections" must be a whole number of 1 or more; got ${describeType(maxConnections)}.`);
    label = `pgvectorRetriever(${JSON.stringify(postgresLabel(database))})`;
    const { Pool } = await loadPg();
    pool = new Pool({ connectionString: database, max: maxConnections, allowExitOnIdle: true, ...CONNECTION_LIMITS });
    // A connection that drops while idle must not crash the process; the next query reconnects.
    pool.on("error", () => undefined);
    pool.on("connect", (client) => client.on("error", () => undefined));
    owned = true;
  } else {
    const appPool = typeof database === "object" && database !== null ? (database as { pool?: unknown }).pool : undefined;
    if (typeof appPool !== "object" || appPool === null || typeof (appPool as { connect?: unknown }).connect !== "function") {
      throw new TypeError(`${CALLER} takes a postgres:// URL (such as "postgres://app@127.0.0.1:5432/app") or { pool }, a pg.Pool; got ${database === null || typeof database !== "object" ? describeType(database) : `{ pool: ${describeType(appPool)} }`}.`);
    }
    if (given.maxConnections !== undefined) throw new TypeError(`${CALLER} option "maxConnections" sizes the pool it makes from a URL; with { pool }, size your pool instead.`);
    pool = appPool as pg.Pool;
    owned = false;
    label = "pgvectorRetriever({ pool })";
  }

  const retriever = new PgvectorRetriever(label, pool, owned, embedder, table);
  try {
    await retriever.prepare(index);
  } catch (error) {
    await retriever.close().catch(() => undefined);
    throw error;
  }
  return retriever;
}

/** Runs one statement on the retriever's connection: with `signal`, an abort rejects at once and cancels it on the server. */
type Run = <R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: readonly unknown[], signal?: AbortSignal) => Promise<pg.QueryResult<R>>;

/** A connection as `work` sees it: statements run on it, and whether an abort left it unusable (a statement still running). */
interface Connection {
  readonly run: Run;
  readonly broken: boolean;
}

class PgvectorRetriever implements PassageRetriever {
  readonly embedder: Embedder;
  readonly #label: string;
  readonly #pool: pg.Pool;
  readonly #owned: boolean;
  readonly #table: string;
  /** Whether the table has an HNSW index (searches then set its search options; checked on opening), and whether pgvector can scan it iteratively (0.8+). */
  #hnsw = false;
  #iterative = false;
  #closed = false;
  #ended: Promise<void> | undefined;

  constructor(label: string, pool: pg.Pool, owned: boolean, embedder: Embedder, table: string) {
    this.#label = label;
    this.#pool = pool;
    this.#owned = owned;
    this.embedder = embedder;
    this.#table = table;
  }

  /** Enables pgvector, makes the tables if they are not there, and records the embedder, or checks it against the one recorded. */
  async prepare(index: "exact" | "hnsw"): Promise<void> {
    const table = this.#table;
    const { model, dimensions } = this.embedder;
    await this.#use(`open table "${table}"`, undefined, async (connection) =>
      transaction(connection, async (run) => {
        await run("SELECT pg_advisory_xact_lock($1)", [SETUP_LOCK]);
        const version = await this.#enableVector(run);
        this.#iterative = atLeast(version, [0, 8, 0]);
        await run(`CREATE TABLE IF NOT EXISTS "${table}" (id text PRIMARY KEY, content text NOT NULL, metadata jsonb, embedding vector(${dimensions}) NOT NULL)`);
        await run(`CREATE TABLE IF NOT EXISTS "${table}_meta" (key text PRIMARY KEY, value text NOT NULL)`);
        const columns = new Map(
          (
            await run<{ name: string; type: string }>(
              "SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped",
              [`"${table}"`],
            )
          ).rows.map((column) => [column.name, column.type] as const),
        );
        for (const column of ["id", "content", "metadata", "embedding"]) {
          if (!columns.has(column)) throw new TableError(`${this.#label}: the table "${table}" is not a table of passages (it has no "${column}" column). Give another { table }.`);
        }
        const meta = new Map((await run<{ key: string; value: string }>(`SELECT key, value FROM "${table}_meta"`)).rows.map((row) => [row.key, row.value] as const));
        if (!meta.has("model")) {
          const held = Number((await run<{ n: string }>(`SELECT count(*) AS n FROM "${table}"`)).rows[0]?.n);
          if (held > 0) throw new TableError(`${this.#label}: the table "${table}" holds ${held} passages but no record of the embedder that made their vectors. Give another { table }.`);
          await run(`INSERT INTO "${table}_meta" (key, value) VALUES ('model', $1), ('dimensions', $2), ('vector_format', $3)`, [model, String(dimensions), VECTOR_FORMAT]);
        } else {
          const tableModel = meta.get("model");
          const tableDimensions = Number(meta.get("dimensions"));
          if (tableModel !== model || tableDimensions !== dimensions) {
            throw new TableError(
              `${this.#label}: the table "${table}" holds vectors of the embedder "${tableModel}" (${tableDimensions} dimensions), not of the embedder given, "${model}" (${dimensions} dimensions): ` +
                "their vectors cannot be compared. Use the same embedder as the table was made with, or another { table } for this one.",
            );
          }
          if (meta.get("vector_format") !== VECTOR_FORMAT) throw new TableError(`${this.#label}: the table "${table}" stores vectors as ${JSON.stringify(meta.get("vector_format"))}, which this improv does not read; give another { table }.`);
        }
        if (columns.get("embedding") !== `vector(${dimensions})`) {
          throw new TableError(`${this.#label}: the table "${table}" has an embedding column of type ${columns.get("embedding")}, not vector(${dimensions}) as its record says; the table is damaged.`);
        }
        // Indexes are made only when missing: CREATE INDEX IF NOT EXISTS would lock out writers even when there is one.
        const indexes = async () =>
          (
            await run<{ name: string; method: string }>(
              "SELECT c.relname AS name, a.amname AS method FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = to_regclass($1)",
              [`"${table}"`],
            )
          ).rows;
        const made = await indexes();
        if (!made.some((one) => one.name === `${table}_metadata`)) await run(`CREATE INDEX "${table}_metadata" ON "${table}" USING gin (metadata jsonb_path_ops)`);
        if (index === "hnsw" && !made.some((one) => one.method === "hnsw")) await run(`CREATE INDEX "${table}_embedding_hnsw" ON "${table}" USING hnsw (embedding vector_ip_ops)`);
        this.#hnsw = (await indexes()).some((one) => one.method === "hnsw");
      }),
    );
  }

  /** pgvector's version in this database, enabling it first when it is not; a clear error when the server does not have it or the user may not enable it. */
  async #enableVector(run: Run): Promise<string> {
    const installed = await run<{ extversion: string }>("SELECT extversion FROM pg_extension WHERE extname = 'vector'");
    if (installed.rows[0] !== undefined) return installed.rows[0].extversion;
    try {
      await run("CREATE EXTENSION IF NOT EXISTS vector");
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      const said = (error as Error).message;
      if (code === "42501") {
        throw new TableError(
          `${this.#label} needs the pgvector extension enabled in this database, and this user may not enable it (CREATE EXTENSION vector: ${said}). ` +
            "Have a superuser run CREATE EXTENSION vector; in this database, then open the retriever again.",
          { cause: error },
        );
      }
      if (code === "0A000" || code === "58P01" || /extension "vector" is not available|could not open extension control file/i.test(said)) {
        throw new TableError(
          `${this.#label} needs the pgvector extension, which this PostgreSQL server does not have (CREATE EXTENSION vector: ${said}). ` +
            "Install pgvector on the database server (a package such as postgresql-17-pgvector, the pgvector/pgvector Docker image, or a build from pgvector's source; " +
            "hosted PostgreSQL services usually offer it), then open the retriever again: it runs CREATE EXTENSION vector itself. " +
            "Or keep passages in a SQLite file with sqliteRetriever().",
          { cause: error },
        );
      }
      throw error;
    }
    return (await run<{ extversion: string }>("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).rows[0]?.extversion ?? "0";
  }

  async add(passages: readonly Passage[], options: { readonly signal?: AbortSignal | undefined } = {}): Promise<void> {
    this.#open("add passages");
    const checked = checkPassages(passages, CALLER);
    for (const [index, passage] of checked.entries()) checkText(passage, index);
    if (checked.length === 0) return;
    const signal = options?.signal;
    const vectors = await embedNormalised(this.embedder, checked.map((passage) => passage.content), signal);
    // An id given twice in one call: the last one stays (one INSERT … ON CONFLICT cannot touch a row twice).
    const last = new Map<string, number>();
    for (const [index, passage] of checked.entries()) last.set(passage.id, index);
    const rows = [...last.values()].sort((a, b) => a - b);
    await this.#use("add passages", signal, (connection) =>
      transaction(connection, async (run) => {
        for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
          const chunk = rows.slice(start, start + ROWS_PER_INSERT);
          await run(
            `INSERT INTO "${this.#table}" (id, content, metadata, embedding) SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::vector[]) ` +
              "ON CONFLICT (id) DO UPDATE SET content = excluded.content, metadata = excluded.metadata, embedding = excluded.embedding",
            [
              chunk.map((index) => (checked[index] as CheckedPassage).id),
              chunk.map((index) => (checked[index] as CheckedPassage).content),
              chunk.map((index) => {
                const metadata = (checked[index] as CheckedPassage).metadata;
                return metadata === undefined ? null : JSON.stringify(metadata);
              }),
              chunk.map((index) => vectorText(vectors[index] as Float32Array)),
            ],
            signal,
          );
        }
        // Aborted while the last rows went in: nothing is kept.
        signal?.throwIfAborted();
      }),
    );
  }

  async search(query: string, options: SearchOptions): Promise<readonly KnowledgeResult[]> {
    this.#open("search");
    const { topK, minRelevance, filter, signal } = checkSearch(query, options, CALLER);
    const [asked] = (await embedNormalised(this.embedder, [query], signal)) as [Float32Array];
    const params: unknown[] = [vectorText(asked), topK];
    const where = filterSql(filter, params);
    const select = `SELECT id, content, metadata, embedding <#> $1::vector AS distance FROM "${this.#table}"${where}`;
    const rows = await this.#use("search", signal, async (connection) => {
      if (!this.#hnsw) return (await connection.run<Row>(`${select} ORDER BY distance, id COLLATE "C" LIMIT $2`, params, signal)).rows;
      // Through the HNSW index: at least topK candidates (up to 1,000), and with pgvector 0.8+ the
      // scan goes on through the index, in order, until it has topK that match the filter.
      return transaction(connection, async (run) => {
        await run("SELECT set_config('hnsw.ef_search', $1, true)", [String(Math.min(1_000, Math.max(40, topK)))], signal);
        if (this.#iterative) await run("SELECT set_config('hnsw.iterative_scan', 'strict_order', true)", [], signal);
        return (await run<Row>(`${select} ORDER BY embedding <#> $1::vector LIMIT $2`, params, signal)).rows;
      });
    });
    signal?.throwIfAborted();
    const found = rows.map((row) => ({ row, score: score(row.distance) }));
    found.sort((a, b) => b.score - a.score || (a.row.id < b.row.id ? -1 : a.row.id > b.row.id ? 1 : 0));
    return Object.freeze(
      found
        .filter((one) => one.score >= minRelevance)
        .map(({ row, score }) => result(row.content, score, row.id, row.metadata === null ? undefined : (Object.freeze(row.metadata) as StoredMetadata))),
    );
  }

  async count(): Promise<number> {
    this.#open("count passages");
    return this.#use("count passages", undefined, async ({ run }) => Number((await run<{ n: string }>(`SELECT count(*) AS n FROM "${this.#table}"`)).rows[0]?.n));
  }

  /** Ends the pool it made (waiting for queries in flight); a pool the application gave is left open. */
  async close(): Promise<void> {
    this.#closed = true;
    if (!this.#owned) return;
    await (this.#ended ??= this.#pool.end());
  }

  #open(doing: string): void {
    if (this.#closed) throw new Error(`${this.#label} cannot ${doing}: it was closed.`);
  }

  /**
   * Runs `work` on one connection of the pool, naming this retriever and what it was doing in
   * an error. With `signal`: an abort while waiting for a connection or during a statement
   * given the signal rejects at once with its reason; the statement is cancelled on the server,
   * and the connection is ended (not reused) once it has answered.
   */
  async #use<T>(doing: string, signal: AbortSignal | undefined, work: (connection: Connection) => Promise<T>): Promise<T> {
    this.#open(doing);
    signal?.throwIfAborted();
    const connecting = this.#pool.connect();
    let client: pg.PoolClient;
    try {
      client = await abortable(connecting, signal, () => void connecting.then((late) => late.release(), () => undefined));
    } catch (error) {
      if (signal?.aborted && error === signal.reason) throw error;
      throw new Error(`${this.#label} cannot ${doing}: ${(error as Error).message}`, { cause: error });
    }
    let inFlight: Promise<unknown> = Promise.resolve();
    let broken = false;
    const run: Run = (text, values, withSignal) => {
      const pending = client.query(text, values as unknown[] | undefined);
      inFlight = pending.catch(() => undefined);
      return abortable(pending, withSignal, () => {
        broken = true;
        cancelQuery(client);
      }) as never;
    };
    const connection: Connection = {
      run,
      get broken() {
        return broken;
      },
    };
    try {
      return await work(connection);
    } catch (error) {
      if (signal?.aborted && error === signal.reason) throw error;
      if (error instanceof TableError) throw error;
      if (error instanceof BrokenConnection) broken = true;
      throw new Error(`${this.#label} cannot ${doing}: ${(error as Error).message}`, { cause: error });
    } finally {
      if (broken) void inFlight.finally(() => client.release(true));
      else client.release();
    }
  }
}

interface Row {
  readonly id: string;
  readonly content: string;
  readonly metadata: Record<string, string | number | boolean | null> | null;
  readonly distance: number;
}

/** An error about the table or the server itself (another embedder's table, no pgvector): passed on as it is. */
class TableError extends Error {}

/** A transaction that could not be rolled back: its connection is ended, not reused. */
class BrokenConnection extends Error {}

/**
 * Runs `work` in a transaction on `connection`: committed when it resolves, rolled back when it
 * throws (on a connection an abort broke, the server rolls back when it is ended).
 */
async function transaction<T>(connection: Connection, work: (run: Run) => Promise<T>): Promise<T> {
  const { run } = connection;
  await run("BEGIN");
  let done: T;
  try {
    done = await work(run);
  } catch (error) {
    if (connection.broken) throw error;
    await run("ROLLBACK").catch((rollback: unknown) => {
      throw new BrokenConnection((error as Error).message, { cause: rollback });
    });
    throw error;
  }
  await run("COMMIT");
  return done;
}

/** `promise`, or its signal's reason as soon as the signal aborts (then `onAbort` runs once). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined, onAbort: () => void): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) {
    onAbort();
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      onAbort();
      reject(signal.reason as Error);
    };
    signal.addEventListener("abort", abort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", abort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", abort);
        reject(error as Error);
      },
    );
  });
}

/**
 * Asks the server to cancel what `client`'s connection is running: PostgreSQL's CancelRequest
 * (the connection's process id and secret key) on a connection of its own, as `pg`'s own
 * cancel does. Best effort: a server that ignores it lets the statement run to its end.
 */
function cancelQuery(client: pg.PoolClient): void {
  const { processID, secretKey, host, port } = client as unknown as { processID?: unknown; secretKey?: unknown; host?: unknown; port?: unknown };
  if (typeof processID !== "number" || typeof secretKey !== "number" || typeof port !== "number") return;
  const message = Buffer.alloc(16);
  message.writeInt32BE(16, 0);
  message.writeInt32BE(80_877_102, 4);
  message.writeInt32BE(processID | 0, 8);
  message.writeInt32BE(secretKey | 0, 12);
  const where = typeof host === "string" && host !== "" ? host : "localhost";
  const socket = where.startsWith("/") ? connectSocket(`${where}/.s.PGSQL.${port}`) : connectSocket(port, where);
  socket.setTimeout(5_000, () => socket.destroy());
  socket.on("error", () => undefined);
  socket.on("connect", () => socket.end(message));
}

/**
 * The SQL of a metadata filter, its values added to `params`: the keys with one value wanted as
 * one containment (`metadata @> {"product": "billing", "year": 2024}`), each key with a list as
 * containment of one of them (`metadata @> ANY(…)`). jsonb containment of a scalar is equality of
 * the same JSON type, so `true` matches `true`, not `1` or `"true"`, and `null` a key holding null.
 */
function filterSql(filter: MetadataFilter | undefined, params: unknown[]): string {
  if (filter === undefined) return "";
  const clauses: string[] = [];
  const single: Record<string, string | number | boolean | null> = {};
  let singles = 0;
  for (const [key, wanted] of Object.entries(filter)) {
    if (Array.isArray(wanted)) {
      params.push((wanted as readonly (string | number | boolean | null)[]).map((value) => JSON.stringify({ [key]: value })));
      clauses.push(`metadata @> ANY($${params.length}::jsonb[])`);
    } else {
      single[key] = wanted as string | number | boolean | null;
      singles += 1;
    }
  }
  if (singles > 0) {
    params.push(JSON.stringify(single));
    clauses.unshift(`metadata @> $${params.length}::jsonb`);
  }
  return clauses.length === 0 ? "" : ` WHERE ${clauses.join(" AND ")}`;
}

/** A passage's text as PostgreSQL can hold it: text and jsonb cannot hold the character U+0000. */
function checkText(passage: CheckedPassage, index: number): void {
  const where = `${CALLER}.add(passages): passage ${index} ("${passage.id.replaceAll("\u0000", "\\u0000")}")`;
  const nul = (text: string) => text.includes("\u0000");
  if (nul(passage.id)) throw new TypeError(`${where} has an id with the character U+0000, which PostgreSQL text cannot hold.`);
  if (nul(passage.content)) throw new TypeError(`${where} has content with the character U+0000, which PostgreSQL text cannot hold; remove it first.`);
  for (const [key, value] of Object.entries(passage.metadata ?? {})) {
    if (nul(key) || (typeof value === "string" && nul(value))) throw new TypeError(`${where} has metadata "${key.replaceAll("\u0000", "\\u0000")}" with the character U+0000, which PostgreSQL jsonb cannot hold.`);
  }
}

/** A vector as pgvector's text form, each number with the 9 digits a float4 needs. */
function vectorText(vector: Float32Array): string {
  let text = "[";
  for (let index = 0; index < vector.length; index += 1) {
    if (index > 0) text += ",";
    text += String(Number((vector[index] as number).toPrecision(9)));
  }
  return `${text}]`;
}

/** The score of a distance `<#>` (the negated inner product): the cosine similarity, kept within -1 to 1, never -0. */
function score(distance: number): number {
  const similarity = -distance;
  return (similarity > 1 ? 1 : similarity < -1 ? -1 : similarity) + 0;
}

/** Whether a version such as "0.8.1" is at least `wanted`. */
function atLeast(version: string, wanted: readonly number[]): boolean {
  const parts = version.split(".").map((part) => Number.parseInt(part, 10) || 0);
  for (const [index, want] of wanted.entries()) {
    const have = parts[index] ?? 0;
    if (have !== want) return have > want;
  }
  return true;
}

let pgModule: Promise<typeof pg> | undefined;

/** `pg`, loaded once, when first used: importing improv does not load it. */
function loadPg(): Promise<typeof pg> {
  return (pgModule ??= import("pg").then((loaded) => loaded.default));
}
