/**
 * A tool that calls back into the agent whose program waits for it would wait for itself (the
 * agent runs one program at a time). While a tool runs, the agents waiting on it are known
 * here; a call of one of them is refused at once, and a call of another agent carries the set on
 * to the calls it makes. So is the call whose program called the tool: a call the tool makes is
 * part of its call tree, as a delegated call is (its budgets, its barrier, its redaction), and of its
 * trace.
 */
import { AsyncLocalStorage } from "node:async_hooks";

interface Waiting {
  readonly agents: ReadonlySet<string>;
  /** The call whose program called the tool (opaque here: `call/` says what it holds). */
  readonly caller: object;
  /** Cleared when the tool call ends: a callback the tool left behind may call the agent then. */
  active: boolean;
}

const waiting = new AsyncLocalStorage<Waiting>();

/** Runs a tool's `execute` for `caller`, knowing that `agents` wait for it; `ended` must be called when the tool call ends. */
export function runWhileWaiting<T>(agents: ReadonlySet<string>, caller: object, execute: () => T): { readonly result: T; readonly ended: () => void } {
  const state: Waiting = { agents, caller, active: true };
  const ended = () => {
    state.active = false;
  };
  try {
    return { result: waiting.run(state, execute), ended };
  } catch (error) {
    ended();
    throw error;
  }
}

/**
 * The tool whose code is running now: the agents waiting on it and the call whose program called
 * it; undefined outside a tool (or in a callback it left behind).
 */
export function toolRunningNow(): { readonly agents: ReadonlySet<string>; readonly caller: object } | undefined {
  const state = waiting.getStore();
  return state !== undefined && state.active ? state : undefined;
}

/** `base` with `more` added (the same set when nothing is added). */
export function withAgents(base: ReadonlySet<string>, ...more: readonly (string | ReadonlySet<string>)[]): ReadonlySet<string> {
  let result = base;
  for (const item of more) {
    const items = typeof item === "string" ? [item] : item;
    for (const agent of items) {
      if (result.has(agent)) continue;
      if (result === base) result = new Set(base);
      (result as Set<string>).add(agent);
    }
  }
  return result;
}
