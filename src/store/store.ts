/**
 * The contract between durable agents and where they are kept. A store keeps, per agent id:
 * its role; its latest call values (bounded by the agent's `keepValues`); its context (the values, and which keys the application wrote) with a version
 * that every change bumps; and its history, one row per record keyed by (agent, position),
 * written once. Implementations: `SqliteStore` (embedded, `node:sqlite`) and `PostgresStore`
 * (`pg`, for many processes). One contract test suite runs against both.
 *
 * Every write is one transaction. A write that changes the context names the version it was
 * based on and fails with a conflict when another process changed the context since, so
 * processes sharing an agent never lose each other's updates (docs/storage.md).
 */
import { checkOptionNames, describeType } from "../shared/index.ts";

/** A kept program and how it has fared (kept here; run again by `programs/kept.ts`). */
export interface KeptProgram {
  readonly key: string;
  readonly role: string;
  readonly method: string;
  /** The model's program, as it wrote it. */
  readonly code: string;
  /** Calls it served, and failed by its own mistake (in all, and in a row up to now). */
  readonly uses: number;
  readonly failures: number;
  readonly failuresInRow: number;
  /** Why it was kept (the reuse rules it passed); null for a program kept before improv said why. */
  readonly why: string | null;
  /** ISO 8601 times. */
  readonly keptAt: string;
  readonly lastUsed: string | null;
}

/** A program that worked, to be kept under its call's key. */
export interface ProgramToKeep {
  readonly key: string;
  readonly role: string;
  readonly method: string;
  readonly code: string;
  /** Why it may be kept (see `keepDecision`). */
  readonly why: string;
}

/** An agent's context as stored: the values, and the keys among them the application wrote. */
export interface StoredContext {
  readonly values: Record<string, unknown>;
  readonly appKeys: readonly string[];
}

/** Where a process's view of an agent stands; what it asks the store to bring up to date. */
export interface AgentView {
  /** The context version the process holds. */
  readonly version: number;
  /** The history epoch it holds (bumped when the history is replaced or pruned). */
  readonly epoch: number;
  /** Records it holds, counted from the first kept one. */
  readonly length: number;
}

/** What changed since a view (or, on open, everything). */
export interface AgentChanges {
  readonly role: string;
  readonly version: number;
  readonly epoch: number;
  /** Records held by the store after these changes. */
  readonly length: number;
  /** Present when the context changed (or on open). */
  readonly context?: StoredContext;
  /** Records the view lacks, oldest first, as JSON text: from its length on, or all of them when the epoch changed. */
  readonly records: readonly string[];
  /** True when `records` are the whole history (the view must replace its own). */
  readonly reset: boolean;
  /** On open: the agent's kept values (call id and encoded value), oldest first. */
  readonly values?: readonly (readonly [ref: string, text: string])[];
}

/** A call's value to keep with its record, and the bounds of what the agent keeps. */
export interface ValueWrite {
  readonly ref: string;
  /** The value as the sandbox encoded it. */
  readonly text: string;
  /** After this one is kept, only the latest `count` values within `maxBytes` (2 bytes a character) remain. */
  readonly count: number;
  readonly maxBytes: number;
}

/** One transaction's writes for one agent. */
export interface AgentWrite {
  /** A history record (JSON text) to append. */
  readonly record?: string;
  /** The new context; needs `baseVersion`. */
  readonly context?: StoredContext;
  /** The version the new context was based on; the write is refused when the store's differs. */
  readonly baseVersion?: number;
  /** Replaces the whole history with these records (application-supplied history). */
  readonly replaceHistory?: readonly string[];
  /** A value to keep with the record (with `record` only). */
  readonly value?: ValueWrite;
  /**
   * A kept program served the call (its run ended ok, or with the program's own thrown error):
   * count the use in the same transaction, as `programRan(key, code, "ok")` would. Nothing is
   * counted when `key` now holds another program.
   */
  readonly ranProgram?: { readonly key: string; readonly code: string };
}

/**
 * One run of an agent's program in this process, from its start to its commit: the agent's lock
 * where the store has locks, where the agent stood when the turn began (so a process that is up
 * to date reads nothing more), and optionally the program kept under the call's key, all in one
 * round trip; then the commit and the lock's release in one more.
 */
export interface AgentTurn {
  /** Whether the agent's lock was taken (false: none to take, or the wait ran out; the version check still keeps writes correct). */
  readonly locked: boolean;
  /** Where the agent stood in the store as the turn began; undefined when it is not there (forgotten). */
  readonly stand: AgentView | undefined;
  /** The code kept under the `programKey` asked about, null when none is; undefined when none was asked about. */
  readonly program: string | null | undefined;
  /** Writes one transaction for the agent (see {@link Store.write}); a write that succeeds also ends the turn. */
  commit(write: AgentWrite): Promise<WriteResult>;
  /** Ends the turn when no commit did (releases the lock). Safe to call more than once. */
  end(): Promise<void>;
  /**
   * Optional: takes the agent's lease for the rest of the turn (after its commit met a conflict),
   * waiting at most `waitMs` for another process's to be released or to lapse. While it is held,
   * other processes' turns wait for it and their commits that change the context are refused,
   * so the turn's next commit loses only to the application's own writes. Resolves false when
   * it was not taken (the wait ran out, or the store failed). Taking it again renews it.
   */
  take?(waitMs: number): Promise<boolean>;
}

/** What a turn is begun with (see {@link Store.turn}). */
export interface TurnOptions {
  /** How long to wait for another process's lock or lease, at most. @unit milliseconds */
  readonly waitMs: number;
  /** The key of the kept program the turn will run, when it runs one: the turn reads the store's. */
  readonly programKey?: string | undefined;
  /** How long a lease taken in this turn lasts unless renewed (it is renewed while held); default 15000. @unit milliseconds */
  readonly leaseMs?: number | undefined;
}

/** How a write ended. */
export type WriteResult =
  | { readonly ok: true; readonly version: number; readonly epoch: number; readonly length: number; readonly position?: number }
  | { readonly ok: false; readonly conflict: true; readonly version: number };

/** A record of a trace, and the agent it belongs to. */
export interface TraceRow {
  readonly agentId: string;
  readonly role: string;
  /** The record's JSON text. */
  readonly record: string;
}

/** One stored agent, as `improv agents` lists them. */
export interface AgentSummary {
  readonly id: string;
  readonly role: string;
  readonly records: number;
  /** ISO 8601 time of the latest write. */
  readonly updatedAt: string;
}

/** A store of durable agents. Methods reject with a {@link StoreError} when the store fails. */
export interface Store {
  /** Names the store in messages (`sqlite:/data/improv.db`, `postgres://host/db`), without credentials. */
  readonly label: string;
  /** Loads agent `id`, creating it with `role` when new. Rejects with a `TypeError` when it is stored with another role. */
  open(id: string, role: string): Promise<AgentChanges>;
  /** What changed since `view`, or undefined when nothing did. */
  changes(id: string, view: AgentView): Promise<AgentChanges | undefined>;
  /** Writes one transaction for agent `id`. */
  write(id: string, write: AgentWrite): Promise<WriteResult>;
  /** The latest `count` records of agent `id` (all when omitted), oldest first, as JSON text. */
  records(id: string, count?: number): Promise<readonly string[]>;
  /** Every record whose `trace_id` is `traceId`, of every agent, with its agent's id and role (through an index on the trace id). */
  traceRecords(traceId: string): Promise<readonly TraceRow[]>;
  /** The encoded value agent `id` keeps under `ref`, if it still does. */
  value(id: string, ref: string): Promise<string | undefined>;
  /** Every stored agent. */
  agents(): Promise<readonly AgentSummary[]>;
  /** Deletes agent `id` and the agents delegated from it (ids below `id/`). */
  forget(id: string): Promise<void>;
  /** Keeps only the latest `keepLast` records of agent `id`; returns how many were deleted. Any other option name is a `TypeError`, and nothing is deleted. */
  prune(options: PruneOptions): Promise<number>;
  /**
   * Refuses calls of its agents that the application starts from now on, lets those in flight
   * finish (for at most the store's `closeTimeoutMs`), then ends connections; the store cannot
   * be used afterwards.
   */
  close(): Promise<void>;
  /** Optional: a call of one of its agents begins (false: the store is closing, and refuses it) / ends. */
  beginCall?(): boolean;
  endCall?(): void;
  /**
   * Optional: begins a turn of agent `id` (see {@link AgentTurn}): takes its lock where the store
   * has locks, or waits for another process's lease where it has leases, so processes sharing the
   * agent take turns instead of re-running on conflicts, waiting at most `waitMs` before going on
   * without it. Stores without it get the same from `lock`, `changes`, `program` and `write`, in
   * more round trips.
   */
  turn?(id: string, options: TurnOptions): Promise<AgentTurn>;
  /**
   * Optional: takes agent `id`'s lock for one run and commit; resolves with the release. Waits
   * at most `waitMs`, then resolves without the lock (the version check still keeps writes correct).
   */
  lock?(id: string, waitMs: number): Promise<() => Promise<void>>;
  /** The program kept under `key`, if any (see `programs/kept.ts`). */
  program?(key: string): Promise<KeptProgram | undefined>;
  /** Keeps a program under its key, replacing what was there (counts start over). */
  keepProgram?(program: ProgramToKeep): Promise<void>;
  /**
   * Counts a call the program `code` kept under `key` served; true when a failure in a row past
   * `maxFailuresInRow` dropped it. Nothing is counted when `key` now holds another program.
   */
  programRan?(key: string, code: string, ended: "ok" | "mistake", maxFailuresInRow: number): Promise<boolean>;
  /** Every kept program, optionally of one role, by key. */
  programs?(role?: string): Promise<readonly KeptProgram[]>;
  /** Drops the program kept under `key`; false when there was none. */
  forgetProgram?(key: string): Promise<boolean>;
}

/** A store that can also work synchronously (`Agent.for` with a store, setters written through at once). */
export interface SyncStore extends Store {
  openSync(id: string, role: string): AgentChanges;
  changesSync(id: string, view: AgentView): AgentChanges | undefined;
  writeSync(id: string, write: AgentWrite): WriteResult;
}

/** A store that keeps programs: every member of the contract for them. */
export type ProgramStore = Store & Required<Pick<Store, "program" | "keepProgram" | "programRan" | "programs" | "forgetProgram">>;

// What a store can do beyond the contract's required members is read here, and nowhere else.

/** Whether `store` can work synchronously. */
export function isSyncStore(store: Store): store is SyncStore {
  return typeof (store as Partial<SyncStore>).openSync === "function";
}

/** Whether `store` keeps programs (all of the contract's members for them; a store with some is taken to keep none). */
export function keepsPrograms(store: Store): store is ProgramStore {
  return [store.program, store.keepProgram, store.programRan, store.programs, store.forgetProgram].every((member) => typeof member === "function");
}

/** Tells `store` a call of one of its agents begins: false when it is closing and refuses it (a store that does not count calls takes every one). */
export function beginStoreCall(store: Store): boolean {
  return store.beginCall?.() !== false;
}

/** Tells `store` a call that {@link beginStoreCall} let in has ended. */
export function endStoreCall(store: Store | undefined): void {
  store?.endCall?.();
}

/** Whether `store` was closed (or is closing): it lets in no more calls, nor the application's values. */
export function storeClosed(store: Store): boolean {
  if (!beginStoreCall(store)) return true;
  endStoreCall(store);
  return false;
}

/** Opening an id that is stored (or open) with another role. */
export class RoleMismatchError extends TypeError {
  override readonly name = "RoleMismatchError";

  constructor(id: string, stored: string, asked: string, where: "stored" | "open") {
    super(`Agent "${id}" is ${where} with role "${stored}", not "${asked}". Open it with role "${stored}", or use another id.`);
  }
}

/** A failure of the store itself (file not writable, server gone, constraint violated). */
export class StoreError extends Error {
  override readonly name = "StoreError";
  /** The store's label. */
  readonly store: string;

  constructor(store: string, message: string, options?: { cause?: unknown }) {
    super(`${store}: ${message}`, options);
    this.store = store;
  }
}

/** Whether `value` looks like a {@link Store}. */
export function isStore(value: unknown): value is Store {
  if (typeof value !== "object" || value === null) return false;
  const candidate = value as Partial<Store>;
  return typeof candidate.label === "string" && typeof candidate.open === "function" && typeof candidate.write === "function" && typeof candidate.changes === "function";
}

/** The durable id of a child agent made by `delegate(role)` from the agent `parentId`. */
export function childId(parentId: string, role: string): string {
  return `${parentId}/${role}`;
}

/**
 * How a store keeps a call's value and holds the agent's values to the latest `count` within
 * `maxBytes` (the rule of the in-memory `KeptValues`). The agent's row counts the values it kept
 * (`value_seq`, bumped by the commit's update of that row), and value number n lies in slot
 * n % `count` of the agent's ring: numbers are consecutive per agent, so keeping a value
 * overwrites the one the count bound evicts (a ring laid out for another count is laid out
 * again first). The byte total is read for every value larger than `maxBytes / count`, and for
 * every {@link BYTE_CHECK_EVERY}th value: smaller values cannot take the total over on their own,
 * so between checks it can exceed the bound by at most that many small values. Only when it is
 * over are the values ranked, and those past either bound deleted (every value older than the
 * newest of them, as both bounds grow with age).
 */
export const BYTE_CHECK_EVERY = 8;

/** Whether keeping a value of `bytes` as number `seq` calls for reading the byte total. */
export function checksBytes(write: ValueWrite, seq: number, bytes: number): boolean {
  return bytes * write.count > write.maxBytes || seq % BYTE_CHECK_EVERY === 0;
}

/** The URL schemes a store location may have: anything else that looks like a URL is refused, never taken for a file name. */
const STORE_SCHEMES = /^(?:postgres|postgresql|sqlite|file):/i;

/**
 * Throws a `TypeError` for a location that looks like a URL (a scheme, then `//`) of a kind no
 * store opens (`postgress://…`, `pg://…`, `mysql://…`), which would otherwise be taken for a
 * file path and quietly make a SQLite file of that name.
 */
export function refuseOtherUrls(location: string): void {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(location.trim())?.[1];
  if (scheme !== undefined && !STORE_SCHEMES.test(`${scheme}:`)) {
    throw new TypeError(`The store location "${scheme}://…" is not one improv opens. Use a postgres:// or postgresql:// URL (PostgresStore), a sqlite: URL or a file path (SqliteStore).`);
  }
}

/** What `store.prune()` takes. */
export interface PruneOptions {
  /** The agent whose history is pruned. */
  readonly id: string;
  /** How many of its latest records stay. */
  readonly keepLast: number;
}

/** `store.prune()`'s options, checked alike by every store: before anything is deleted, a `TypeError` or `RangeError` says what is wrong. */
export function readPruneOptions(options: unknown): PruneOptions {
  const { id, keepLast } = checkOptionNames<PruneOptions>(options, ["id", "keepLast"], "store.prune()");
  if (typeof id !== "string") throw new TypeError(`store.prune() option "id" must be the agent's id, a string; got ${describeType(id)}.`);
  if (typeof keepLast !== "number" || !Number.isSafeInteger(keepLast) || keepLast < 0) throw new RangeError(`store.prune() option "keepLast" must be a whole number of records, 0 or more; got ${describeType(keepLast)}.`);
  return { id, keepLast };
}
