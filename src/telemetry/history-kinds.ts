/**
 * What a value of a generated program is, as far as the history goes. Pattern tags apply to
 * the kinds that hold several history values (lists and groups); records, entries and fields
 * only carry the taint, so that operations on a single record's fields are not tagged.
 */
export type Kind =
  /** The history, or an array or Set derived from it: filtered, sliced, mapped, collected by hand. */
  | "collection"
  /** Records (or counts) keyed by a record's field: `Object.groupBy`, `Map.groupBy`, or an object or Map filled by hand. */
  | "groups"
  /** The groups' members as a list: `Object.values(groups)`, `map.values()`. */
  | "groupList"
  /** `[key, members]` pairs: `Object.entries(groups)`, `map.entries()`, `[...map]`. */
  | "entryList"
  /** One `[key, members]` pair. */
  | "entry"
  /** One element of a collection. */
  | "record"
  /** Anything read from a record, or computed from history values (a string, a number, a key). */
  | "field";

const RANK: Readonly<Record<Kind, number>> = { field: 1, record: 2, entry: 3, groupList: 4, entryList: 5, groups: 6, collection: 7 };

/** Whether `kind` holds more than `current`: a variable bound to both is taken as the larger. */
export function widens(kind: Kind, current: Kind | undefined): boolean {
  return current === undefined || RANK[kind] > RANK[current];
}

/** Kinds with array methods and a `.length`: operations on them are tagged. */
export function isList(kind: Kind | undefined): kind is "collection" | "groupList" | "entryList" {
  return kind === "collection" || kind === "groupList" || kind === "entryList";
}

/** Kinds that hold several history values: lists and groups. */
export function holdsMany(kind: Kind | undefined): kind is "collection" | "groupList" | "entryList" | "groups" {
  return isList(kind) || kind === "groups";
}

/** Kinds a grouping key or a collected value may have: derived from one record. */
export function isFromRecord(kind: Kind | undefined): boolean {
  return kind === "record" || kind === "field" || kind === "entry";
}

/** What one element of a value of `kind` is (iterating a Map of groups gives entries). */
export function elementKind(kind: Kind): Kind {
  switch (kind) {
    case "collection":
      return "record";
    case "groupList":
      return "collection";
    case "entryList":
    case "groups":
      return "entry";
    default:
      return "field";
  }
}

/** The larger of two kinds. */
export function join(a: Kind | undefined, b: Kind | undefined): Kind | undefined {
  if (a === undefined) return b;
  return b !== undefined && widens(b, a) ? b : a;
}
