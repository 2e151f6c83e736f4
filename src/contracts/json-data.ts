/**
 * Whether a value is JSON data: what a JSON Schema can say anything about. A program's value
 * arrives as it was built (a Map, a Set, a Date cross intact), and ajv reads a Map as an object
 * with no properties: a JSON Schema `returns` is checked only on JSON data, so the value the
 * caller gets is the value the schema passed.
 */

/** What to return instead, said after every problem. */
export const JSON_DATA_HINT = "Return JSON data: plain objects, arrays, strings, finite numbers, booleans and null.";

/** Parts the quick walk visits before it leaves the answer to the full walk (which remembers what it saw). */
const QUICK_WALK_PARTS = 1_000_000;

const EMPTY_SLOT = Symbol("empty slot");

/**
 * The first part of `value` that is not JSON data, as `path: it is a Map, which JSON cannot
 * hold` (no path for the value itself); undefined when all of it is. An object's property
 * that is `undefined` counts as absent, as it does for JSON and for ajv. Any depth; shared
 * parts are walked once; a cycle is a problem.
 */
export function jsonDataProblem(value: unknown): string | undefined {
  return isJsonTree(value) ? undefined : firstProblem(value);
}

/**
 * The common case, cheaply: true when `value` is JSON data whose parts were walked without
 * remembering any (a tree, or little sharing). False when it is not JSON data, or when the walk
 * ran long (much sharing, or a cycle): {@link firstProblem} then says.
 */
function isJsonTree(value: unknown): boolean {
  if (notJsonKind(value) !== undefined) return false;
  const pending: unknown[] = [value];
  let parts = 0;
  while (pending.length > 0) {
    const part = pending.pop();
    if (typeof part !== "object" || part === null) continue;
    if (Array.isArray(part)) {
      for (let index = 0; index < part.length; index += 1) {
        const item: unknown = part[index];
        if ((item === undefined && !Object.hasOwn(part, index)) || notJsonKind(item) !== undefined) return false;
        if (typeof item === "object" && item !== null) pending.push(item);
      }
      parts += part.length + 1;
    } else {
      for (const key in part) {
        const item: unknown = (part as Record<string, unknown>)[key];
        if (item === undefined || !Object.hasOwn(part, key)) continue;
        if (notJsonKind(item) !== undefined) return false;
        if (typeof item === "object" && item !== null) pending.push(item);
        parts += 1;
      }
      parts += 1;
    }
    if (parts > QUICK_WALK_PARTS) return false;
  }
  return true;
}

interface Frame {
  readonly container: object;
  readonly entries: readonly (readonly [string, unknown])[];
  index: number;
}

/** The first part of `value` that is not JSON data, with its path; walked once per shared part, without recursion. */
function firstProblem(value: unknown): string | undefined {
  const top = notJsonKind(value);
  if (top !== undefined) return `${top}, which JSON cannot hold`;
  if (typeof value !== "object" || value === null) return undefined;
  const open = new Set<object>([value]);
  const clean = new Set<object>();
  const frames: Frame[] = [{ container: value, entries: entriesOf(value), index: 0 }];
  while (frames.length > 0) {
    const frame = frames[frames.length - 1] as Frame;
    const entry = frame.entries[frame.index];
    if (entry === undefined) {
      frames.pop();
      open.delete(frame.container);
      clean.add(frame.container);
      continue;
    }
    frame.index += 1;
    const item = entry[1];
    const kind = item === EMPTY_SLOT ? "it is an empty slot" : (notJsonKind(item) ?? (open.has(item as object) ? "it refers back to a value that holds it (a cycle)" : undefined));
    if (kind !== undefined) return `${frames.map((each) => each.entries[each.index - 1]?.[0]).join(".")}: ${kind}, which JSON cannot hold`;
    if (typeof item === "object" && item !== null && !clean.has(item)) {
      open.add(item);
      frames.push({ container: item, entries: entriesOf(item), index: 0 });
    }
  }
  return undefined;
}

/** An array's slots (empty ones marked) or an object's own properties that are not `undefined`. */
function entriesOf(container: object): (readonly [string, unknown])[] {
  if (!Array.isArray(container)) return Object.entries(container).filter(([, item]) => item !== undefined);
  return Array.from({ length: container.length }, (_, index) => [String(index), Object.hasOwn(container, index) ? container[index] : EMPTY_SLOT] as const);
}

/** What `part` is, when it is not JSON data itself (its contents aside). */
function notJsonKind(part: unknown): string | undefined {
  switch (typeof part) {
    case "string":
    case "boolean":
      return undefined;
    case "number":
      return Number.isFinite(part) ? undefined : `it is ${part}`;
    case "undefined":
      return "it is undefined";
    case "bigint":
      return "it is a BigInt";
    case "object": {
      if (part === null || Array.isArray(part)) return undefined;
      const prototype: unknown = Object.getPrototypeOf(part);
      if (prototype === Object.prototype || prototype === null) return undefined;
      const name = (prototype as { constructor?: { name?: unknown } }).constructor?.name;
      return typeof name === "string" && name !== "" ? `it is ${/^[AEIO]/.test(name) ? "an" : "a"} ${name}` : "it is an instance of a class";
    }
    default:
      return `it is a ${typeof part}`;
  }
}
