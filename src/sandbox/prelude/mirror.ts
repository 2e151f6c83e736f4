/**
 * In the isolate: the agent's history mirror, which programs read as
 * `context.conversation_history`. Sent into the isolate as source text (composed with the other
 * pieces in `child/agent-isolate.ts`), so it must use nothing from its module scope.
 *
 * Records are frozen when parsed; programs see them through a view that refuses every write, so
 * nothing a program does can change what later calls read. The few records a run usually brings
 * wait as text until a program reads the history or the runtime's `tidy` comes; a record leaves
 * the text only once it is in the mirror, so a parse stopped part-way (a time limit, a program's
 * full stack) loses nothing.
 */
import type { MirrorChunk } from "../protocol.ts";

export interface HistoryMirror {
  /** Adds records (as text) where the chunk says; records the mirror already holds are skipped, so a chunk sent twice is added once. */
  add(chunk: MirrorChunk): void;
  /** Parses the records still held as text into the mirror. */
  parse(): void;
  /** How many records are held as text, not parsed yet. */
  unparsedCount(): number;
  /** The getter of `context.conversation_history`: the read-only view, with the records held as text parsed first. */
  readonly read: () => unknown;
}

export function createMirror(): HistoryMirror {
  "use strict";
  const { freeze, isFrozen, keys } = Object;
  const apply = Reflect.apply;
  const isArray = Array.isArray;
  const arrayPush = Array.prototype.push;
  const parseJson = JSON.parse;
  const stringifyJson = JSON.stringify;
  const ProxyCtor = Proxy;
  const MapCtor = Map;
  const mathMax = Math.max;

  const mirror: object[] = [];
  let unparsed: (string | undefined)[] = [];
  let firstUnparsed = 0;
  const refuse = () => false;
  const historyView = new ProxyCtor(mirror, {
    set: refuse,
    defineProperty: refuse,
    deleteProperty: refuse,
    setPrototypeOf: refuse,
    preventExtensions: refuse,
  });

  function deepFreeze(root: unknown): void {
    const pending = [root];
    while (pending.length > 0) {
      const value = pending.pop();
      if (typeof value !== "object" || value === null || isFrozen(value)) continue;
      freeze(value);
      for (const key of keys(value)) pending.push((value as Record<string, unknown>)[key]);
    }
  }

  // Most records repeat the same method, program text and outcome summary. The mirror keeps
  // one copy of each such string and of each such (frozen) summary, which roughly halves what
  // a record costs here; a bounded table, so a history of all-different values costs no more.
  const SHARED_FIELDS = ["method_name", "speaker", "program_source", "program"] as const;
  const MAX_SHARED = 4_096;
  const sharedValues = new MapCtor<string, unknown>();
  function shared<T>(key: string, value: T): T {
    const known = sharedValues.get(key);
    if (known !== undefined) return known as T;
    if (sharedValues.size < MAX_SHARED) sharedValues.set(key, value);
    return value;
  }
  const emptyKwargs = freeze({});
  function shareParts(record: Record<string, unknown>): void {
    for (const field of SHARED_FIELDS) {
      const value = record[field];
      if (typeof value === "string") record[field] = shared(value, value);
    }
    const summary = record.outcome_summary;
    if (typeof summary === "object" && summary !== null) record.outcome_summary = shared(`\u0000${stringifyJson(summary)}`, summary);
    const kwargs = record.kwargs;
    if (typeof kwargs === "object" && kwargs !== null && !isArray(kwargs) && keys(kwargs).length === 0) record.kwargs = emptyKwargs;
  }

  function add(chunk: MirrorChunk): void {
    if (chunk.reset) {
      mirror.length = 0;
      unparsed = [];
      firstUnparsed = 0;
    }
    const { records } = chunk;
    const held = mirror.length + unparsed.length - firstUnparsed;
    for (let index = mathMax(0, held - chunk.start); index < records.length; index += 1) {
      apply(arrayPush, unparsed, [records[index]]);
    }
  }

  function parse(): void {
    while (firstUnparsed < unparsed.length) {
      const record = parseJson(unparsed[firstUnparsed] as string) as Record<string, unknown>;
      if (typeof record === "object" && record !== null) shareParts(record);
      deepFreeze(record);
      apply(arrayPush, mirror, [record]);
      unparsed[firstUnparsed] = undefined;
      firstUnparsed += 1;
    }
    unparsed = [];
    firstUnparsed = 0;
  }

  const read = freeze(function conversation_history(): unknown {
    parse();
    return historyView;
  });

  return freeze({ add, parse, unparsedCount: () => unparsed.length - firstUnparsed, read });
}
