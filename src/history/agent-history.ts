import { HistoryIndex, type HistoryQuery } from "./history-index.ts";
import type { HistoryRecord, SerializedRecord } from "./record.ts";
import { TextArena } from "./text-arena.ts";

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

function parseRecord(json: string): HistoryRecord {
  return deepFreeze(JSON.parse(json) as HistoryRecord);
}

/**
 * An agent's canonical history, owned by the host. Each record is kept as its JSON text, in
 * UTF-8 outside the JS heap: a third of the memory of the objects, no garbage-collector work
 * however long the history grows, and exactly what the sandbox mirror needs. Appending is
 * O(1); objects are made only when asked for (the prompt's preview, `Agent.history()`, whose
 * frozen array is shared until the next change).
 */
export class AgentHistory {
  #records = new TextArena();
  #index = new HistoryIndex();
  #snapshot: readonly HistoryRecord[] | undefined;
  /** The text of the record appended last, while it is the last. */
  #newest: string | undefined;
  /** The records `latest()` last returned and the index of the first, so each call parses only what is new. */
  #tail: { start: number; records: readonly HistoryRecord[] } = { start: 0, records: [] };
  /** Changes whenever the history is replaced rather than appended to. */
  epoch = 0;
  /** How many records the sandbox mirror is believed to hold. */
  mirrored = 0;

  get length(): number {
    return this.#records.count;
  }

  /** Serialised size of all records, which sizes the sandbox mirror's memory allowance. */
  get bytes(): number {
    return this.#records.bytes;
  }

  append({ record, json }: SerializedRecord): void {
    // Indexed at once when the index is up to date; records that arrived as text are indexed when a query needs them.
    const indexNow = this.#index.count === this.length;
    this.appendJson(json);
    if (indexNow) this.#index.add(record);
  }

  /** Appends a record's JSON text (a record another process wrote, say). */
  appendJson(json: string): void {
    this.#records.push(json);
    this.#newest = json;
    this.#snapshot = undefined;
  }

  /** Replaces every record (application-supplied history, already normalised to JSON text). */
  replace(records: Iterable<string>): void {
    const arena = new TextArena();
    for (const json of records) arena.push(json);
    this.#records = arena;
    this.#index = new HistoryIndex();
    this.#snapshot = undefined;
    this.#tail = { start: 0, records: [] };
    this.#newest = undefined;
    this.epoch += 1;
    this.mirrored = 0;
  }

  /** Records from `start` up to `end` (default: the end), as JSON text for the sandbox mirror. */
  since(start: number, end?: number): readonly string[] {
    // The next run usually needs only the record just appended: its text is at hand.
    if (this.#newest !== undefined && start === this.length - 1 && (end === undefined || end >= this.length)) return [this.#newest];
    return this.#records.slice(start, end);
  }

  /** The latest `count` records, oldest first. */
  latest(count: number): readonly HistoryRecord[] {
    const start = Math.max(0, this.length - Math.max(0, count));
    const tail = this.#tail;
    const records: HistoryRecord[] = [];
    for (let index = start; index < this.length; index += 1) {
      records.push(tail.records[index - tail.start] ?? parseRecord(this.#records.at(index)));
    }
    this.#tail = { start, records };
    return records;
  }

  /** The records that match `query`, oldest first; parses only those (and records not yet indexed). */
  query(query: HistoryQuery): readonly HistoryRecord[] {
    while (this.#index.count < this.length) this.#index.add(this.#at(this.#index.count));
    const limit = query.last ?? Infinity;
    const found: HistoryRecord[] = [];
    for (const position of this.#index.candidates(query)) {
      if (found.length >= limit) break;
      const record = this.#at(position);
      if (query.traceId !== undefined && record.trace_id !== query.traceId) continue;
      found.push(record);
    }
    return Object.freeze(found.reverse());
  }

  /** The record at `position`, from the shared snapshot when there is one. */
  #at(position: number): HistoryRecord {
    return this.#snapshot?.[position] ?? parseRecord(this.#records.at(position));
  }

  /** A frozen array of all records (frozen too), shared until the history changes. */
  snapshot(): readonly HistoryRecord[] {
    if (this.#snapshot === undefined) {
      const records: HistoryRecord[] = [];
      for (let index = 0; index < this.length; index += 1) records.push(parseRecord(this.#records.at(index)));
      this.#snapshot = Object.freeze(records);
    }
    return this.#snapshot;
  }
}
