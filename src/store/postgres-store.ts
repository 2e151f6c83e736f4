import type pg from "pg";
import { decodeContext, encodeContext, EMPTY_CONTEXT } from "./context-codec.ts";
import { POSTGRES_MIGRATIONS } from "./migrations.ts";
import { checkOptionNames, closeTimeout, Drain, postgresLabel } from "../shared/index.ts";
import { readPruneOptions, type KeptProgram, type ProgramToKeep, type PruneOptions } from "./store.ts";
import { keptProgram, type ProgramRow } from "./program-row.ts";
import { BYTE_CHECK_EVERY, RoleMismatchError, StoreError, type AgentChanges, type AgentSummary, type AgentTurn, type AgentView, type AgentWrite, type Store, type StoredContext, type TraceRow, type WriteResult } from "./store.ts";

/** Options of {@link PostgresStore}. */
/** The options `new PostgresStore()` takes. */
export const POSTGRES_STORE_OPTION_NAMES = ["maxConnections", "closeTimeoutMs"] as const;

export interface PostgresStoreOptions {
  /** Most connections the store opens at once. Default: 10. */
  readonly maxConnections?: number | undefined;
  /** How long `close()` waits for calls in flight before it ends connections anyway. Default: 10000. @unit milliseconds */
  readonly closeTimeoutMs?: number | undefined;
}

/**
 * A connection that cannot be made, or a query that gets no answer, fails instead of holding
 * an agent's calls forever; keep-alive notices a connection that died quietly. The server ends
 * a statement itself, before pg stops waiting for it: a commit pg gave up on would otherwise go
 * on in the server and land after its call was told that nothing of it was kept (and a retry
 * would apply it twice). Settings of the library, read as each connection is made; tests
 * lower them. @unit ms
 */
export const postgresTimings = { connectMs: 10_000, queryMs: 60_000, statementMs: 55_000 };

function connectionLimits(): pg.ClientConfig {
  return { connectionTimeoutMillis: postgresTimings.connectMs, query_timeout: postgresTimings.queryMs, statement_timeout: Math.min(postgresTimings.statementMs, postgresTimings.queryMs), keepAlive: true };
}

/** Serialises schema migrations across processes (an arbitrary, fixed advisory lock key). */
const MIGRATION_LOCK = 4_821_337;

interface AgentRow {
  readonly role: string;
  readonly version: number;
  readonly epoch: number;
  readonly first: number;
  readonly length: number;
}

/**
 * The store for many processes or machines: PostgreSQL through `pg`. Each write is one
 * transaction that locks only its agent's row (updating it first), never the store.
 *
 * @example
 * const store = new PostgresStore("postgres://app@127.0.0.1:5432/app");
 * const calc = await Agent.open("calculator", { store, id: "calc-1" });
 */
export class PostgresStore implements Store {
  readonly label: string;
  /** The connection pool, made once `pg` is loaded. */
  readonly #pool: Promise<pg.Pool>;
  readonly #url: string;
  #ready: Promise<void> | undefined;
  #closed = false;
  /** Calls the application started on this store's agents: closing waits for them. */
  readonly #calls = new Drain();
  readonly #closeTimeoutMs: number;
  #closedAt: Promise<void> = Promise.resolve();

  constructor(url: string, given: PostgresStoreOptions = {}) {
    if (typeof url !== "string" || !/^postgres(ql)?:\/\//i.test(url)) {
      throw new TypeError('PostgresStore needs a postgres:// URL, e.g. new PostgresStore("postgres://app@127.0.0.1:5432/app").');
    }
    const options = checkOptionNames<PostgresStoreOptions>(given, POSTGRES_STORE_OPTION_NAMES, "new PostgresStore()");
    this.#closeTimeoutMs = closeTimeout(options.closeTimeoutMs, "PostgresStore");
    const maxConnections = options.maxConnections ?? 10;
    if (!Number.isInteger(maxConnections) || maxConnections < 1) throw new RangeError(`PostgresStore option "maxConnections" must be a positive integer, got ${String(maxConnections)}.`);
    this.label = postgresLabel(url);
    this.#url = url;
    this.#turnConnections = Array.from({ length: Math.min(MAX_TURN_CONNECTIONS, maxConnections) }, () => undefined);
    // Idle connections do not keep the process alive: an application that is done can exit.
    this.#pool = loadPg().then(({ Pool }) => {
      const pool = new Pool({ connectionString: url, max: maxConnections, allowExitOnIdle: true, ...connectionLimits() });
      // A connection that drops while idle must not crash the process; the next query reconnects.
      pool.on("error", () => undefined);
      // Nor one that drops as it is handed out: the pool stops listening to it before its borrower
      // can, and the server's message may arrive in the same read. Every connection always has a
      // listener of ours; a borrower also hears the error (see `#checkout`).
      pool.on("connect", (client) => client.on("error", () => undefined));
      return pool;
    });
    // A failure to load `pg` is the first query's to report.
    this.#pool.catch(() => undefined);
  }

  async open(id: string, role: string): Promise<AgentChanges> {
    return this.#transaction("open an agent", async (client) => {
      const now = new Date().toISOString();
      await client.query("INSERT INTO improv_agents (id, role, version, epoch, first, length, context, created_at, updated_at) VALUES ($1, $2, 0, 0, 0, 0, $3, $4, $4) ON CONFLICT (id) DO NOTHING", [id, role, Buffer.from(encodeContext(EMPTY_CONTEXT)), now]);
      const row = (await this.#row(client, id, true)) as AgentRow;
      if (row.role !== role) throw new RoleMismatchError(id, row.role, role, "stored");
      const values = (await client.query<{ ref: string; value: string }>("SELECT ref, value FROM improv_values WHERE agent_id = $1 ORDER BY seq", [id])).rows.map((value) => [value.ref, value.value] as const);
      return { ...changesOf(row), context: await this.#context(client, id), records: await this.#recordsFrom(client, id, row.first, row.first + row.length), reset: true, values };
    });
  }

  async changes(id: string, view: AgentView): Promise<AgentChanges | undefined> {
    return this.#use("read an agent", async (client) => {
      // The row alone first: the common answer is "nothing changed", without a transaction.
      const quick = await this.#row(client, id, false);
      if (quick !== undefined && quick.version === view.version && quick.epoch === view.epoch && quick.length === view.length) return undefined;
      // One snapshot for the row, its context and its records.
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      try {
        const row = await this.#row(client, id, false);
        if (row === undefined) throw notInStore(this.label, id);
        const reset = row.epoch !== view.epoch || row.length < view.length;
        return {
          ...changesOf(row),
          ...(row.version === view.version ? {} : { context: await this.#context(client, id) }),
          records: await this.#recordsFrom(client, id, reset ? row.first : row.first + view.length, row.first + row.length),
          reset,
        };
      } finally {
        await client.query("COMMIT").catch(() => undefined);
      }
    });
  }

  async write(id: string, given: AgentWrite): Promise<WriteResult> {
    const write = withoutNul(given);
    if (write.replaceHistory === undefined) return this.#use("write a call", (client) => commitOn(client, this.label, id, write, false));
    return this.#transaction("write a call", async (client) => {
      const row = await this.#row(client, id, true);
      if (row === undefined) throw notInStore(this.label, id);
      if (write.context !== undefined && write.baseVersion !== undefined && row.version !== write.baseVersion) {
        return { ok: false, conflict: true, version: row.version } as const;
      }
      let { version, epoch, first, length } = row;
      await client.query("DELETE FROM improv_records WHERE agent_id = $1", [id]);
      epoch += 1;
      first = 0;
      length = write.replaceHistory!.length;
      if (length > 0) {
        await client.query("INSERT INTO improv_records (agent_id, position, record) SELECT $1, ordinality - 1, record FROM unnest($2::text[]) WITH ORDINALITY AS t(record, ordinality)", [id, write.replaceHistory]);
      }
      let position: number | undefined;
      if (write.record !== undefined) {
        position = first + length;
        await client.query("INSERT INTO improv_records (agent_id, position, record) VALUES ($1, $2, $3)", [id, position, write.record]);
        length += 1;
      }
      if (write.context !== undefined) {
        version += 1;
        await client.query("UPDATE improv_agents SET context = $1 WHERE id = $2", [Buffer.from(encodeContext(write.context)), id]);
      }
      await client.query("UPDATE improv_agents SET version = $1, epoch = $2, first = $3, length = $4, updated_at = $5 WHERE id = $6", [version, epoch, first, length, new Date().toISOString(), id]);
      return { ok: true, version, epoch, length, ...(position === undefined ? {} : { position }) } as const;
    });
  }

  async records(id: string, count?: number): Promise<readonly string[]> {
    return this.#use("read records", async (client) => {
      const result =
        count === undefined
          ? await client.query<{ record: string }>("SELECT record FROM improv_records WHERE agent_id = $1 ORDER BY position", [id])
          : await client.query<{ record: string }>("SELECT record FROM (SELECT record, position FROM improv_records WHERE agent_id = $1 ORDER BY position DESC LIMIT $2) AS latest ORDER BY position", [id, count]);
      return result.rows.map((row) => row.record);
    });
  }

  async agents(): Promise<readonly AgentSummary[]> {
    return this.#use("list agents", async (client) => {
      const result = await client.query<{ id: string; role: string; length: string; updated_at: Date }>("SELECT id, role, length, updated_at FROM improv_agents ORDER BY id COLLATE \"C\"");
      return result.rows.map((row) => ({ id: row.id, role: row.role, records: Number(row.length), updatedAt: row.updated_at.toISOString() }));
    });
  }

  async traceRecords(traceId: string): Promise<readonly TraceRow[]> {
    return this.#use("read a trace", async (client) =>
      (
        await client.query<{ agent_id: string; role: string; record: string }>(
          "SELECT r.agent_id, a.role, r.record FROM improv_records r JOIN improv_agents a ON a.id = r.agent_id WHERE ((r.record::json) ->> 'trace_id') = $1 ORDER BY r.agent_id COLLATE \"C\", r.position",
          [traceId],
        )
      ).rows.map((row) => ({ agentId: row.agent_id, role: row.role, record: row.record })),
    );
  }

  async value(id: string, ref: string): Promise<string | undefined> {
    return this.#use("read a kept value", async (client) => (await client.query<{ value: string }>("SELECT value FROM improv_values WHERE agent_id = $1 AND ref = $2 ORDER BY seq DESC LIMIT 1", [id, ref])).rows[0]?.value);
  }

  async forget(id: string): Promise<void> {
    await this.#transaction("forget an agent", async (client) => {
      await client.query("DELETE FROM improv_values WHERE agent_id = $1 OR starts_with(agent_id, $2)", [id, `${id}/`]);
      await client.query("DELETE FROM improv_agents WHERE id = $1 OR starts_with(id, $2)", [id, `${id}/`]);
    });
  }

  async prune(options: PruneOptions): Promise<number> {
    const { id, keepLast } = readPruneOptions(options);
    // Deleted rows' space is reused by PostgreSQL's autovacuum.
    return this.#transaction("prune records", async (client) => {
      const row = await this.#row(client, id, true);
      if (row === undefined || row.length <= keepLast) return 0;
      const drop = row.length - keepLast;
      await client.query("DELETE FROM improv_records WHERE agent_id = $1 AND position < $2", [id, row.first + drop]);
      await client.query("UPDATE improv_agents SET epoch = epoch + 1, first = $1, length = $2, updated_at = $3 WHERE id = $4", [row.first + drop, keepLast, new Date().toISOString(), id]);
      return drop;
    });
  }

  async program(key: string): Promise<KeptProgram | undefined> {
    return this.#use("read a kept program", async (client) => {
      const row = (await client.query<ProgramRow>("SELECT * FROM improv_programs WHERE key = $1", [key])).rows[0];
      return row === undefined ? undefined : keptProgram(row);
    });
  }

  async keepProgram(program: ProgramToKeep): Promise<void> {
    await this.#use("keep a program", async (client) => {
      await client.query(
        "INSERT INTO improv_programs (key, role, method, code, uses, failures, failures_in_row, kept_at, last_used, why) VALUES ($1, $2, $3, $4, 0, 0, 0, $5, NULL, $6) ON CONFLICT (key) DO UPDATE SET code = excluded.code, uses = 0, failures = 0, failures_in_row = 0, kept_at = excluded.kept_at, last_used = NULL, why = excluded.why",
        [program.key, program.role, program.method, program.code, new Date().toISOString(), program.why],
      );
    });
  }

  async programRan(key: string, code: string, ended: "ok" | "mistake", maxFailuresInRow: number): Promise<boolean> {
    const now = new Date().toISOString();
    if (ended === "ok") {
      await this.#use("count a kept program's call", (client) =>
        client.query("UPDATE improv_programs SET uses = uses + 1, failures_in_row = 0, last_used = $1 WHERE key = $2 AND code = $3", [now, key, code]),
      );
      return false;
    }
    // A data-modifying WITH and its outer statement see the same snapshot (the outer DELETE would
    // not see the UPDATE's row), so the failure is counted, then the program dropped, in one transaction.
    return this.#transaction("count a kept program's failure", async (client) => {
      const counted = await client.query<{ failures_in_row: number }>(
        "UPDATE improv_programs SET failures = failures + 1, failures_in_row = failures_in_row + 1, last_used = $1 WHERE key = $2 AND code = $3 RETURNING failures_in_row",
        [now, key, code],
      );
      const inRow = counted.rows[0]?.failures_in_row;
      if (inRow === undefined || Number(inRow) < maxFailuresInRow) return false;
      await client.query("DELETE FROM improv_programs WHERE key = $1 AND code = $2", [key, code]);
      return true;
    });
  }

  async programs(role?: string): Promise<readonly KeptProgram[]> {
    return this.#use("list kept programs", async (client) => {
      const result =
        role === undefined
          ? await client.query<ProgramRow>('SELECT * FROM improv_programs ORDER BY key COLLATE "C"')
          : await client.query<ProgramRow>('SELECT * FROM improv_programs WHERE role = $1 ORDER BY key COLLATE "C"', [role]);
      return result.rows.map(keptProgram);
    });
  }

  async forgetProgram(key: string): Promise<boolean> {
    return this.#use("forget a kept program", async (client) => ((await client.query("DELETE FROM improv_programs WHERE key = $1", [key])).rowCount ?? 0) > 0);
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  beginCall(): boolean {
    return this.#calls.enter();
  }

  endCall(): void {
    this.#calls.leave();
  }

  async close(): Promise<void> {
    if (this.#calls.closing) return this.#closedAt;
    this.#closedAt = this.#calls.close(this.#closeTimeoutMs).then(() => this.#end());
    return this.#closedAt;
  }

  async #end(): Promise<void> {
    this.#closed = true;
    const connections = this.#turnConnections.splice(0);
    await Promise.all(
      connections.map(async (connection) => {
        const client = await connection?.client.catch(() => undefined);
        // Ending a connection waits for the server to close it: let it hold the process open meanwhile.
        (client as Referable | undefined)?.ref();
        await client?.end().catch(() => undefined);
      }),
    );
    await (await this.#pool).end();
  }

  /**
   * Begins a turn of agent `id` on its turn connection (one of a few, chosen by the id, so an
   * agent's lock and its release share a session): in one statement, tries the agent's advisory
   * lock (never blocking the connection, so one wait never holds up another agent's turn) and
   * reads where the agent stands and the program kept under `programKey`; tried again with
   * growing pauses until `waitMs` has passed. Its commit is one statement too, which releases
   * the lock. A lock whose connection is lost is released by the server; the version check at
   * commit keeps writes correct whatever happens to locks. Never rejects: a turn that cannot be
   * begun is one without the lock, whose reads and commit go through the pool.
   */
  async turn(id: string, options: { readonly waitMs: number; readonly programKey?: string | undefined }): Promise<AgentTurn> {
    const deadline = Date.now() + options.waitMs;
    try {
      if (this.#closed) throw new StoreError(this.label, "the store was closed.");
      await this.#prepare();
      const connection = this.#turnConnection(id);
      const client = await connection.client;
      for (let pause = 2; ; pause = Math.min(50, pause * 2)) {
        // taken, version, epoch, length, program
        const row = (await referenced(client, () => lean(client, "improv_turn", TURN_SQL, [id, options.programKey ?? null])))[0];
        const taken = row?.[0] === "t";
        if (taken || Date.now() >= deadline) {
          const stand = row === undefined || row[1] === null ? undefined : { version: Number(row[1]), epoch: Number(row[2]), length: Number(row[3]) };
          return this.#turnOf(id, connection, client, taken, stand, options.programKey === undefined ? undefined : (row?.[4] ?? null));
        }
        await new Promise((resolve) => setTimeout(resolve, pause * (0.5 + Math.random())));
      }
    } catch {
      return { locked: false, stand: undefined, program: undefined, commit: (write) => this.write(id, write), end: async () => {} };
    }
  }

  #turnOf(id: string, connection: TurnConnection, client: pg.Client, locked: boolean, stand: AgentView | undefined, program: string | null | undefined): AgentTurn {
    let holding = locked;
    return {
      locked,
      stand,
      program,
      commit: async (write) => {
        // On the lock's own session while it is held, so the commit releases it; else through the pool.
        if (!holding || connection.broken || write.replaceHistory !== undefined) return this.write(id, write);
        let result: WriteResult;
        try {
          result = await referenced(client, () => commitOn(client, this.label, id, withoutNul(write), true));
        } catch (error) {
          if (error instanceof StoreError) throw error;
          throw new StoreError(this.label, `cannot write a call: ${(error as Error).message}`, { cause: error });
        }
        if (result.ok) holding = false;
        return result;
      },
      end: async () => {
        if (!holding) return;
        holding = false;
        await referenced(client, () => client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [id])).catch(() => undefined);
      },
    };
  }

  /** The turn connections, made as agents need them. */
  readonly #turnConnections: (TurnConnection | undefined)[];

  /** Agent `id`'s turn connection (the same for every turn of the agent, while it lives). */
  #turnConnection(id: string): TurnConnection {
    const index = turnIndex(id, this.#turnConnections.length);
    let connection = this.#turnConnections[index];
    if (connection === undefined || connection.broken) {
      const made: TurnConnection = {
        broken: false,
        client: (async () => {
          const client = new (await loadPg()).Client({ connectionString: this.#url, ...connectionLimits() });
          // The server released every lock of a connection that failed; the next turn makes a new one.
          client.on("error", () => {
            made.broken = true;
          });
          await client.connect();
          (client as Referable).unref();
          return client;
        })(),
      };
      made.client.catch(() => {
        made.broken = true;
      });
      connection = made;
      this.#turnConnections[index] = connection;
    }
    return connection;
  }

  /** Creates or migrates the schema once per store, in one transaction serialised across processes. */
  #prepare(): Promise<void> {
    if (this.#ready !== undefined) return this.#ready;
    const ready = this.#checkout(async (client) => {
      try {
        await client.query("BEGIN");
        await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
        await client.query("CREATE TABLE IF NOT EXISTS improv_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
        const row = (await client.query<{ value: string }>("SELECT value FROM improv_meta WHERE key = 'schema_version'")).rows[0];
        const current = row === undefined ? 0 : Number(row.value);
        if (current > POSTGRES_MIGRATIONS.length) {
          throw new StoreError(this.label, `the database has schema version ${current}, made by a newer improv; this one knows up to ${POSTGRES_MIGRATIONS.length}. Upgrade improv to use it.`);
        }
        for (let version = current + 1; version <= POSTGRES_MIGRATIONS.length; version += 1) await client.query(POSTGRES_MIGRATIONS[version - 1] as string);
        await client.query("INSERT INTO improv_meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [String(POSTGRES_MIGRATIONS.length)]);
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw error;
      }
    });
    // A failed attempt is made again by the next use.
    ready.catch(() => {
      if (this.#ready === ready) this.#ready = undefined;
    });
    this.#ready = ready;
    return ready;
  }

  async #use<T>(doing: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreError(this.label, `cannot ${doing}: the store was closed.`);
    try {
      await this.#prepare();
      return await this.#checkout(work);
    } catch (error) {
      if (error instanceof StoreError || error instanceof RoleMismatchError) throw error;
      throw new StoreError(this.label, `cannot ${doing}: ${(error as Error).message}`, { cause: error });
    }
  }

  /**
   * Lends `work` a connection of the pool. A connection the server ends while it is lent out
   * reports that as an event (the pool listens only to idle ones): it is taken here, the
   * query in flight fails with it, and the connection is discarded rather than returned.
   */
  async #checkout<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await (await this.#pool).connect();
    let broken: Error | undefined;
    const onError = (error: Error) => {
      broken = error;
    };
    client.on("error", onError);
    try {
      return await work(client);
    } finally {
      client.off("error", onError);
      client.release(broken);
    }
  }

  #transaction<T>(doing: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.#use(doing, async (client) => {
      await client.query("BEGIN");
      try {
        const result = await work(client);
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw error;
      }
    });
  }

  async #row(client: pg.PoolClient, id: string, lock: boolean): Promise<AgentRow | undefined> {
    const result = await client.query<{ role: string; version: string; epoch: string; first: string; length: string }>(
      `SELECT role, version, epoch, first, length FROM improv_agents WHERE id = $1${lock ? " FOR UPDATE" : ""}`,
      [id],
    );
    const row = result.rows[0];
    return row === undefined ? undefined : { role: row.role, version: Number(row.version), epoch: Number(row.epoch), first: Number(row.first), length: Number(row.length) };
  }

  async #context(client: pg.PoolClient, id: string): Promise<StoredContext> {
    const row = (await client.query<{ context: Buffer }>("SELECT context FROM improv_agents WHERE id = $1", [id])).rows[0];
    return row === undefined ? EMPTY_CONTEXT : decodeContext(row.context);
  }

  /** Records at positions from `position` up to (not including) `end`. */
  async #recordsFrom(client: pg.PoolClient, id: string, position: number, end: number): Promise<string[]> {
    const result = await client.query<{ record: string }>("SELECT record FROM improv_records WHERE agent_id = $1 AND position >= $2 AND position < $3 ORDER BY position", [id, position, end]);
    return result.rows.map((row) => row.record);
  }
}

/** Runs a query on the lock connection, which keeps the process open only while a query is in flight. */
async function referenced<T>(client: pg.Client, query: () => Promise<T>): Promise<T> {
  (client as Referable).ref();
  try {
    return await query();
  } finally {
    (client as Referable).unref();
  }
}

/** `pg.Client` has ref() and unref() (for its socket), which its type declarations leave out. */
type Referable = pg.Client & { ref(): void; unref(): void };

function changesOf(row: AgentRow): Pick<AgentChanges, "role" | "version" | "epoch" | "length"> {
  return { role: row.role, version: row.version, epoch: row.epoch, length: row.length };
}

function notInStore(label: string, id: string): StoreError {
  return new StoreError(label, `agent "${id}" is not in the store (it was forgotten); open it again.`);
}

/** Turn connections a store keeps at most: enough that one agent's commit does not wait behind many others'. */
const MAX_TURN_CONNECTIONS = 4;

/** A connection that holds agents' advisory locks and carries their turns. */
interface TurnConnection {
  readonly client: Promise<pg.Client>;
  broken: boolean;
}

/** A turn's one statement: the agent's advisory lock tried, where the agent stands, and the program kept under key `$2`. */
const TURN_SQL = `SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS taken, a.version, a.epoch, a.length, (SELECT code FROM improv_programs WHERE key = $2) AS program
  FROM (VALUES (1)) AS one (x) LEFT JOIN improv_agents a ON a.id = $1`;

/**
 * A call's commit (`improv_commit`), called in the select list, not as a table in FROM (which
 * stores its one row in a tuple store first): its answer is one composite, `(ok,version,epoch,length,position)`.
 */
/** U+0000 escaped in JSON text (after an even number of backslashes: `\\u0000` is a backslash and "u0000"). */
const ESCAPED_NUL = /(?<!\\)((?:\\\\)*)\\u0000/g;

/**
 * The write with U+FFFD for U+0000 in its records: PostgreSQL's json cannot hold U+0000, and the
 * trace index reads every record as json, so a record holding one failed its call's commit.
 */
function withoutNul(write: AgentWrite): AgentWrite {
  const clean = (text: string) => (text.includes("\\u0000") ? text.replace(ESCAPED_NUL, "$1\\ufffd") : text);
  if (!write.record?.includes("\\u0000") && !write.replaceHistory?.some((record) => record.includes("\\u0000"))) return write;
  return { ...write, ...(write.record === undefined ? {} : { record: clean(write.record) }), ...(write.replaceHistory === undefined ? {} : { replaceHistory: write.replaceHistory.map(clean) }) };
}

const COMMIT_SQL = "SELECT improv_commit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";

/** Which of `count` turn connections carries agent `id`'s turns. */
function turnIndex(id: string, count: number): number {
  let hash = 0;
  for (let i = 0; i < id.length; i += 1) hash = (hash * 31 + id.charCodeAt(i)) | 0;
  return Math.abs(hash) % count;
}

/** The statement `improv_commit` (one round trip) for a write with no history to replace; with `unlock`, it releases the agent's lock this session holds. */
async function commitOn(client: pg.ClientBase, label: string, id: string, write: AgentWrite, unlock: boolean): Promise<WriteResult> {
  const { value, ranProgram } = write;
  const values = [
    id,
    write.baseVersion ?? null,
    write.record ?? null,
    write.context === undefined ? null : encodeContext(write.context),
    value?.ref ?? null,
    value?.text ?? null,
    value === undefined ? null : value.text.length * 2,
    value?.count ?? null,
    value?.maxBytes ?? null,
    BYTE_CHECK_EVERY,
    ranProgram?.key ?? null,
    ranProgram?.code ?? null,
    unlock,
  ];
  let answer: string | null | undefined;
  try {
    answer = (await lean(client, "improv_commit", COMMIT_SQL, values))[0]?.[0];
  } catch (error) {
    // The function's own refusal: the agent was forgotten.
    if ((error as { code?: unknown }).code === "P0002") throw new StoreError(label, (error as Error).message, { cause: error });
    throw error;
  }
  // A composite of a boolean and numbers, as text: "(t,7,0,7,6)"; an empty field is NULL.
  const [ok, version, epoch, length, position] = answer?.slice(1, -1).split(",") ?? [];
  if (ok === undefined || version === undefined) throw new Error(`improv_commit answered ${String(answer)}`);
  if (ok !== "t") return { ok: false, conflict: true, version: Number(version) };
  return { ok: true, version: Number(version), epoch: Number(epoch), length: Number(length), ...(position === undefined || position === "" ? {} : { position: Number(position) }) };
}

/**
 * Runs the named statement `name` (`text`, parsed once per connection) with `values`, and
 * answers its rows as arrays of text fields (null for SQL NULL). For the two statements of every
 * call, its turn and its commit: through `pg`'s `Submittable` interface, each run is one Bind,
 * Execute and Sync, without the general query path's work per run (copying the query's config,
 * asking for the row's description and reading it, building a result object, a parser per
 * field), about 30 µs a statement here (docs/performance.md). It keeps `pg`'s record of the
 * connection's prepared statements as `pg`'s own queries do.
 */
function lean(client: pg.ClientBase, name: string, text: string, values: readonly unknown[]): Promise<(string | null)[][]> {
  // `pg`'s connection internals are not its public API: where they are not what this was written
  // against, the same statement goes the general way, with every field left as text.
  if (!leanStatements.enabled || !wireConnectionOf(client)) {
    return client.query({ name, text, values: values.map(wireValue), rowMode: "array", types: AS_TEXT }).then((result) => result.rows as (string | null)[][]);
  }
  return new Promise((resolve, reject) => {
    client.query(new LeanStatement(name, text, values, (error, rows) => (error === undefined ? resolve(rows) : reject(error))));
  });
}

/** Whether statements take the lean way (tests turn it off to check the general way gives the same answers). */
export const leanStatements = { enabled: true };

/** Every field as the server sent it, as text (what the lean way reads). */
const AS_TEXT = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

/** Whether `client`'s connection has the parts a {@link LeanStatement} writes to. */
function wireConnectionOf(client: pg.ClientBase): boolean {
  const connection = (client as unknown as { connection?: Partial<WireConnection> }).connection;
  return (
    typeof connection === "object" &&
    typeof connection.parse === "function" &&
    typeof connection.bind === "function" &&
    typeof connection.execute === "function" &&
    typeof connection.sync === "function" &&
    typeof connection.sendCopyFail === "function" &&
    typeof connection.parsedStatements === "object" &&
    connection.parsedStatements !== null &&
    typeof connection.stream === "object"
  );
}

/** The part of `pg`'s connection a {@link LeanStatement} writes to. */
interface WireConnection {
  readonly stream: { cork?(): void; uncork?(): void };
  readonly parsedStatements: Record<string, string | undefined>;
  readonly submittedNamedStatements?: Record<string, string | undefined>;
  parse(query: { readonly name: string; readonly text: string }): void;
  bind(config: { readonly statement: string; readonly values: readonly unknown[]; readonly valueMapper: (value: unknown) => unknown }): void;
  execute(config: { readonly portal: string; readonly rows: number }): void;
  sync(): void;
  sendCopyFail(message: string): void;
}

/** One run of a named statement (see {@link lean}); `pg`'s client calls its `handle…` methods as the server answers. */
class LeanStatement implements pg.Submittable {
  readonly name: string;
  readonly text: string;
  readonly #values: readonly unknown[];
  readonly #rows: (string | null)[][] = [];
  #failed = false;
  /** Called once; `pg` wraps it (its query timeout). */
  callback: (error: Error | undefined, rows: (string | null)[][]) => void;

  constructor(name: string, text: string, values: readonly unknown[], callback: (error: Error | undefined, rows: (string | null)[][]) => void) {
    this.name = name;
    this.text = text;
    this.#values = values;
    this.callback = callback;
  }

  submit(given: pg.Connection): void {
    const connection = given as unknown as WireConnection;
    // One write for the whole exchange.
    connection.stream.cork?.();
    try {
      if (connection.parsedStatements[this.name] === undefined && connection.submittedNamedStatements?.[this.name] === undefined) {
        connection.parse({ name: this.name, text: this.text });
        if (connection.submittedNamedStatements !== undefined) connection.submittedNamedStatements[this.name] = this.text;
      }
      connection.bind({ statement: this.name, values: this.#values, valueMapper: wireValue });
      connection.execute({ portal: "", rows: 0 });
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
  }

  handleDataRow(message: { readonly fields: (string | null)[] }): void {
    this.#rows.push(message.fields);
  }

  handleReadyForQuery(): void {
    if (!this.#failed) this.callback(undefined, this.#rows);
  }

  handleError(error: Error): void {
    this.#failed = true;
    this.callback(error, []);
  }

  handleRowDescription(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
  handleCopyInResponse(given: pg.Connection): void {
    (given as unknown as WireConnection).sendCopyFail("improv sends no COPY data");
  }
}

/** A parameter as the server reads it: SQL NULL, bytes (sent as binary), or text. */
function wireValue(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return String(value);
}

let pgModule: Promise<typeof pg> | undefined;

/** `pg`, loaded once, when first used: importing improv does not load it. */
function loadPg(): Promise<typeof pg> {
  return (pgModule ??= import("pg").then((loaded) => loaded.default));
}
