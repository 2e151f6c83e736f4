import { randomUUID } from "node:crypto";
import { stringify } from "safe-stable-stringify";
import { findUncloneable, sandboxPool } from "../sandbox/index.ts";
import { AgentHistory, KeptValues, normalizeHistory } from "../history/index.ts";
import { resolveOptions, type AgentOptions, type ResolvedOptions } from "./options.ts";
import { AnthropicProvider, OpenAIProvider, type Provider } from "../providers/index.ts";
import { Drain, ImprovError, readEnv } from "../shared/index.ts";
import { childId, DurableLink, forgetOpened, isSyncStore, openedAgent, rememberOpened, RoleMismatchError, StoreError, storeClosed, type Store, type StoredContext, type ValueChange } from "../store/index.ts";

/** Runs tasks one after another, in the order they were queued; one queued when none is waiting starts at once. */
export class SerialQueue {
  #tail: Promise<unknown> = Promise.resolve();
  /** Tasks queued whose end has not yet been seen. */
  #unfinished = 0;

  /** Whether a task queued now would wait for others. */
  get busy(): boolean {
    return this.#unfinished > 0;
  }

  run<T>(task: () => Promise<T>): Promise<T> {
    const idle = this.#unfinished === 0;
    this.#unfinished += 1;
    if (!idle) {
      const result = this.#tail.then(task);
      this.#tail = result.then(this.#finished, this.#finished);
      return result;
    }
    // A task queued from inside this one's first steps waits for this one's end.
    let ended!: () => void;
    this.#tail = new Promise<void>((resolve) => (ended = resolve));
    const result = startNow(task);
    const finished = () => {
      this.#finished();
      ended();
    };
    result.then(finished, finished);
    return result;
  }

  readonly #finished = (): void => {
    this.#unfinished -= 1;
  };
}

function startNow<T>(task: () => Promise<T>): Promise<T> {
  try {
    return Promise.resolve(task());
  } catch (error) {
    return Promise.reject(error);
  }
}

const fromEnvironment: { openai?: readonly Provider[]; anthropic?: readonly Provider[] } = {};

/** With no `provider` option: an `OpenAIProvider` when `OPENAI_API_KEY` is set, else an `AnthropicProvider` when `ANTHROPIC_API_KEY` is. */
function providersFromEnvironment(): readonly Provider[] | { readonly missing: string } {
  try {
    if (readEnv("OPENAI_API_KEY") !== undefined) return (fromEnvironment.openai ??= [new OpenAIProvider()]);
    if (readEnv("ANTHROPIC_API_KEY") !== undefined) return (fromEnvironment.anthropic ??= [new AnthropicProvider()]);
  } catch (error) {
    return { missing: `The provider the environment names cannot be made: ${(error as Error).message}` };
  }
  return { missing: "No provider configured. Pass { provider } to Agent.for(), or set OPENAI_API_KEY or ANTHROPIC_API_KEY." };
}

/** Frees an agent's isolate once the agent itself is garbage. */
const isolateReleaser = new FinalizationRegistry<string>((agentId) => {
  sandboxPool().forget(agentId);
  liveAgents.delete(agentId);
});

/** Every agent of the process that is still reachable, for `Agent.trace()`. */
const liveAgents = new Map<string, WeakRef<AgentState>>();

/** The agents of this process that are still in use. */
export function* agentsInProcess(): Generator<AgentState> {
  for (const ref of liveAgents.values()) {
    const state = ref.deref();
    if (state !== undefined) yield state;
  }
}

/**
 * Everything an agent owns, kept by the host: its role, options, context, history and
 * children. The `Agent` proxy is a view of this; generated code only ever sees copies. A
 * durable agent (one with a store) has a `link` to it: the store is the source of truth, and
 * this state is brought up to date from it and changed only after the store took a write.
 */
export class AgentState {
  readonly id = randomUUID();
  readonly role: string;
  readonly options: ResolvedOptions;
  /** 0 for an agent the application made, parent's depth + 1 for a delegate. */
  readonly depth: number;
  /** The roles from the agent the application made down to this one (its own last). */
  readonly lineage: readonly string[];
  /** The identity of the agent the application made, this one or its ancestor: the scope of `reuse: { scope: "agent" }`. */
  readonly scopeId: string;
  readonly context: Record<string, unknown> = {};
  /** Context keys the application wrote, which read back as values on the agent. */
  readonly appKeys = new Set<string>();
  readonly history = new AgentHistory();
  /** Values of the latest ok calls, by call id, for follow-ups. */
  readonly values = new KeptValues();
  /** Programs of one agent run and commit one at a time. */
  readonly queue = new SerialQueue();
  /** The calls the application started on this agent: `Agent.close` waits for them, then refuses new ones. */
  readonly calls = new Drain();
  /** Where the agent is kept, when it is durable. */
  readonly link: DurableLink | undefined;
  readonly #children = new Map<string, AgentState>();

  constructor(role: string, options: ResolvedOptions, parent: AgentState | undefined, durable?: { store: Store; id: string }) {
    this.role = role;
    this.options = options;
    this.depth = parent === undefined ? 0 : parent.depth + 1;
    this.lineage = Object.freeze(parent === undefined ? [role] : [...parent.lineage, role]);
    this.link = durable === undefined ? undefined : new DurableLink(durable.store, durable.id, role, this);
    this.scopeId = parent?.scopeId ?? this.agentId;
    isolateReleaser.register(this, this.id);
    liveAgents.set(this.id, new WeakRef(this));
  }

  /** The agent's identity in records of traces: its durable id, or its in-process id. */
  get agentId(): string {
    return this.link?.id ?? this.id;
  }

  /**
   * The agent of `role` for `options`: a new in-memory one, or with a store, the one stored
   * under `options.id` (default: the role), shared with any proxy of it already open (and not
   * closed) in this process. A store that loads synchronously is read at once (`load: "now"`); otherwise the
   * state is loaded by its first `pull()`.
   */
  static create(role: string, options: ResolvedOptions, parent?: AgentState, id = options.id ?? role): AgentState {
    const { store } = options;
    if (store === undefined) return new AgentState(role, options, parent);
    const open = openedAgent<AgentState>(store, id);
    // A closed agent takes no calls: opening its id again (a request after the last one closed it) makes a new one.
    if (open !== undefined && !open.calls.closing) {
      if (open.role !== role) throw new RoleMismatchError(id, open.role, role, "open");
      return open;
    }
    const state = new AgentState(role, options, parent, { store, id });
    if (isSyncStore(store)) state.link?.pullSync();
    rememberOpened(store, id, state);
    return state;
  }

  /** The providers to ask, in order, or why there are none. */
  providers(): readonly Provider[] | { readonly missing: string } {
    return this.options.providers ?? providersFromEnvironment();
  }

  /**
   * The child agent of `role`, inheriting this agent's options. Children without options of
   * their own are kept, so repeated delegation to a role reaches the same agent and history;
   * a durable agent's children are stored too, under an id derived from its own.
   */
  child(role: string, options?: AgentOptions): AgentState {
    const key = options === undefined ? role : `${role}\u0000${optionsKey(options)}`;
    let child = this.#children.get(key);
    if (child !== undefined) return child;
    // A program told roles by hostile data could otherwise add helpers, and their histories, to a long-lived agent without end.
    if (options === undefined && this.#children.size >= MAX_CHILD_ROLES) {
      throw new ImprovError("budget_exceeded", `Agent "${this.role}" has helpers of ${MAX_CHILD_ROLES} roles, the most an agent keeps: delegate to a role it has, or make another agent.`);
    }
    const resolved = resolveOptions(options, this.options);
    // Children under another contract are other agents: in a store, under an id of their own.
    const { fingerprint } = resolved.contract;
    child = this.link === undefined ? new AgentState(role, resolved, this) : AgentState.create(role, resolved, this, childId(this.link.id, fingerprint === "" ? role : `${role}~${fingerprint}`));
    // Bounded: past it, children with options of their own are made fresh for each call.
    if (options === undefined || this.#children.size < MAX_KEPT_CHILDREN) this.#children.set(key, child);
    return child;
  }

  /** Whether `name` reads back as a value: the application wrote it and it is still in context. */
  isReader(name: string): boolean {
    return this.appKeys.has(name) && Object.hasOwn(this.context, name);
  }

  /** Application write of one context key (setter or `remember`). Throws `TypeError` for data that cannot cross. */
  write(name: string, value: unknown): void {
    this.#refuseWhenClosed(name);
    refuseProtoKey(this.role, name);
    if (name === "conversation_history") {
      this.#replaceHistory(value);
      return;
    }
    const problem = findUncloneable(value, name);
    if (problem !== undefined) {
      throw new TypeError(`Cannot store "${name}" on agent "${this.role}": ${problem}, which cannot enter the sandbox. Store plain data.`);
    }
    this.#change((values, appKeys) => {
      values[name] = value;
      appKeys.add(name);
    });
  }

  /** Refuses, before anything is written, entries of which one could not be: `__proto__`. */
  checkEntries(names: readonly string[]): void {
    for (const name of names) refuseProtoKey(this.role, name);
  }

  /** Application delete of one of its keys. */
  remove(name: string): void {
    this.#refuseWhenClosed(name);
    if (!this.appKeys.has(name)) return;
    this.#change((values, appKeys) => {
      delete values[name];
      appKeys.delete(name);
    });
  }

  /** A closed agent, or one whose store was closed, keeps no more values: a write would be lost (a durable one's never reaches its store). */
  #refuseWhenClosed(name: string): void {
    if (this.calls.closing) throw new TypeError(`Cannot change "${name}" on agent "${this.role}": it was closed (Agent.close()). Make a new one with Agent.for() or Agent.open().`);
    const store = this.link?.store;
    if (store !== undefined && storeClosed(store)) {
      throw new StoreError(store.label, `cannot change "${name}" on agent "${this.role}": the store was closed (store.close()). Open the store and the agent again (Agent.open()) to go on.`);
    }
  }

  #change(change: ValueChange): void {
    if (this.link === undefined) change(this.context, this.appKeys);
    else this.link.change(change);
  }

  /** Applies a committed program's context in place, so `runtimeContext` stays the same object. */
  commitContext(next: Record<string, unknown>): void {
    for (const key of Object.keys(this.context)) {
      if (!Object.hasOwn(next, key)) delete this.context[key];
    }
    for (const [key, value] of Object.entries(next)) this.context[key] = value;
  }

  /** Deletes the agent (and its children) from its store and empties this copy. */
  /**
   * Refuses the application's new calls on this agent and its children, waits for those in
   * flight (at most `timeoutMs`), and frees the agent's isolate. True when every call ended in time.
   */
  async close(timeoutMs: number): Promise<boolean> {
    const ended = await this.calls.close(timeoutMs);
    for (const child of this.#children.values()) await child.close(0);
    sandboxPool().forget(this.id);
    return ended;
  }

  async forget(): Promise<void> {
    if (this.link !== undefined) {
      await this.link.forget();
      forgetOpened(this.link.store, this.link.id);
    }
    this.commitContext({});
    this.appKeys.clear();
    this.history.replace([]);
    this.#children.clear();
  }

  /** Brings a durable agent up to date with its store (a no-op for others). Rejects with a `StoreError`. */
  async pull(): Promise<void> {
    await this.link?.pull();
  }

  /** The context as the store keeps it. */
  storedContext(values: Record<string, unknown> = this.context): StoredContext {
    return { values, appKeys: [...this.appKeys] };
  }

  #replaceHistory(value: unknown): void {
    if (this.link === undefined) {
      // One record at a time into the history's off-heap text: a long history is never held twice.
      this.history.replace(normalizeHistory(value, this.options.debug));
      return;
    }
    this.link.replaceHistory([...normalizeHistory(value, this.options.debug)]);
  }
}

/** Children an agent keeps (by role, and by role and options for children with options of their own). */
const MAX_KEPT_CHILDREN = 256;

/** Roles an agent has helpers of: a new one past them is refused (`budget_exceeded`). */
export const MAX_CHILD_ROLES = 1_024;

const identities = new WeakMap<object, number>();
let nextIdentity = 1;

/**
 * Options as a key: plain data by its content (so the same contract from a program reaches the
 * same child), anything else (a function, a schema object, a provider, a store) by identity.
 */
function optionsKey(options: AgentOptions): string {
  return (
    stringify(options, (_key, value: unknown) => {
      if (typeof value === "function" || (typeof value === "object" && value !== null && !Array.isArray(value) && !isPlainObject(value))) {
        let identity = identities.get(value as object);
        if (identity === undefined) identities.set(value as object, (identity = nextIdentity++));
        return `[object #${identity}]`;
      }
      return value;
    }) ?? ""
  );
}

function isPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/** `__proto__` names no value: assigned, it would change the context object's prototype. */
function refuseProtoKey(role: string, name: string): void {
  if (name === "__proto__") throw new TypeError(`Cannot store "__proto__" on agent "${role}": it would change the context object's prototype, not store a value. Use another key.`);
}
