import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import { decodeContext, encodeContext, EMPTY_CONTEXT } from "./context-codec.ts";
import { SQLITE_MIGRATIONS } from "./migrations.ts";
import { readPruneOptions, refuseOtherUrls, type KeptProgram, type ProgramToKeep, type PruneOptions } from "./store.ts";
import { keptProgram, type ProgramRow } from "./program-row.ts";
import { checkOptionNames, closeTimeout, Drain, readSnapshot, sqliteDatabase } from "../shared/index.ts";
import { checksBytes, RoleMismatchError, type ValueWrite, StoreError, type AgentChanges, type AgentTurn, type AgentSummary, type AgentView, type AgentWrite, type SyncStore, type TraceRow, type TurnOptions, type WriteResult } from "./store.ts";
import { beginSqliteTurn, type HeldLeases, type TurnRow, type TurnStatements } from "./sqlite-turn.ts";

/** Options of {@link SqliteStore}. */
/** The options `new SqliteStore()` takes. */
export const SQLITE_STORE_OPTION_NAMES = ["durability", "busyTimeoutMs", "closeTimeoutMs"] as const;

export interface SqliteStoreOptions {
  /**
   * `"normal"` (default): `synchronous=NORMAL` in WAL mode; a killed process loses nothing
   * committed, a power cut may lose the latest commits. `"full"`: `synchronous=FULL`, every
   * commit reaches the disk before it returns, at a measured cost (docs/performance.md).
   */
  readonly durability?: "normal" | "full" | undefined;
  /** How long a writer waits for another's write lock before failing. Default: 5000. @unit milliseconds */
  readonly busyTimeoutMs?: number | undefined;
  /** How long `close()` waits for calls in flight before it closes the database anyway. Default: 10000. @unit milliseconds */
  readonly closeTimeoutMs?: number | undefined;
}

/** WAL file size kept after a checkpoint; SQLite checkpoints on its own every 1,000 pages. @unit bytes */
const JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024;

interface AgentRow {
  readonly role: string;
  readonly version: number;
  readonly epoch: number;
  readonly first: number;
  readonly length: number;
}

/**
 * The embedded store: one SQLite file through Node's built-in `node:sqlite` (no server, no
 * native build). WAL mode with a busy timeout, so several processes on one machine can share
 * the file; each write is one `BEGIN IMMEDIATE` transaction, never held while a program runs.
 * Processes sharing an agent take turns through a lease on its row (`sqlite-turn.ts`).
 *
 * @example
 * const store = new SqliteStore("data/improv.db");
 * const calc = await Agent.open("calculator", { store, id: "calc-1" });
 */
export class SqliteStore implements SyncStore {
  readonly label: string;
  /** The database file's absolute path (or `:memory:`). */
  readonly path: string;
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, StatementSync>();
  #closed = false;
  /** Calls the application started on this store's agents: closing waits for them. */
  readonly #calls = new Drain();
  readonly #closeTimeoutMs: number;
  #closedAt: Promise<void> = Promise.resolve();
  /** Turns of this store's agents holding a lease: closing releases them. */
  readonly #leases: HeldLeases = new Set();
  readonly #turnStatements: TurnStatements = {
    read: (id, programKey) => this.#guard("begin a turn", () => this.#statement(TURN_READ).get(id, programKey ?? null) as TurnRow | undefined),
    lease: (id) => this.#guard("read an agent's lease", () => this.#statement(LEASE_READ).get(id) as { owner: string | null; expires: number } | undefined),
    take: (id, owner, expires, now) => this.#guard("take an agent's lease", () => Number(this.#statement(TAKE_LEASE).run(owner, expires, id, now).changes) > 0),
    release: (id, owner) => void this.#guard("release an agent's lease", () => this.#statement(RELEASE_LEASE).run(id, owner)),
    commit: (id, write, owner) => this.#commit(id, write, owner),
    write: (id, write) => this.writeSync(id, write),
  };

  constructor(location: string, given: SqliteStoreOptions = {}) {
    if (typeof location !== "string" || location.trim() === "") {
      throw new TypeError('SqliteStore needs a file path or sqlite: URL, e.g. new SqliteStore("data/improv.db").');
    }
    refuseOtherUrls(location);
    const options = checkOptionNames<SqliteStoreOptions>(given, SQLITE_STORE_OPTION_NAMES, "new SqliteStore()");
    const durability = options.durability ?? "normal";
    if (durability !== "normal" && durability !== "full") throw new TypeError(`SqliteStore option "durability" must be "normal" or "full", got ${JSON.stringify(durability)}.`);
    this.#closeTimeoutMs = closeTimeout(options.closeTimeoutMs, "SqliteStore");
    const busyTimeoutMs = options.busyTimeoutMs ?? 5_000;
    if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 1) throw new RangeError(`SqliteStore option "busyTimeoutMs" must be a positive integer, got ${String(busyTimeoutMs)}.`);
    this.path = sqlitePath(location);
    this.label = `sqlite:${this.path}`;
    try {
      if (this.path !== ":memory:") mkdirSync(dirname(this.path), { recursive: true });
      this.#db = new (sqliteDatabase())(this.path, { timeout: busyTimeoutMs });
      // WAL is a property of the file: set once, kept by every later connection.
      // auto_vacuum takes effect only on a new, empty file; it lets prune() give space back.
      this.#db.exec(`PRAGMA auto_vacuum = INCREMENTAL; PRAGMA journal_mode = WAL; PRAGMA synchronous = ${durability === "full" ? "FULL" : "NORMAL"}; PRAGMA journal_size_limit = ${JOURNAL_SIZE_LIMIT}; PRAGMA foreign_keys = ON;`);
      this.#migrate();
    } catch (error) {
      if (error instanceof StoreError) throw error;
      throw new StoreError(this.label, `cannot open the database: ${(error as Error).message}`, { cause: error });
    }
  }

  #migrate(): void {
    this.#transaction(() => {
      this.#db.exec("CREATE TABLE IF NOT EXISTS improv_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      const row = this.#db.prepare("SELECT value FROM improv_meta WHERE key = 'schema_version'").get() as { value: string } | undefined;
      const current = row === undefined ? 0 : Number(row.value);
      if (current > SQLITE_MIGRATIONS.length) {
        throw new StoreError(this.label, `the database has schema version ${current}, made by a newer improv; this one knows up to ${SQLITE_MIGRATIONS.length}. Upgrade improv to use it.`);
      }
      for (let version = current + 1; version <= SQLITE_MIGRATIONS.length; version += 1) this.#db.exec(SQLITE_MIGRATIONS[version - 1] as string);
      this.#db.prepare("INSERT INTO improv_meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(String(SQLITE_MIGRATIONS.length));
    });
  }

  openSync(id: string, role: string): AgentChanges {
    return this.#guard("open an agent", () =>
      this.#transaction(() => {
        let row = this.#row(id);
        if (row === undefined) {
          const now = new Date().toISOString();
          this.#statement("INSERT INTO improv_agents (id, role, version, epoch, first, length, context, created_at, updated_at) VALUES (?, ?, 0, 0, 0, 0, ?, ?, ?)").run(id, role, encodeContext(EMPTY_CONTEXT), now, now);
          row = { role, version: 0, epoch: 0, first: 0, length: 0 };
        } else if (row.role !== role) {
          throw new RoleMismatchError(id, row.role, role, "stored");
        }
        const values = (this.#statement("SELECT ref, value FROM improv_values WHERE agent_id = ? ORDER BY seq").all(id) as { ref: string; value: string }[]).map((value) => [value.ref, value.value] as const);
        return { ...changesOf(row), context: this.#context(id), records: this.#recordsFrom(id, row.first, row.first + row.length), reset: true, values };
      }),
    );
  }

  changesSync(id: string, view: AgentView): AgentChanges | undefined {
    return this.#guard("read an agent", () => {
      // The row alone first: the common answer is "nothing changed", without a transaction.
      const quick = this.#row(id);
      if (quick !== undefined && quick.version === view.version && quick.epoch === view.epoch && quick.length === view.length) return undefined;
      // One read transaction: the row, its context and its records from the same snapshot.
      return readSnapshot(this.#db, () => {
        const row = this.#row(id);
        if (row === undefined) throw new StoreError(this.label, `agent "${id}" is not in the store (it was forgotten); open it again.`);
        const reset = row.epoch !== view.epoch || row.length < view.length;
        return {
          ...changesOf(row),
          ...(row.version === view.version ? {} : { context: this.#context(id) }),
          records: this.#recordsFrom(id, reset ? row.first : row.first + view.length, row.first + row.length),
          reset,
        };
      });
    });
  }

  /**
   * A call's commit, in one `BEGIN IMMEDIATE` transaction of prepared statements: the agent's row
   * first, where one `UPDATE` checks the version and bumps it with the length and the kept-value
   * count (a refused version check changes nothing), and the row then read says where the record
   * goes (cheaper than `RETURNING`, which SQLite buffers in a temporary table); then the record,
   * the value (over the one it evicts), and the kept program's count.
   * The context is encoded, and the time taken, before the write lock is.
   */
  writeSync(id: string, write: AgentWrite): WriteResult {
    return this.#commit(id, write, undefined);
  }

  /**
   * {@link writeSync}, or with `owner` a commit from a turn (see `sqlite-turn.ts`): refused while
   * another turn holds a live lease on the agent (when it changes the context), and releasing
   * the lease `owner` holds (null: none) in the same update of the agent's row.
   */
  #commit(id: string, write: AgentWrite, owner: string | null | undefined): WriteResult {
    const context = write.context === undefined ? null : encodeContext(write.context);
    const at = Date.now();
    const now = new Date(at).toISOString();
    if (write.replaceHistory !== undefined) return this.#guard("write a call", () => this.#transaction(() => this.#replaceHistory(id, write, context, now)));
    const { record, ranProgram } = write;
    const value = record === undefined ? undefined : write.value;
    const base = context !== null && write.baseVersion !== undefined ? write.baseVersion : null;
    return this.#guard("write a call", () =>
      this.#transaction(() => {
        const advance =
          owner === undefined
            ? this.#statement(ADVANCE).run(context, base, record === undefined ? 0 : 1, value === undefined ? 0 : 1, now, id)
            : this.#statement(ADVANCE_TURN).run(context, base, record === undefined ? 0 : 1, value === undefined ? 0 : 1, now, id, owner, at);
        if (Number(advance.changes) === 0) return this.#refused(id);
        const row = this.#statement(ADVANCED).get(id) as unknown as AdvancedRow;
        let position: number | undefined;
        if (record !== undefined) {
          position = row.first + row.length - 1;
          this.#statement(INSERT_RECORD).run(id, position, record);
          if (value !== undefined) this.#keepValue(id, value, row.value_seq, row.value_count);
        }
        if (ranProgram !== undefined) this.#statement(COUNT_USE).run(now, ranProgram.key, ranProgram.code);
        return { ok: true, version: row.version, epoch: row.epoch, length: row.length, ...(position === undefined ? {} : { position }) } as const;
      }),
    );
  }

  /** Why a commit's update of the agent's row found none: the version changed (a conflict), or the agent is gone. */
  #refused(id: string): WriteResult {
    const row = this.#statement("SELECT version FROM improv_agents WHERE id = ?").get(id) as { version: number } | undefined;
    if (row === undefined) throw new StoreError(this.label, `agent "${id}" is not in the store (it was forgotten); open it again.`);
    return { ok: false, conflict: true, version: row.version };
  }

  /** A write that replaces the whole history (application-supplied history), in the caller's transaction. */
  #replaceHistory(id: string, write: AgentWrite, context: Uint8Array | null, now: string): WriteResult {
    const row = this.#statement("SELECT version, epoch, value_seq, value_count FROM improv_agents WHERE id = ?").get(id) as { version: number; epoch: number; value_seq: number; value_count: number } | undefined;
    if (row === undefined) throw new StoreError(this.label, `agent "${id}" is not in the store (it was forgotten); open it again.`);
    if (context !== null && write.baseVersion !== undefined && row.version !== write.baseVersion) return { ok: false, conflict: true, version: row.version };
    this.#statement("DELETE FROM improv_records WHERE agent_id = ?").run(id);
    const epoch = row.epoch + 1;
    let length = 0;
    for (const record of write.replaceHistory ?? []) this.#statement(INSERT_RECORD).run(id, length++, record);
    let position: number | undefined;
    let valueSeq = row.value_seq;
    if (write.record !== undefined) {
      position = length++;
      this.#statement(INSERT_RECORD).run(id, position, write.record);
      if (write.value !== undefined) this.#keepValue(id, write.value, (valueSeq += 1), row.value_count);
    }
    const version = row.version + (context === null ? 0 : 1);
    this.#statement("UPDATE improv_agents SET context = coalesce(?, context), version = ?, epoch = ?, first = 0, length = ?, value_seq = ?, updated_at = ? WHERE id = ?").run(context, version, epoch, length, valueSeq, now, id);
    if (write.ranProgram !== undefined) this.#statement(COUNT_USE).run(now, write.ranProgram.key, write.ranProgram.code);
    return { ok: true, version, epoch, length, ...(position === undefined ? {} : { position }) };
  }

  /**
   * A turn of agent `id` (see `sqlite-turn.ts`): SQLite's lock is the file's, too coarse to hold
   * while a program runs, so processes take turns through a lease on the agent's row. With no
   * lease held, its reads are one statement: where the agent stands, its lease and, when asked,
   * the program kept under the call's key.
   */
  async turn(id: string, options: TurnOptions): Promise<AgentTurn> {
    return beginSqliteTurn(this.#turnStatements, this.#leases, id, options);
  }

  async open(id: string, role: string): Promise<AgentChanges> {
    return this.openSync(id, role);
  }

  async changes(id: string, view: AgentView): Promise<AgentChanges | undefined> {
    return this.changesSync(id, view);
  }

  async write(id: string, write: AgentWrite): Promise<WriteResult> {
    return this.writeSync(id, write);
  }

  async records(id: string, count?: number): Promise<readonly string[]> {
    return this.#guard("read records", () => {
      const rows = (
        count === undefined
          ? this.#statement("SELECT record FROM improv_records WHERE agent_id = ? ORDER BY position").all(id)
          : this.#statement("SELECT record FROM (SELECT record, position FROM improv_records WHERE agent_id = ? ORDER BY position DESC LIMIT ?) ORDER BY position").all(id, count)
      ) as { record: string }[];
      return rows.map((row) => row.record);
    });
  }

  /**
   * Keeps a call's value as the agent's value number `seq`, in slot `seq % count` of the agent's
   * ring (see the schema's migration 5), overwriting the value it evicts; lays the slots out again
   * first when they are laid out for another count (`laidOutFor`). Then holds the values to their
   * byte bound (see `BYTE_CHECK_EVERY`).
   */
  #keepValue(id: string, write: ValueWrite, seq: number, laidOutFor: number): void {
    const { ref, text, count, maxBytes } = write;
    if (count < 1) return;
    if (laidOutFor !== count) {
      // Only the values that stay (the latest count, with this one) keep a slot: numbers within
      // `count` of each other, so their slots differ, and none is this one's.
      this.#statement(EVICT_OLDER_VALUES).run(id, seq - count);
      this.#statement("UPDATE improv_values SET slot = -1 - seq WHERE agent_id = ?").run(id);
      this.#statement("UPDATE improv_values SET slot = seq % ? WHERE agent_id = ?").run(count, id);
      this.#statement("UPDATE improv_agents SET value_count = ? WHERE id = ?").run(count, id);
    }
    const bytes = text.length * 2;
    this.#statement(KEEP_VALUE).run(id, seq % count, seq, ref, bytes, text);
    if (checksBytes(write, seq, bytes) && Number((this.#statement(VALUE_BYTES).get(id) as { total: number }).total) > maxBytes) {
      this.#statement(EVICT_VALUES_BY_BYTES).run(id, count, maxBytes);
    }
  }

  async traceRecords(traceId: string): Promise<readonly TraceRow[]> {
    return this.#guard("read a trace", () =>
      (
        this.#statement("SELECT r.agent_id, a.role, r.record FROM improv_records r JOIN improv_agents a ON a.id = r.agent_id WHERE json_extract(r.record, '$.trace_id') = ? ORDER BY r.agent_id, r.position").all(traceId) as {
          agent_id: string;
          role: string;
          record: string;
        }[]
      ).map((row) => ({ agentId: row.agent_id, role: row.role, record: row.record })),
    );
  }

  async value(id: string, ref: string): Promise<string | undefined> {
    // The agent's values in the order kept (at most its `keepValues` count), read for the call id.
    return this.#guard("read a kept value", () => (this.#statement("SELECT value FROM improv_values WHERE agent_id = ? AND ref = ? ORDER BY seq DESC LIMIT 1").get(id, ref) as { value: string } | undefined)?.value);
  }

  async agents(): Promise<readonly AgentSummary[]> {
    return this.#guard("list agents", () =>
      (this.#statement("SELECT id, role, length, updated_at FROM improv_agents ORDER BY id").all() as { id: string; role: string; length: number; updated_at: string }[]).map((row) => ({
        id: row.id,
        role: row.role,
        records: row.length,
        updatedAt: row.updated_at,
      })),
    );
  }

  async forget(id: string): Promise<void> {
    this.#guard("forget an agent", () =>
      this.#transaction(() => {
        // A prefix compared exactly (LIKE would ignore case and need escaping).
        const below = `${id}/`;
        this.#statement("DELETE FROM improv_records WHERE agent_id = ? OR substr(agent_id, 1, length(?)) = ?").run(id, below, below);
        this.#statement("DELETE FROM improv_values WHERE agent_id = ? OR substr(agent_id, 1, length(?)) = ?").run(id, below, below);
        this.#statement("DELETE FROM improv_agents WHERE id = ? OR substr(id, 1, length(?)) = ?").run(id, below, below);
      }),
    );
  }

  async prune(options: PruneOptions): Promise<number> {
    const { id, keepLast } = readPruneOptions(options);
    const deleted = this.#guard("prune records", () =>
      this.#transaction(() => {
        const row = this.#row(id);
        if (row === undefined || row.length <= keepLast) return 0;
        const drop = row.length - keepLast;
        this.#statement("DELETE FROM improv_records WHERE agent_id = ? AND position < ?").run(id, row.first + drop);
        this.#statement("UPDATE improv_agents SET epoch = epoch + 1, first = ?, length = ?, updated_at = ? WHERE id = ?").run(row.first + drop, keepLast, new Date().toISOString(), id);
        return drop;
      }),
    );
    // Return the freed pages to the file system, and fold the WAL back into the database.
    this.#guard("reclaim space", () => this.#db.exec("PRAGMA incremental_vacuum; PRAGMA wal_checkpoint(TRUNCATE);"));
    return deleted;
  }

  /** The connection's settings, as SQLite reports them (for checking a deployment). */
  get settings(): { journalMode: string; synchronous: "off" | "normal" | "full" | "extra"; busyTimeoutMs: number; journalSizeLimit: number } {
    return this.#guard("read settings", () => {
      const value = (pragma: string) => Object.values(this.#db.prepare(`PRAGMA ${pragma}`).get() ?? {})[0];
      const synchronous = (["off", "normal", "full", "extra"] as const)[Number(value("synchronous"))] ?? "off";
      return { journalMode: String(value("journal_mode")), synchronous, busyTimeoutMs: Number(value("busy_timeout")), journalSizeLimit: Number(value("journal_size_limit")) };
    });
  }

  async program(key: string): Promise<KeptProgram | undefined> {
    return this.#guard("read a kept program", () => {
      const row = this.#statement("SELECT * FROM improv_programs WHERE key = ?").get(key) as unknown as ProgramRow | undefined;
      return row === undefined ? undefined : keptProgram(row);
    });
  }

  async keepProgram(program: ProgramToKeep): Promise<void> {
    this.#guard("keep a program", () => {
      this.#statement(
        "INSERT INTO improv_programs (key, role, method, code, uses, failures, failures_in_row, kept_at, last_used, why) VALUES (?, ?, ?, ?, 0, 0, 0, ?, NULL, ?) ON CONFLICT (key) DO UPDATE SET code = excluded.code, uses = 0, failures = 0, failures_in_row = 0, kept_at = excluded.kept_at, last_used = NULL, why = excluded.why",
      ).run(program.key, program.role, program.method, program.code, new Date().toISOString(), program.why);
    });
  }

  async programRan(key: string, code: string, ended: "ok" | "mistake", maxFailuresInRow: number): Promise<boolean> {
    return this.#guard("count a kept program's call", () =>
      this.#transaction(() => {
        const now = new Date().toISOString();
        if (ended === "ok") {
          this.#statement(COUNT_USE).run(now, key, code);
          return false;
        }
        this.#statement("UPDATE improv_programs SET failures = failures + 1, failures_in_row = failures_in_row + 1, last_used = ? WHERE key = ? AND code = ?").run(now, key, code);
        return Number(this.#statement("DELETE FROM improv_programs WHERE key = ? AND code = ? AND failures_in_row >= ?").run(key, code, maxFailuresInRow).changes) > 0;
      }),
    );
  }

  async programs(role?: string): Promise<readonly KeptProgram[]> {
    return this.#guard("list kept programs", () =>
      ((role === undefined ? this.#statement("SELECT * FROM improv_programs ORDER BY key").all() : this.#statement("SELECT * FROM improv_programs WHERE role = ? ORDER BY key").all(role)) as unknown as ProgramRow[]).map(keptProgram),
    );
  }

  async forgetProgram(key: string): Promise<boolean> {
    return this.#guard("forget a kept program", () => Number(this.#statement("DELETE FROM improv_programs WHERE key = ?").run(key).changes) > 0);
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
    this.#closedAt = this.#calls.close(this.#closeTimeoutMs).then(() => {
      // Leases of calls still running are released, not left to lapse: other processes go on at once.
      for (const turn of [...this.#leases]) turn.drop();
      this.#closed = true;
      this.#statements.clear();
      this.#db.close();
    });
    return this.#closedAt;
  }

  #row(id: string): AgentRow | undefined {
    return this.#statement("SELECT role, version, epoch, first, length FROM improv_agents WHERE id = ?").get(id) as AgentRow | undefined;
  }

  #context(id: string) {
    const row = this.#statement("SELECT context FROM improv_agents WHERE id = ?").get(id) as { context: Uint8Array } | undefined;
    return row === undefined ? EMPTY_CONTEXT : decodeContext(row.context);
  }

  /** Records at positions from `position` up to (not including) `end`. */
  #recordsFrom(id: string, position: number, end: number): string[] {
    return (this.#statement("SELECT record FROM improv_records WHERE agent_id = ? AND position >= ? AND position < ? ORDER BY position").all(id, position, end) as { record: string }[]).map((row) => row.record);
  }

  #statement(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /** Runs `work` in a `BEGIN IMMEDIATE` transaction: the write lock is taken at once, so two writers never deadlock upgrading. */
  #transaction<T>(work: () => T): T {
    this.#statement("BEGIN IMMEDIATE").run();
    try {
      const result = work();
      this.#statement("COMMIT").run();
      return result;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  /** Runs `work`, turning SQLite's own errors into a {@link StoreError} naming this store. */
  #guard<T>(doing: string, work: () => T): T {
    if (this.#closed) throw new StoreError(this.label, `cannot ${doing}: the store was closed.`);
    try {
      return work();
    } catch (error) {
      if (error instanceof StoreError || error instanceof RoleMismatchError) throw error;
      throw new StoreError(this.label, `cannot ${doing}: ${(error as Error).message}`, { cause: error });
    }
  }
}

/** Where agent `?1` stands, the code kept under key `?2` (null when none, or no key), and the agent's lease. */
const TURN_READ = "SELECT version, epoch, length, (SELECT code FROM improv_programs WHERE key = ?2) AS program, lease_owner, lease_expires FROM improv_agents WHERE id = ?1";
const LEASE_READ = "SELECT lease_owner AS owner, lease_expires AS expires FROM improv_agents WHERE id = ?";
/** Takes agent `?3`'s lease for owner `?1` until `?2` when it is free, lapsed at `?4`, or `?1`'s already (renewed). */
const TAKE_LEASE = "UPDATE improv_agents SET lease_owner = ?1, lease_expires = ?2 WHERE id = ?3 AND (lease_owner IS NULL OR lease_owner = ?1 OR lease_expires <= ?4)";
const RELEASE_LEASE = "UPDATE improv_agents SET lease_owner = NULL, lease_expires = 0 WHERE id = ? AND lease_owner = ?";

/**
 * A call's update of agent `?6`'s row, refused (no change) when `?2` is a version it no longer
 * has: the new context `?1` (a version more; kept as it was when null), `?3` records and `?4`
 * kept values more, the time `?5`. {@link ADVANCED} then reads where the agent stands.
 */
const ADVANCE =
  "UPDATE improv_agents SET version = version + (?1 IS NOT NULL), context = coalesce(?1, context), length = length + ?3, value_seq = value_seq + ?4, updated_at = ?5 WHERE id = ?6 AND (?2 IS NULL OR version = ?2)";
/**
 * {@link ADVANCE} from a turn: a new context is also refused while another owner than `?7` holds
 * a lease that has not lapsed at `?8`; `?7`'s lease (null: none) is released.
 */
const ADVANCE_TURN =
  "UPDATE improv_agents SET version = version + (?1 IS NOT NULL), context = coalesce(?1, context), length = length + ?3, value_seq = value_seq + ?4, updated_at = ?5, lease_owner = CASE WHEN lease_owner = ?7 THEN NULL ELSE lease_owner END WHERE id = ?6 AND (?2 IS NULL OR (version = ?2 AND (lease_owner IS NULL OR lease_owner = ?7 OR lease_expires <= ?8)))";
const ADVANCED = "SELECT version, epoch, first, length, value_seq, value_count FROM improv_agents WHERE id = ?";

interface AdvancedRow {
  readonly version: number;
  readonly epoch: number;
  readonly first: number;
  readonly length: number;
  readonly value_seq: number;
  /** The count the agent's value slots are laid out for. */
  readonly value_count: number;
}

const INSERT_RECORD = "INSERT INTO improv_records (agent_id, position, record) VALUES (?, ?, ?)";
/** Keeps agent `?1`'s value number `?3` in slot `?2`, over the value there. */
const KEEP_VALUE =
  "INSERT INTO improv_values (agent_id, slot, seq, ref, bytes, value) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (agent_id, slot) DO UPDATE SET seq = excluded.seq, ref = excluded.ref, bytes = excluded.bytes, value = excluded.value";
/** Deletes agent `?1`'s values numbered up to `?2`. */
const EVICT_OLDER_VALUES = "DELETE FROM improv_values WHERE agent_id = ? AND seq <= ?";
const VALUE_BYTES = "SELECT COALESCE(SUM(bytes), 0) AS total FROM improv_values WHERE agent_id = ?";
/** Deletes agent `?1`'s values beyond the latest `?2` within `?3` bytes (both bounds grow with age: every value older than the newest past them). */
const EVICT_VALUES_BY_BYTES = `DELETE FROM improv_values WHERE agent_id = ?1 AND seq <= (
  SELECT MAX(seq) FROM (
    SELECT seq, ROW_NUMBER() OVER (ORDER BY seq DESC) AS n, SUM(bytes) OVER (ORDER BY seq DESC) AS total
    FROM improv_values WHERE agent_id = ?1
  ) WHERE n > ?2 OR total > ?3)`;

/** Counts a use of the program `?3` kept under key `?2`, at time `?1`. */
const COUNT_USE = "UPDATE improv_programs SET uses = uses + 1, failures_in_row = 0, last_used = ? WHERE key = ? AND code = ?";

function changesOf(row: AgentRow): Pick<AgentChanges, "role" | "version" | "epoch" | "length"> {
  return { role: row.role, version: row.version, epoch: row.epoch, length: row.length };
}

/** A file path from a path or a `sqlite:` URL (`sqlite:data/x.db`, `sqlite:///abs/x.db`, `file:` too). */
export function sqlitePath(location: string): string {
  if (location === ":memory:" || location === "sqlite::memory:") return ":memory:";
  if (location.startsWith("file:")) return fileURLToPath(location);
  if (location.startsWith("sqlite://")) return resolve(location.slice("sqlite://".length));
  if (location.startsWith("sqlite:")) return resolve(location.slice("sqlite:".length));
  return resolve(location);
}
