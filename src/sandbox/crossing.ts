/** What can cross into the sandbox: the first part of a value structured clone cannot copy, found before it is sent. */
import { SANDBOX_LIMITS } from "./limits.ts";

/**
 * The path and reason of the first part of `value` that cannot be copied into the sandbox
 * by structured clone, or `undefined` when all of it can. Nesting counts as V8's serializer
 * meets it (each part at its first visit, in key order): past {@link SANDBOX_LIMITS.maxValueDepth}
 * levels the copy, or the store's, would overflow the stack.
 */
export function findUncloneable(value: unknown, path: string): string | undefined {
  return plainlyCloneable(value) ? undefined : describeUncloneable(value, path);
}

/** Entries the quick check reads (and containers it visits) before it leaves the answer to the full walk. */
const QUICK_READS = 100_000;

/**
 * True when `value` is certainly cloneable within the depth limit, checked the quick way: no
 * paths written, nothing remembered (a tree, as most values are, is visited once; the depth
 * counted without remembering is never less than the serializer's). False when it may not be,
 * or holds cycles or much sharing: then the full walk decides, and names the part.
 */
function plainlyCloneable(value: unknown): boolean {
  let reads = 0;
  const stack: [unknown, number][] = [[value, 0]];
  /** Reads one entry, and takes it up when it needs a look; false once the budget is spent. */
  const read = (record: Record<string | number, unknown>, key: string | number, depth: number): boolean => {
    if ((reads += 1) > QUICK_READS) return false;
    const item = record[key];
    if (needsLook(item)) stack.push([item, depth + 1]);
    return true;
  };
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number];
    if (typeof current === "function" || typeof current === "symbol") return false;
    if (typeof current !== "object" || current === null) continue;
    if ((reads += 1) > QUICK_READS || depth >= SANDBOX_LIMITS.maxValueDepth || current instanceof SharedArrayBuffer) return false;
    if (current instanceof Error && Object.hasOwn(current, "cause")) return false;
    if (isCloneableLeaf(current)) continue;
    if (current instanceof Map || current instanceof Set || !(Array.isArray(current) || isPlainish(current))) return false;
    const record = current as Record<string | number, unknown>;
    try {
      if (Array.isArray(current)) {
        // Not even listed when its keys could outrun the budget: listing a large array costs as much as reading it.
        if (current.length > QUICK_READS - reads) return false;
        const keys = Object.keys(current);
        const dense = isDense(current, keys);
        for (let at = 0; at < keys.length; at += 1) if (!read(record, dense ? at : (keys[at] as string), depth)) return false;
      } else {
        // Inherited keys too: one that is not plain data only sends the value to the full walk.
        for (const key in current) if (!read(record, key, depth)) return false;
      }
    } catch {
      return false;
    }
  }
  return true;
}

/** The full walk behind {@link findUncloneable}: the first part that cannot cross, with its path. */
function describeUncloneable(value: unknown, path: string): string | undefined {
  const seen = new Set<object>();
  const stack: [unknown, string, number][] = [[value, path, 0]];
  while (stack.length > 0) {
    const [current, at, depth] = stack.pop() as [unknown, string, number];
    switch (typeof current) {
      case "function":
        return `${at} is a function`;
      case "symbol":
        return `${at} is a symbol`;
      case "object":
        break;
      default:
        continue;
    }
    if (current === null || seen.has(current)) continue;
    seen.add(current);
    if (depth >= SANDBOX_LIMITS.maxValueDepth) return `${shortPath(at)} is nested deeper than ${SANDBOX_LIMITS.maxValueDepth} levels`;
    if (current instanceof SharedArrayBuffer) return `${at} is a SharedArrayBuffer (memory shared with the host; pass a copy, such as new Uint8Array(view))`;
    if (current instanceof Error) {
      // Besides its name, message and stack (as strings), the serializer copies only its own `cause`, when not a getter.
      const cause = Object.getOwnPropertyDescriptor(current, "cause");
      if (cause !== undefined && "value" in cause) stack.push([cause.value, `${at}.cause`, depth + 1]);
      continue;
    }
    if (isCloneableLeaf(current)) continue;
    // Children are pushed last first, so they are visited in the serializer's order.
    const children: [unknown, string, number][] = [];
    if (current instanceof Map) {
      let index = 0;
      for (const [key, entry] of current) {
        children.push([key, `${at}.<key ${index}>`, depth + 1], [entry, `${at}.get(${describeKey(key)})`, depth + 1]);
        index += 1;
      }
    } else if (current instanceof Set) {
      let index = 0;
      for (const entry of current) children.push([entry, `${at}.<entry ${index++}>`, depth + 1]);
    } else {
      if (!Array.isArray(current) && !isPlainish(current)) return `${at} is a ${current.constructor?.name ?? "host"} object`;
      // Own keys, not 0 to length: an array's named properties are copied with it, after its entries,
      // and a sparse array's length says nothing of the entries it holds.
      const keys = Object.keys(current);
      const dense = Array.isArray(current) && isDense(current, keys);
      for (let position = 0; position < keys.length; position += 1) {
        const key = dense ? position : (keys[position] as string);
        let entry: unknown;
        try {
          entry = (current as Record<string | number, unknown>)[key];
        } catch {
          return `${entryPath(at, current, key)} has a getter that throws`;
        }
        if (needsLook(entry)) children.push([entry, entryPath(at, current, key), depth + 1]);
      }
    }
    for (let index = children.length - 1; index >= 0; index -= 1) stack.push(children[index] as [unknown, string, number]);
  }
  return undefined;
}

/** Whether a part read may be one that cannot cross, or hold one (primitives other than symbols cross as they are). */
function needsLook(value: unknown): boolean {
  return (typeof value === "object" && value !== null) || typeof value === "function" || typeof value === "symbol";
}

/** Whether an array's own keys are exactly 0 to length - 1 (indices come first, in order; named properties last). */
function isDense(list: unknown[], keys: string[]): boolean {
  return keys.length === list.length && (keys.length === 0 || keys[keys.length - 1] === String(list.length - 1));
}

function entryPath(path: string, container: object, key: string | number): string {
  return typeof key === "number" || (Array.isArray(container) && isIndex(key, container)) ? `${path}[${key}]` : `${path}.${key}`;
}

function isIndex(key: string, list: unknown[]): boolean {
  const index = Number(key);
  return Number.isInteger(index) && index >= 0 && index < list.length && String(index) === key;
}

/** The start of a deeply nested part's path. */
function shortPath(path: string): string {
  return path.length <= 60 ? path : `${path.slice(0, 50)}…`;
}

function isCloneableLeaf(value: object): boolean {
  return (
    value instanceof Date ||
    value instanceof RegExp ||
    value instanceof Error ||
    ArrayBuffer.isView(value) ||
    value instanceof ArrayBuffer ||
    value instanceof Boolean ||
    value instanceof Number ||
    value instanceof String
  );
}

/** Objects that structured clone copies as plain data (plain objects and class instances). */
function isPlainish(value: object): boolean {
  if (value instanceof Promise || value instanceof WeakMap || value instanceof WeakSet) return false;
  return !(typeof (value as { then?: unknown }).then === "function" && value.constructor !== Object);
}

function describeKey(key: unknown): string {
  return typeof key === "string" ? JSON.stringify(key) : String(key);
}
