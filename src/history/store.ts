import { recordBytes, type HistoryRecord } from "./record.ts";

function deepFreeze<T>(value: T): T {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const current = pending.pop();
    if (typeof current !== "object" || current === null || Object.isFrozen(current)) continue;
    Object.freeze(current);
    for (const key of Object.keys(current)) pending.push((current as Record<string, unknown>)[key]);
  }
  return value;
}

/**
 * An agent's canonical history, owned by the host. Appending is O(1); the frozen array
 * `Agent.history()` returns is built only when asked for and shared until the next change.
 */
export class HistoryStore {
  #records: HistoryRecord[] = [];
  #snapshot: readonly HistoryRecord[] | undefined;
  /** Changes whenever the history is replaced rather than appended to. */
  epoch = 0;
  /** How many records the sandbox mirror is believed to hold. */
  mirrored = 0;
  #bytes = 0;

  get length(): number {
    return this.#records.length;
  }

  /** Serialised size of all records, which sizes the sandbox mirror's memory allowance. */
  get bytes(): number {
    return this.#bytes;
  }

  append(record: HistoryRecord): void {
    this.#records.push(deepFreeze(record));
    this.#bytes += recordBytes(record);
    this.#snapshot = undefined;
  }

  /** Replaces every record (application-supplied history). */
  replace(records: readonly HistoryRecord[]): void {
    this.#records = records.map((record) => deepFreeze(record));
    this.#bytes = this.#records.reduce((total, record) => total + recordBytes(record), 0);
    this.#snapshot = undefined;
    this.epoch += 1;
    this.mirrored = 0;
  }

  /** Records from `index` on, as JSON text for the sandbox mirror. */
  since(index: number): string[] {
    return this.#records.slice(index).map((record) => JSON.stringify(record));
  }

  /** The latest `count` records, oldest first. */
  latest(count: number): readonly HistoryRecord[] {
    return count <= 0 ? [] : this.#records.slice(-count);
  }

  /** A frozen array of all records, shared until the history changes. */
  snapshot(): readonly HistoryRecord[] {
    this.#snapshot ??= Object.freeze([...this.#records]);
    return this.#snapshot;
  }
}
