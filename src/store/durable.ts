import type { AgentHistory, KeepValuesRule, KeptValues, SerializedRecord } from "../history/index.ts";
import { isSyncStore, StoreError, type AgentChanges, type AgentTurn, type AgentView, type AgentWrite, type Store, type TurnOptions, type WriteResult } from "./store.ts";

/** Writes of the application's values retried after conflicts with other processes before giving up. */
const MAX_SAVE_ATTEMPTS = 20;

function busy(store: Store, id: string): StoreError {
  return new StoreError(store.label, `agent "${id}" kept changing in other processes; the application's values could not be saved. Try again.`);
}

/** A view that has not been loaded from the store yet. */
const UNLOADED: AgentView = { version: -1, epoch: -1, length: 0 };
/** A version no store has: the next pull reloads the context whatever the store's version is. */
const RELOAD_CONTEXT = -2;

/** The process's copy of an agent, which a link keeps in step with the store. */
export interface LocalCopy {
  readonly context: Record<string, unknown>;
  readonly appKeys: Set<string>;
  readonly history: AgentHistory;
  /** The values of its latest calls, and how many it keeps. */
  readonly values: KeptValues;
  readonly options: { readonly keepValues: KeepValuesRule };
  /** Replaces the context's values in place. */
  commitContext(values: Record<string, unknown>): void;
}

/** A change the application makes to its values (a setter, `remember`, a delete). */
export type ValueChange = (values: Record<string, unknown>, appKeys: Set<string>) => void;

/**
 * An agent's link to its store: which agent it is there, how far this process's copy has
 * come (`view`), and the writes that keep the two in step. The store is the source of truth:
 * the copy is brought up to date from it (`pull`) and changed only after the store took a
 * write, except for the application's own writes to a store that cannot write synchronously,
 * which show at once and are saved in order behind (a failure is reported, and the copy
 * reloaded from the store, at the next call or `Agent.save`).
 */
export class DurableLink {
  readonly store: Store;
  readonly id: string;
  readonly role: string;
  view: AgentView = UNLOADED;
  readonly #local: LocalCopy;
  /** The application's writes to an asynchronous store, in order. */
  #saving: Promise<void> = Promise.resolve();
  #saveError: unknown;

  constructor(store: Store, id: string, role: string, local: LocalCopy) {
    this.store = store;
    this.id = id;
    this.role = role;
    this.#local = local;
  }

  /** Brings the copy up to date with the store (loading it the first time). Rejects with a `StoreError`. */
  async pull(): Promise<void> {
    await this.saved();
    const from = this.view;
    this.#apply(from.version === UNLOADED.version ? await this.store.open(this.id, this.role) : await this.store.changes(this.id, from), from);
  }

  /** {@link pull}, synchronously; only for stores that can. */
  pullSync(): void {
    const store = this.#syncStore();
    const from = this.view;
    this.#apply(from.version === UNLOADED.version ? store.openSync(this.id, this.role) : store.changesSync(this.id, from), from);
  }

  /**
   * After a write the store refused for its version: the next pull takes the store's context
   * whatever its version. Versions only grow while the agent lives, but an agent forgotten and
   * made afresh in another process starts again below this copy's, which would otherwise never
   * take it (and every commit would meet a conflict).
   */
  conflicted(): void {
    this.view = { ...this.view, version: RELOAD_CONTEXT };
  }

  /**
   * Waits until the application's writes are in the store. Rejects with the first that failed,
   * after reloading the copy's context from the store (so it holds what the store holds).
   */
  async saved(): Promise<void> {
    await this.#saving;
    const error = this.#saveError;
    if (error === undefined) return;
    this.#saveError = undefined;
    this.view = { ...this.view, version: RELOAD_CONTEXT };
    await this.pull().catch(() => undefined);
    throw error;
  }

  /**
   * Begins a turn of the agent in its store for one run and its commit (see `AgentTurn`): the
   * store's own, or one made of its lock, program and write for a store that has no turns.
   * Never rejects: a turn that could not be begun is one without the lock, whose pull and
   * commit then report what fails.
   */
  async turn(options: TurnOptions): Promise<AgentTurn> {
    const { store, id } = this;
    if (store.turn !== undefined) return store.turn(id, options);
    const release = store.lock === undefined ? undefined : await store.lock(id, options.waitMs).catch(() => undefined);
    const kept = options.programKey === undefined || store.program === undefined ? undefined : await store.program(options.programKey).catch(() => undefined);
    let ended = release === undefined;
    const end = async () => {
      if (ended) return;
      ended = true;
      await release?.();
    };
    return {
      locked: release !== undefined,
      stand: undefined,
      program: options.programKey === undefined ? undefined : (kept?.code ?? null),
      async commit(write) {
        const result = await store.write(id, write);
        if (result.ok) await end();
        return result;
      },
      end,
    };
  }

  /**
   * Brings the copy up to date, reading nothing when `stand` (where the agent stood as its turn
   * began) is where the copy already is. Rejects with a `StoreError`.
   */
  async catchUp(stand: AgentView | undefined): Promise<void> {
    await this.saved();
    const { view } = this;
    if (stand !== undefined && stand.version === view.version && stand.epoch === view.epoch && stand.length === view.length) return;
    await this.pull();
  }

  async write(write: AgentWrite): Promise<WriteResult> {
    return this.store.write(this.id, write);
  }

  /**
   * After the store took a call's write: the record, and the context when the call changed it.
   * When nothing else reached the store in between, the copy takes them as they are; otherwise
   * it pulls (what others wrote, then its own write, in the store's order). Never rejects: the
   * write is in the store, and a copy left behind catches up at its next pull.
   */
  async committed(serialized: SerializedRecord, context: Record<string, unknown> | undefined, result: Extract<WriteResult, { ok: true }>): Promise<void> {
    const { view } = this;
    const alone = result.epoch === view.epoch && result.length === view.length + 1 && result.version === view.version + (context === undefined ? 0 : 1);
    if (!alone) {
      await this.pull().catch(() => undefined);
      return;
    }
    this.#local.history.append(serialized);
    if (context !== undefined) this.#local.commitContext(context);
    this.view = { version: result.version, epoch: result.epoch, length: result.length };
  }

  /**
   * Makes an application change durable. A synchronous store takes it at once, merged into
   * what the store holds (retrying after other processes' writes), and only then is the copy
   * changed: a `StoreError` leaves the copy as it was. Otherwise the copy changes at once and
   * the write follows in order.
   */
  change(change: ValueChange): void {
    const local = this.#local;
    if (!isSyncStore(this.store)) {
      change(local.context, local.appKeys);
      this.#enqueue(async () => {
        for (let attempt = 1; ; attempt += 1) {
          const result = await this.store.write(this.id, { context: this.#changed(change), baseVersion: this.view.version });
          if (result.ok) {
            this.view = { ...this.view, version: result.version };
            return;
          }
          if (attempt >= MAX_SAVE_ATTEMPTS) throw busy(this.store, this.id);
          const from = this.view;
          this.#apply(await this.store.changes(this.id, from), from);
          change(local.context, local.appKeys);
        }
      });
      return;
    }
    const store = this.#syncStore();
    for (let attempt = 1; ; attempt += 1) {
      const result = store.writeSync(this.id, { context: this.#changed(change), baseVersion: this.view.version });
      if (result.ok) {
        change(local.context, local.appKeys);
        this.view = { ...this.view, version: result.version };
        return;
      }
      if (attempt >= MAX_SAVE_ATTEMPTS) throw busy(store, this.id);
      this.pullSync();
    }
  }

  /** Replaces the stored history with `records` (application-supplied history), then the copy's. */
  replaceHistory(records: readonly string[]): void {
    const take = (result: WriteResult) => {
      if (!result.ok) return;
      this.#local.history.replace(records);
      // The version is kept: if other processes changed the context meanwhile, the next pull loads it.
      this.view = { version: this.view.version, epoch: result.epoch, length: result.length };
    };
    if (isSyncStore(this.store)) take(this.store.writeSync(this.id, { replaceHistory: records }));
    else this.#enqueue(async () => take(await this.store.write(this.id, { replaceHistory: records })));
  }

  /** Deletes the agent and its children from the store; the copy starts over if used again. */
  async forget(): Promise<void> {
    await this.saved().catch(() => undefined);
    await this.store.forget(this.id);
    this.view = UNLOADED;
  }

  /** The copy's context with `change` made to it, as the store keeps it (the copy itself untouched). */
  #changed(change: ValueChange): { values: Record<string, unknown>; appKeys: string[] } {
    const values = { ...this.#local.context };
    const appKeys = new Set(this.#local.appKeys);
    change(values, appKeys);
    return { values, appKeys: [...appKeys] };
  }

  /**
   * Takes changes read from the store since `from`. Pulls may overlap (a call starting while
   * another commits), so changes are taken only as far as they are newer than the copy: records
   * the copy gained since `from` are skipped, an older context is ignored, and changes made
   * before a newer reset are dropped.
   */
  #apply(changes: AgentChanges | undefined, from: AgentView): void {
    if (changes === undefined) return;
    const local = this.#local;
    if (changes.values !== undefined) {
      local.values.clear();
      for (const [ref, text] of changes.values) local.values.keep(local.options.keepValues, ref, text);
    }
    let { version, epoch, length } = this.view;
    if (changes.reset) {
      if (changes.epoch < epoch) return;
      local.history.replace(changes.records);
      epoch = changes.epoch;
      length = changes.length;
    } else {
      if (from.epoch !== epoch) return;
      const gained = length - from.length;
      for (const json of changes.records.slice(gained)) local.history.appendJson(json);
      length = Math.max(length, changes.length);
    }
    if (changes.context !== undefined && (changes.version > version || version === RELOAD_CONTEXT || version === UNLOADED.version)) {
      local.commitContext(changes.context.values);
      local.appKeys.clear();
      for (const key of changes.context.appKeys) local.appKeys.add(key);
      version = changes.version;
    }
    this.view = { version, epoch, length };
  }

  #enqueue(work: () => Promise<void>): void {
    this.#saving = this.#saving.then(async () => {
      if (this.#saveError !== undefined) return;
      try {
        await work();
      } catch (error) {
        this.#saveError = error;
      }
    });
  }

  #syncStore() {
    const { store } = this;
    if (!isSyncStore(store)) throw new TypeError(`${store.label} cannot be read synchronously; use await Agent.open(role, options).`);
    return store;
  }
}

/** The agents of each store this process has opened, so one id opened twice is one agent. */
const opened = new WeakMap<Store, Map<string, WeakRef<object>>>();

/** The state already open in this process for `id` in `store`, if any. */
export function openedAgent<T extends object>(store: Store, id: string): T | undefined {
  return opened.get(store)?.get(id)?.deref() as T | undefined;
}

/** Remembers `state` as the one open for `id` in `store`. */
export function rememberOpened(store: Store, id: string, state: object): void {
  let agents = opened.get(store);
  if (agents === undefined) {
    agents = new Map();
    opened.set(store, agents);
  }
  agents.set(id, new WeakRef(state));
}

/** Forgets the open states of `id` and the agents delegated from it. */
export function forgetOpened(store: Store, id: string): void {
  const agents = opened.get(store);
  if (agents === undefined) return;
  for (const key of [...agents.keys()]) if (key === id || key.startsWith(`${id}/`)) agents.delete(key);
}
