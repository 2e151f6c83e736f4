import { randomUUID } from "node:crypto";
import { findUncloneable } from "./call/arguments.ts";
import { normalizeHistory } from "./history/normalize.ts";
import { HistoryStore } from "./history/store.ts";
import { resolveOptions, type AgentOptions, type ResolvedOptions } from "./options.ts";
import { OpenAIProvider } from "./providers/openai.ts";
import type { Provider } from "./providers/provider.ts";
import { readEnv } from "./env.ts";
import { sandboxSupervisor } from "./sandbox/host/supervisor.ts";

/** Runs tasks one after another, in the order they were queued. */
export class SerialQueue {
  #tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(task);
    this.#tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}

let defaultProvider: Provider | undefined;

/** Frees an agent's isolate once the agent itself is garbage. */
const isolateReleaser = new FinalizationRegistry<string>((agentId) => sandboxSupervisor().forget(agentId));

/**
 * Everything an agent owns, kept by the host: its role, options, context, history and
 * children. The `Agent` proxy is a view of this; generated code only ever sees copies.
 */
export class AgentState {
  readonly id = randomUUID();
  readonly role: string;
  readonly options: ResolvedOptions;
  /** 0 for an agent the application made, parent's depth + 1 for a delegate. */
  readonly depth: number;
  readonly context: Record<string, unknown> = {};
  /** Context keys the application wrote, which read back as values on the agent. */
  readonly appKeys = new Set<string>();
  readonly history = new HistoryStore();
  /** Programs of one agent run and commit one at a time. */
  readonly queue = new SerialQueue();
  readonly #children = new Map<string, AgentState>();

  constructor(role: string, options: ResolvedOptions, depth: number) {
    this.role = role;
    this.options = options;
    this.depth = depth;
    isolateReleaser.register(this, this.id);
  }

  /** The provider to ask, or `undefined` when none is configured. */
  provider(): Provider | undefined {
    if (this.options.provider) return this.options.provider;
    if (readEnv("OPENAI_API_KEY") === undefined) return undefined;
    defaultProvider ??= new OpenAIProvider();
    return defaultProvider;
  }

  /**
   * The child agent of `role`, inheriting this agent's options. Children without options of
   * their own are kept, so repeated delegation to a role reaches the same agent and history.
   */
  child(role: string, options?: AgentOptions): AgentState {
    const resolved = resolveOptions(options, this.options);
    if (options !== undefined) return new AgentState(role, resolved, this.depth + 1);
    let child = this.#children.get(role);
    if (!child) {
      child = new AgentState(role, resolved, this.depth + 1);
      this.#children.set(role, child);
    }
    return child;
  }

  /** Whether `name` reads back as a value: the application wrote it and it is still in context. */
  isReader(name: string): boolean {
    return this.appKeys.has(name) && Object.hasOwn(this.context, name);
  }

  /** Application write of one context key (setter or `remember`). Throws `TypeError` for data that cannot cross. */
  write(name: string, value: unknown): void {
    if (name === "conversation_history") {
      this.history.replace(normalizeHistory(value, this.options.debug));
      return;
    }
    const problem = findUncloneable(value, name);
    if (problem !== undefined) {
      throw new TypeError(`Cannot store "${name}" on agent "${this.role}": ${problem}, which cannot enter the sandbox. Store plain data.`);
    }
    this.context[name] = value;
    this.appKeys.add(name);
  }

  /** Applies a committed program's context in place, so `runtimeContext` stays the same object. */
  commitContext(next: Record<string, unknown>): void {
    for (const key of Object.keys(this.context)) {
      if (!Object.hasOwn(next, key)) delete this.context[key];
    }
    for (const [key, value] of Object.entries(next)) this.context[key] = value;
  }
}
