/**
 * Kept programs: a program that worked, run again for later calls of the same key without
 * asking the provider. The key is the role, the method, the call's shape (how many positional
 * arguments, which named ones) and the prompt version; it ignores provider and model, as a
 * kept program is plain JavaScript. In memory, programs are shared by the agents of a role that
 * use the same provider object; in a store, by every agent of the role using it, across
 * processes and restarts; with `reuse: { scope: "agent" }`, by one agent and its helpers only.
 */
import { keepsPrograms, type KeptProgram, type ProgramStore, type ProgramToKeep, type Store } from "../store/index.ts";

/** Where an agent's kept programs are: in memory, or in its store. */
export interface ProgramShelf {
  get(key: string): KeptProgram | undefined | Promise<KeptProgram | undefined>;
  /** {@link get}, from where the programs are kept rather than from anything this process remembers. */
  reload(key: string): KeptProgram | undefined | Promise<KeptProgram | undefined>;
  /** Keeps `code` under `key`, replacing what was kept there (counts start over). */
  keep(program: ProgramToKeep): void | Promise<void>;
  /**
   * A call the program `code` kept under `key` served: `ok`, or failed by its own mistake; true
   * when that failure dropped it. Not counted when `key` holds another program by now (one
   * kept while this call ran), so that program is never charged for this one.
   */
  ran(key: string, code: string, ended: "ok" | "mistake", maxFailuresInRow: number): boolean | Promise<boolean>;
}

/**
 * The key of a call: `role.method(2; from,to)@promptVersion`. A delegated agent's role is
 * written after its ancestors' (`guest/bank.deposit(1)@…`), so a program written in one agent's
 * call tree is never run by the application's agents of another role. `scope`, when given, is
 * the identity of the agent the application made (`reuse: { scope: "agent" }`).
 */
export function programKey(lineage: readonly string[], method: string, args: readonly unknown[], kwargs: Readonly<Record<string, unknown>>, promptVersion: string, scope?: string): string {
  const names = Object.keys(kwargs).sort().map(keyPart);
  const key = `${lineage.map(keyPart).join("/")}.${keyPart(method)}(${args.length}${names.length === 0 ? "" : `; ${names.join(",")}`})@${promptVersion}`;
  return scope === undefined ? key : `${key} agent:${keyPart(scope)}`;
}

/**
 * A name as it appears in a key: as it is when it holds only letters, digits, `_`, `$` and
 * `-`, else JSON-quoted, so that no two different keys read the same (`a.b` + `c` against
 * `a` + `b.c`, or named arguments `x,y` against `x` and `y`).
 */
function keyPart(name: string): string {
  return /^[\p{L}\p{N}_$-]+$/u.test(name) ? name : JSON.stringify(name);
}

/** Most programs one in-memory shelf keeps. */
const MAX_PROGRAMS_IN_MEMORY = 10_000;

/** Kept programs in this process's memory. */
export class MemoryShelf implements ProgramShelf {
  readonly #programs = new Map<string, KeptProgram>();

  get(key: string): KeptProgram | undefined {
    return this.#programs.get(key);
  }

  reload(key: string): KeptProgram | undefined {
    return this.#programs.get(key);
  }

  keep(program: ProgramToKeep): void {
    this.#programs.delete(program.key);
    // Bounded: past the cap, the program kept longest ago goes (a Map keeps insertion order).
    if (this.#programs.size >= MAX_PROGRAMS_IN_MEMORY) this.#programs.delete(this.#programs.keys().next().value as string);
    this.#programs.set(program.key, { ...program, uses: 0, failures: 0, failuresInRow: 0, keptAt: new Date().toISOString(), lastUsed: null });
  }

  ran(key: string, code: string, ended: "ok" | "mistake", maxFailuresInRow: number): boolean {
    const program = this.#programs.get(key);
    if (program === undefined || program.code !== code) return false;
    const updated = afterRun(program, ended);
    if (updated.failuresInRow >= maxFailuresInRow) {
      this.#programs.delete(key);
      return true;
    }
    this.#programs.set(key, updated);
    return false;
  }

  /** Every kept program, optionally of one role. */
  list(role?: string): KeptProgram[] {
    return [...this.#programs.values()].filter((program) => role === undefined || program.role === role);
  }

  forget(key: string): boolean {
    return this.#programs.delete(key);
  }
}

/** A program's counts after one more call. */
export function afterRun(program: KeptProgram, ended: "ok" | "mistake"): KeptProgram {
  const lastUsed = new Date().toISOString();
  return ended === "ok"
    ? { ...program, uses: program.uses + 1, failuresInRow: 0, lastUsed }
    : { ...program, failures: program.failures + 1, failuresInRow: program.failuresInRow + 1, lastUsed };
}

/** Programs a store shelf remembers at most. */
const MAX_REMEMBERED = 1_000;

/**
 * Kept programs in a store. The programs read are remembered in this process, so a call does not
 * read its program again each time: every run of one is checked against the store's in the same
 * round trip as the run's turn (see `AgentTurn.program`), so a program another process dropped
 * or replaced is not run from memory.
 */
class StoreShelf implements ProgramShelf {
  readonly #store: ProgramStore;
  readonly #remembered = new Map<string, KeptProgram>();

  constructor(store: ProgramStore) {
    this.#store = store;
  }

  get(key: string): KeptProgram | Promise<KeptProgram | undefined> {
    return this.#remembered.get(key) ?? this.reload(key);
  }

  async reload(key: string): Promise<KeptProgram | undefined> {
    const program = await this.#store.program(key);
    this.#remember(key, program);
    return program;
  }

  async keep(program: ProgramToKeep): Promise<void> {
    this.#remembered.delete(program.key);
    await this.#store.keepProgram(program);
  }

  async ran(key: string, code: string, ended: "ok" | "mistake", maxFailuresInRow: number): Promise<boolean> {
    const dropped = await this.#store.programRan(key, code, ended, maxFailuresInRow);
    if (dropped) this.#remembered.delete(key);
    return dropped;
  }

  #remember(key: string, program: KeptProgram | undefined): void {
    this.#remembered.delete(key);
    if (program === undefined) return;
    if (this.#remembered.size >= MAX_REMEMBERED) this.#remembered.delete(this.#remembered.keys().next().value as string);
    this.#remembered.set(key, program);
  }
}

const byProvider = new WeakMap<object, MemoryShelf>();
const byStore = new WeakMap<Store, ProgramShelf>();

/** The shelf of an agent with `store` (when it has one) and `provider`. */
export function shelfFor(store: Store | undefined, provider: object | undefined): ProgramShelf | undefined {
  if (store !== undefined && keepsPrograms(store)) {
    let shelf = byStore.get(store);
    if (shelf === undefined) {
      shelf = new StoreShelf(store);
      byStore.set(store, shelf);
    }
    return shelf;
  }
  if (provider === undefined) return undefined;
  let shelf = byProvider.get(provider);
  if (shelf === undefined) {
    shelf = new MemoryShelf();
    byProvider.set(provider, shelf);
  }
  return shelf;
}
