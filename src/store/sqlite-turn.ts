/**
 * A turn of one agent in a SQLite store, and the agent's lease. SQLite's write lock covers the
 * whole file, so it is never held while a program runs: processes sharing an agent take turns
 * through a lease on the agent's row instead, a random owner token with an expiry. A turn runs
 * optimistically, with no lease, unless another process holds a live one: then it waits for its
 * release (or lapse) and takes it over. A turn whose commit met a conflict takes the lease for
 * its re-run (`take`); while it is held, the other turns wait for it and their commits that
 * change the context are refused, so the re-run loses only to the application's own writes
 * (setters, which never wait). The lease is renewed while held, released in the commit's
 * transaction, and lapses when its owner dies.
 */
import { randomUUID } from "node:crypto";
import type { AgentTurn, AgentView, AgentWrite, TurnOptions, WriteResult } from "./store.ts";

/** Where an agent stands as a turn begins, the program kept under the turn's key, and the agent's lease. */
export interface TurnRow {
  readonly version: number;
  readonly epoch: number;
  readonly length: number;
  readonly program: string | null;
  readonly lease_owner: string | null;
  /** @unit ms since the epoch */
  readonly lease_expires: number;
}

/** The store's statements a turn uses; each throws a `StoreError` when the store fails. */
export interface TurnStatements {
  /** Where agent `id` stands, and the code kept under `programKey`; undefined when it is not stored. */
  read(id: string, programKey: string | undefined): TurnRow | undefined;
  /** Agent `id`'s lease; undefined when it is not stored. */
  lease(id: string): { readonly owner: string | null; readonly expires: number } | undefined;
  /** Takes agent `id`'s lease for `owner` until `expires` when it is free, lapsed (at `now`) or `owner`'s; false when another holds it. */
  take(id: string, owner: string, expires: number, now: number): boolean;
  /** Releases agent `id`'s lease if `owner` holds it. */
  release(id: string, owner: string): void;
  /** A call's commit from a turn holding the lease as `owner` (or none: null); refused while another holds a live lease, and releases `owner`'s. */
  commit(id: string, write: AgentWrite, owner: string | null): WriteResult;
  /** A write that needs no turn (a history replaced). */
  write(id: string, write: AgentWrite): WriteResult;
}

/** How long a lease lasts unless renewed, when the turn does not say. @unit ms */
export const DEFAULT_LEASE_MS = 15_000;
/**
 * Longest pause between two looks at a lease held by another process: short while a wait is
 * young (a turn commonly takes milliseconds), longer once it has lasted {@link LONG_WAIT_MS}
 * (the holder runs a long program, or died and its lease has to lapse). @unit ms
 */
const MAX_POLL_PAUSE_MS = 4;
const MAX_LONG_POLL_PAUSE_MS = 50;
const LONG_WAIT_MS = 250;

/** The turns of one store that hold a lease, so closing the store releases them. */
export type HeldLeases = Set<SqliteTurn>;

/** Begins a turn of agent `id` (see the module's comment). Never rejects: a turn that cannot be begun is one without the lease, whose pull and commit report what fails. */
export async function beginSqliteTurn(statements: TurnStatements, held: HeldLeases, id: string, options: TurnOptions): Promise<AgentTurn> {
  const turn = new SqliteTurn(statements, held, id, options);
  try {
    let row = statements.read(id, options.programKey);
    if (row !== undefined && row.lease_owner !== null && row.lease_expires > Date.now()) {
      // Another process's turn: wait for it, then hold the lease for this one.
      if (await turn.take(options.waitMs)) row = statements.read(id, options.programKey);
    }
    if (row !== undefined) turn.found(row, options.programKey !== undefined);
  } catch {
    // Nothing known: the run's pull and its commit report what fails.
  }
  return turn;
}

export class SqliteTurn implements AgentTurn {
  stand: AgentView | undefined;
  program: string | null | undefined;
  readonly #statements: TurnStatements;
  readonly #held: HeldLeases;
  readonly #id: string;
  readonly #leaseMs: number;
  /** This turn's lease token, once it tried to take the lease. */
  #owner: string | undefined;
  /** Renews the lease while it is held. */
  #renewal: NodeJS.Timeout | undefined;

  constructor(statements: TurnStatements, held: HeldLeases, id: string, options: TurnOptions) {
    this.#statements = statements;
    this.#held = held;
    this.#id = id;
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  }

  /** Whether the turn holds the agent's lease (it may have lapsed since, unnoticed until a renewal or commit). */
  get locked(): boolean {
    return this.#renewal !== undefined;
  }

  found(row: TurnRow, askedProgram: boolean): void {
    this.stand = { version: row.version, epoch: row.epoch, length: row.length };
    this.program = askedProgram ? row.program : undefined;
  }

  async take(waitMs: number): Promise<boolean> {
    const owner = (this.#owner ??= randomUUID());
    // The wait is timed on the monotonic clock its caller's time limit is on (whole milliseconds
    // of the wall clock would give up a fraction early); leases expire by the wall clock, which
    // every process shares.
    const began = performance.now();
    const deadline = began + waitMs;
    try {
      for (let pause = 1; ; ) {
        const now = Date.now();
        const lease = this.#statements.lease(this.#id);
        if (lease === undefined) return false;
        // Read first, so a wait does not take the file's write lock at every look.
        if ((lease.owner === null || lease.owner === owner || lease.expires <= now) && this.#statements.take(this.#id, owner, now + this.#leaseMs, now)) {
          this.#hold(owner);
          return true;
        }
        const waited = performance.now();
        if (waited >= deadline) return false;
        pause = Math.min(waited - began < LONG_WAIT_MS ? MAX_POLL_PAUSE_MS : MAX_LONG_POLL_PAUSE_MS, pause * 2);
        await new Promise((resolve) => setTimeout(resolve, Math.min(deadline - waited, pause * (0.5 + Math.random()))));
      }
    } catch {
      return false;
    }
  }

  async commit(write: AgentWrite): Promise<WriteResult> {
    if (write.replaceHistory !== undefined) {
      const result = this.#statements.write(this.#id, write);
      if (result.ok) await this.end();
      return result;
    }
    const result = this.#statements.commit(this.#id, write, this.locked ? (this.#owner as string) : null);
    // A commit that succeeds released the lease in its transaction.
    if (result.ok) this.#stopRenewal();
    return result;
  }

  async end(): Promise<void> {
    if (!this.locked) return;
    this.#stopRenewal();
    try {
      this.#statements.release(this.#id, this.#owner as string);
    } catch {
      // The lease lapses on its own.
    }
  }

  /** Releases the lease at once (the store is closing). */
  drop(): void {
    void this.end();
  }

  #hold(owner: string): void {
    if (this.#renewal !== undefined) return;
    this.#held.add(this);
    this.#renewal = setInterval(() => {
      try {
        const now = Date.now();
        if (!this.#statements.take(this.#id, owner, now + this.#leaseMs, now)) this.#stopRenewal();
      } catch {
        // Tried again at the next renewal; the lease lapses if they all fail.
      }
    }, this.#leaseMs / 3);
    this.#renewal.unref();
  }

  #stopRenewal(): void {
    clearInterval(this.#renewal);
    this.#renewal = undefined;
    this.#held.delete(this);
  }
}
