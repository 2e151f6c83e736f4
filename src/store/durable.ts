import { isSyncStore, StoreError, type AgentChanges, type AgentView, type AgentWrite, type Store, type StoredContext, type WriteResult } from "./store.ts";

/** Writes of the application's values retried after conflicts with other processes before giving up. */
const MAX_SAVE_ATTEMPTS = 20;

function busy(store: Store, id: string): StoreError {
  return new StoreError(store.label, `agent "${id}" kept changing in other processes; the application's values could not be saved. Try again.`);
}

/** A view that has not been loaded from the store yet. */
const UNLOADED: AgentView = { version: -1, epoch: -1, length: 0 };

/**
 * An agent's link to its store: which agent it is there, and how far this process's copy has
 * come. The store is the source of truth; the process's context and history are brought up to
 * date from it before a call (`pull`) and changed only after the store took a write.
 */
export class DurableLink {
  readonly store: Store;
  readonly id: string;
  readonly role: string;
  view: AgentView = UNLOADED;
  /** Application writes (setters, `remember`) not yet in an asynchronous store, in order. */
  #saving: Promise<void> = Promise.resolve();
  #saveError: unknown;

  constructor(store: Store, id: string, role: string) {
    this.store = store;
    this.id = id;
    this.role = role;
  }

  get loaded(): boolean {
    return this.view.version !== -1;
  }

  /** What changed in the store since this process's view (everything, the first time). */
  async pull(): Promise<AgentChanges | undefined> {
    await this.flush();
    return this.loaded ? this.store.changes(this.id, this.view) : this.store.open(this.id, this.role);
  }

  /** {@link pull}, synchronously; only for stores that can. */
  pullSync(): AgentChanges | undefined {
    const { store } = this;
    if (!isSyncStore(store)) throw new TypeError(`${store.label} cannot be read synchronously; use await Agent.open(role, options).`);
    return this.loaded ? store.changesSync(this.id, this.view) : store.openSync(this.id, this.role);
  }

  /** Takes the agent's lock in its store for one run and commit, when the store has locks. */
  async lock(waitMs: number): Promise<() => Promise<void>> {
    return this.store.lock === undefined ? async () => {} : this.store.lock(this.id, waitMs);
  }

  async write(write: AgentWrite): Promise<WriteResult> {
    return this.store.write(this.id, write);
  }

  /**
   * Writes the application's values, merged into whatever the store holds now: `apply` gets
   * the latest changes (when another process wrote since) and returns the context to store.
   * Synchronous stores write at once (throwing a `StoreError`); others in order, awaited by
   * the next call or `Agent.save`.
   */
  saveValues(apply: (changes: AgentChanges | undefined) => StoredContext): void {
    const { store } = this;
    if (isSyncStore(store)) {
      let changes: AgentChanges | undefined;
      for (let attempt = 1; ; attempt += 1) {
        const result = store.writeSync(this.id, { context: apply(changes), baseVersion: this.view.version });
        if (result.ok) {
          this.view = { ...this.view, version: result.version };
          return;
        }
        if (attempt >= MAX_SAVE_ATTEMPTS) throw busy(store, this.id);
        changes = store.changesSync(this.id, this.view);
      }
    }
    this.#enqueue(async () => {
      let changes: AgentChanges | undefined;
      for (let attempt = 1; ; attempt += 1) {
        const result = await store.write(this.id, { context: apply(changes), baseVersion: this.view.version });
        if (result.ok) {
          this.view = { ...this.view, version: result.version };
          return;
        }
        if (attempt >= MAX_SAVE_ATTEMPTS) throw busy(store, this.id);
        changes = await store.changes(this.id, this.view);
      }
    });
  }

  /** Replaces the stored history (application-supplied history); `done` runs once the store took it. */
  saveHistory(records: readonly string[], done: (result: Extract<WriteResult, { ok: true }>) => void): void {
    const { store } = this;
    const finish = (result: WriteResult) => {
      if (result.ok) done(result);
    };
    if (isSyncStore(store)) finish(store.writeSync(this.id, { replaceHistory: records }));
    else this.#enqueue(async () => finish(await store.write(this.id, { replaceHistory: records })));
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

  /** Waits for the application's writes to reach the store; rejects with the first that failed (once). */
  async flush(): Promise<void> {
    await this.#saving;
    const error = this.#saveError;
    if (error !== undefined) {
      this.#saveError = undefined;
      throw error;
    }
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
