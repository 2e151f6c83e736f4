import type { HistoryRecord } from "./record.ts";

/** Filters of `Agent.history(agent, query)`; every filter given must hold. */
export interface HistoryQuery {
  /** Calls of this method. */
  readonly method?: string;
  readonly status?: "ok" | "error";
  /** Calls that ended with this error type. */
  readonly errorType?: string;
  readonly speaker?: "user" | "tool" | "agent";
  readonly traceId?: string;
  /** Calls made at or after this time (a Date, an ISO 8601 string or epoch milliseconds). */
  readonly since?: Date | string | number;
  /** Calls made at or before this time. */
  readonly until?: Date | string | number;
  /** Only the latest `last` matching records (still oldest first). */
  readonly last?: number;
}

export const HISTORY_QUERY_NAMES = ["method", "status", "errorType", "speaker", "traceId", "since", "until", "last"] as const;

/** A growable array of numbers, kept in a typed array (32-bit integers, or doubles for times). */
class NumberList {
  #items: Int32Array | Float64Array;
  length = 0;

  constructor(kind: "int" | "double" = "int") {
    this.#items = kind === "int" ? new Int32Array(16) : new Float64Array(16);
  }

  push(value: number): void {
    if (this.length === this.#items.length) {
      const grown = this.#items instanceof Int32Array ? new Int32Array(this.length * 2) : new Float64Array(this.length * 2);
      grown.set(this.#items);
      this.#items = grown;
    }
    this.#items[this.length++] = value;
  }

  at(index: number): number {
    return this.#items[index] as number;
  }
}

/** A string's 32-bit FNV-1a hash: the index keeps trace ids as hashes, and checks matches on the record. */
function hash(text: string): number {
  let value = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    value ^= text.charCodeAt(index);
    value = Math.imul(value, 0x01000193);
  }
  return value | 0;
}

/**
 * What queries need of each record, kept as records are appended: a few numbers a record
 * (codes for method, outcome and speaker, a hash of the trace id, the time) and, per method and
 * per outcome, the positions of its records. A query walks the shortest position list that
 * applies (from the end, for `last`) and parses only the records it returns.
 */
export class HistoryIndex {
  readonly #codes = new Map<string, number>();
  readonly #positions = new Map<number, NumberList>();
  readonly #method = new NumberList();
  readonly #outcome = new NumberList();
  readonly #speaker = new NumberList();
  readonly #trace = new NumberList();
  readonly #time = new NumberList("double");
  readonly #all = new NumberList();

  /** How many records are indexed (the first `count` of the history). */
  get count(): number {
    return this.#method.length;
  }

  add(record: HistoryRecord): void {
    const position = this.count;
    const method = this.#code(`m:${String(record.method_name)}`);
    const summary = record.outcome_summary as Partial<HistoryRecord["outcome_summary"]> | undefined;
    const outcome = this.#code(summary?.ok === true ? "o:ok" : `o:error:${String(summary?.error_type ?? record.error_type ?? "")}`);
    this.#method.push(method);
    this.#outcome.push(outcome);
    this.#speaker.push(this.#code(`s:${String(record.speaker)}`));
    this.#trace.push(typeof record.trace_id === "string" ? hash(record.trace_id) : 0);
    this.#time.push(Date.parse(String(record.timestamp)));
    this.#all.push(position);
    this.#listOf(method).push(position);
    this.#listOf(outcome).push(position);
    if (summary?.ok !== true) this.#listOf(this.#code("o:error")).push(position);
  }

  /**
   * Positions of the records that may match, newest first. A trace id is matched by its hash
   * here, so the caller checks it on the record.
   */
  *candidates(query: HistoryQuery): Generator<number> {
    // Position lists that apply (method, outcome); the walk follows the shortest.
    const lists: NumberList[] = [];
    const listFor = (key: string) => {
      const code = this.#codes.get(key);
      const list = code === undefined ? undefined : this.#positions.get(code);
      if (list !== undefined) lists.push(list);
      return list !== undefined;
    };
    if (query.method !== undefined && !listFor(`m:${query.method}`)) return;
    if (query.errorType !== undefined) {
      if (query.status === "ok" || !listFor(`o:error:${query.errorType}`)) return;
    } else if (query.status !== undefined && !listFor(query.status === "ok" ? "o:ok" : "o:error")) return;
    const speaker = query.speaker === undefined ? undefined : this.#codes.get(`s:${query.speaker}`);
    if (query.speaker !== undefined && speaker === undefined) return;
    const trace = query.traceId === undefined ? undefined : hash(query.traceId);
    const since = query.since === undefined ? -Infinity : toTime(query.since);
    const until = query.until === undefined ? Infinity : toTime(query.until);
    let shortest = this.#all;
    for (const list of lists) if (list.length < shortest.length) shortest = list;
    for (let index = shortest.length - 1; index >= 0; index -= 1) {
      const position = shortest.at(index);
      if (lists.some((list) => list !== shortest && !includes(list, position))) continue;
      if (speaker !== undefined && this.#speaker.at(position) !== speaker) continue;
      if (trace !== undefined && this.#trace.at(position) !== trace) continue;
      const time = this.#time.at(position);
      if (time < since || time > until) continue;
      yield position;
    }
  }

  #code(key: string): number {
    let code = this.#codes.get(key);
    if (code === undefined) {
      code = this.#codes.size + 1;
      this.#codes.set(key, code);
    }
    return code;
  }

  #listOf(code: number): NumberList {
    let list = this.#positions.get(code);
    if (list === undefined) {
      list = new NumberList();
      this.#positions.set(code, list);
    }
    return list;
  }
}

/** Whether a sorted position list holds `position` (binary search). */
function includes(list: NumberList, position: number): boolean {
  let low = 0;
  let high = list.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const value = list.at(middle);
    if (value === position) return true;
    if (value < position) low = middle + 1;
    else high = middle - 1;
  }
  return false;
}

/** Epoch milliseconds of a `since`/`until` value (already validated). */
export function toTime(value: Date | string | number): number {
  return value instanceof Date ? value.getTime() : typeof value === "number" ? value : Date.parse(value);
}

/** Checks a query's names and types; throws a TypeError that says what is wrong. */
export function validateHistoryQuery(query: unknown): HistoryQuery {
  if (typeof query !== "object" || query === null || Array.isArray(query)) throw new TypeError("Agent.history(agent, query): the query must be an object.");
  const fields = query as Record<string, unknown>;
  for (const name of Object.keys(fields)) {
    if (!(HISTORY_QUERY_NAMES as readonly string[]).includes(name)) throw new TypeError(`Unknown history query field "${name}". Valid fields: ${HISTORY_QUERY_NAMES.join(", ")}.`);
  }
  for (const name of ["method", "errorType", "traceId"] as const) {
    if (fields[name] !== undefined && typeof fields[name] !== "string") throw new TypeError(`History query field ${name} must be a string.`);
  }
  if (fields.status !== undefined && fields.status !== "ok" && fields.status !== "error") throw new TypeError('History query field status must be "ok" or "error".');
  if (fields.speaker !== undefined && !["user", "tool", "agent"].includes(fields.speaker as string)) throw new TypeError('History query field speaker must be "user", "tool" or "agent".');
  for (const name of ["since", "until"] as const) {
    const value = fields[name];
    if (value === undefined) continue;
    const valid = (value instanceof Date || typeof value === "string" || typeof value === "number") && Number.isFinite(toTime(value as Date | string | number));
    if (!valid) throw new TypeError(`History query field ${name} must be a Date, an ISO 8601 string or epoch milliseconds.`);
  }
  if (fields.last !== undefined && !(Number.isInteger(fields.last) && (fields.last as number) >= 0)) throw new TypeError("History query field last must be a whole number ≥ 0.");
  return fields as HistoryQuery;
}
