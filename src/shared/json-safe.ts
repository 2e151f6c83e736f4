/**
 * Converting any value into JSON-safe data for history records and log lines. One bad part
 * never costs the whole: each value that JSON cannot hold becomes a descriptive stand-in
 * string at the place where it occurs.
 *
 * | value                         | stand-in                          |
 * |-------------------------------|-----------------------------------|
 * | `undefined`                   | `"[undefined]"`                   |
 * | `NaN`, `±Infinity`            | `"[NaN]"`, `"[Infinity]"`, `"[-Infinity]"` |
 * | `123n`                        | `"[BigInt 123]"`                  |
 * | function                      | `"[Function name]"`               |
 * | symbol                        | `"[Symbol(description)]"`         |
 * | `Date`                        | `"[Date 2025-01-01T00:00:00.000Z]"` (`"[Date invalid]"`) |
 * | `Map`, `Set`                  | `"[Map(2)]"`, `"[Set(3)]"`        |
 * | error                         | `"[TypeError: message]"`          |
 * | class instance                | `"[ClassName]"`                   |
 * | cycle                         | `"[Circular]"`                    |
 * | getter or `toJSON` that throws| `"[Unreadable: message]"`         |
 * | nesting past 32 levels        | `"[Nested too deep]"`             |
 * | a `__proto__` key              | dropped                            |
 * | anything past the output limit | `"[output limit reached]"`, and the rest of its container left out |
 *
 * The copy is bounded as a whole, not only per string and per container: a value that shares
 * one object many times (a "billion laughs" graph, whose JSON expansion is astronomically
 * large) is copied up to the output limit and no further.
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Strings longer than this are cut, with a marker saying how much was cut. */
export const MAX_STRING_CHARS = 10_000;
const MAX_DEPTH = 32;
const MAX_ITEMS = 1_000;
/** Most characters a JSON-safe copy holds, counted roughly as JSON; the rest is left out with a marker. */
export const MAX_JSON_SAFE_CHARS = 1_000_000;
const OUTPUT_LIMIT = "[output limit reached]";

/** Characters a copy may still add, and how it treats class instances. */
interface Budget {
  left: number;
  /** Copy a class instance's own fields (as structured clone does) instead of naming its class. */
  readonly instanceFields?: boolean;
}

/** Cuts `text` to `limit` characters, saying how many were dropped. */
export function truncateString(text: string, limit = MAX_STRING_CHARS): string {
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}…[truncated ${text.length - limit} chars]`;
}

/** An error's message (or the thrown value as text), never throwing whatever was thrown. */
export function describeError(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return "unknown";
  }
}

/**
 * A JSON-safe copy of `value` (see the table above), of at most about `maxChars` characters as
 * JSON. With `instanceFields`, a class instance is copied as its own fields, as it reaches a
 * program, instead of as its class name. Never throws.
 */
export function toJsonSafe(value: unknown, maxChars = MAX_JSON_SAFE_CHARS, options: { instanceFields?: boolean } = {}): JsonValue {
  return convert(value, 0, new Set(), { left: maxChars, instanceFields: options.instanceFields === true });
}

/**
 * Whether `value` is already plain JSON that {@link toJsonSafe} (with `maxChars`) would copy
 * unchanged: plain objects and arrays within the depth, size and output limits, counted as that
 * copy counts them, short strings, finite numbers, booleans and null, no `__proto__` keys, no
 * getters. Allocates nothing, so the common case skips the copy.
 */
export function isPlainJson(value: unknown, maxChars = MAX_JSON_SAFE_CHARS): value is JsonValue {
  return isPlain(value, 0, { left: maxChars });
}

/** Each value takes at least one character, so `left >= 0` after it means the copy had room before it, as it checks. */
function isPlain(value: unknown, depth: number, budget: Budget): boolean {
  switch (typeof value) {
    case "string":
      budget.left -= value.length + 2;
      return value.length <= MAX_STRING_CHARS && budget.left >= 0;
    case "number":
      budget.left -= String(value).length;
      return Number.isFinite(value) && budget.left >= 0;
    case "boolean":
      budget.left -= String(value).length;
      return budget.left >= 0;
    case "object":
      break;
    default:
      return false;
  }
  if (value === null) {
    budget.left -= 4;
    return budget.left >= 0;
  }
  budget.left -= 2;
  if (depth >= MAX_DEPTH || budget.left < 0) return false;
  if (Array.isArray(value)) {
    if (value.length > MAX_ITEMS) return false;
    for (let index = 0; index < value.length; index += 1) {
      if (!Object.hasOwn(value, index) || !isPlain(value[index], depth + 1, budget)) return false;
    }
    return true;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  let count = 0;
  for (const key in value) {
    count += 1;
    if (count > MAX_ITEMS || key === "__proto__" || key.length > 200 || !Object.hasOwn(value, key)) return false;
    budget.left -= key.length + 3;
    const descriptor = Object.getOwnPropertyDescriptor(value, key);
    if (!descriptor || !("value" in descriptor) || !isPlain(descriptor.value, depth + 1, budget)) return false;
  }
  return true;
}

/** `value` as JSON-safe data: itself when it already is plain JSON (cheap path), else a safe copy. */
export function asJsonSafe(value: unknown): JsonValue {
  return isPlainJson(value) ? value : toJsonSafe(value);
}

function convert(value: unknown, depth: number, ancestors: Set<object>, budget: Budget): JsonValue {
  if (budget.left <= 0) return OUTPUT_LIMIT;
  const copy = convertWithin(value, depth, ancestors, budget);
  if (typeof copy !== "object" || copy === null) budget.left -= typeof copy === "string" ? copy.length + 2 : String(copy).length;
  return copy;
}

function convertWithin(value: unknown, depth: number, ancestors: Set<object>, budget: Budget): JsonValue {
  switch (typeof value) {
    case "string":
      return truncateString(value);
    case "boolean":
      return value;
    case "number":
      if (Number.isFinite(value)) return value;
      return Number.isNaN(value) ? "[NaN]" : value > 0 ? "[Infinity]" : "[-Infinity]";
    case "undefined":
      return "[undefined]";
    case "bigint":
      return truncateString(`[BigInt ${value}]`);
    case "symbol":
      return truncateString(`[Symbol(${value.description ?? ""})]`);
    case "function":
      return `[Function ${value.name || "anonymous"}]`;
    default:
      break;
  }
  if (value === null) return null;
  const object = value as object;
  if (ancestors.has(object)) return "[Circular]";
  if (depth >= MAX_DEPTH) return "[Nested too deep]";
  try {
    if (object instanceof Date) return Number.isNaN(object.getTime()) ? "[Date invalid]" : `[Date ${object.toISOString()}]`;
    if (object instanceof Map) return `[Map(${object.size})]`;
    if (object instanceof Set) return `[Set(${object.size})]`;
    if (object instanceof Error) return truncateString(`[${object.name}: ${object.message}]`);
    // A class instance copied as its fields crosses by structured clone, which never calls toJSON.
    if (!budget.instanceFields && typeof (object as { toJSON?: unknown }).toJSON === "function") {
      return convert((object as { toJSON(): unknown }).toJSON(), depth + 1, ancestors, budget);
    }
    ancestors.add(object);
    try {
      budget.left -= 2;
      if (Array.isArray(object)) return convertArray(object, depth, ancestors, budget);
      const prototype = Object.getPrototypeOf(object);
      if (prototype !== null && prototype !== Object.prototype && !budget.instanceFields) {
        return `[${(prototype as { constructor?: { name?: string } }).constructor?.name || "Object"}]`;
      }
      return convertObject(object as Record<string, unknown>, depth, ancestors, budget);
    } finally {
      ancestors.delete(object);
    }
  } catch (error) {
    return truncateString(`[Unreadable: ${describeError(error)}]`);
  }
}

function convertArray(array: unknown[], depth: number, ancestors: Set<object>, budget: Budget): JsonValue[] {
  const length = Math.min(array.length, MAX_ITEMS);
  const result: JsonValue[] = [];
  for (let index = 0; index < length; index += 1) {
    if (budget.left <= 0) {
      result.push(OUTPUT_LIMIT);
      return result;
    }
    result.push(readAndConvert(() => array[index], depth, ancestors, budget));
  }
  if (array.length > MAX_ITEMS) result.push(`[${array.length - MAX_ITEMS} more items]`);
  return result;
}

function convertObject(object: Record<string, unknown>, depth: number, ancestors: Set<object>, budget: Budget): { [key: string]: JsonValue } {
  const result: { [key: string]: JsonValue } = {};
  const keys = Object.keys(object);
  for (const key of keys.slice(0, MAX_ITEMS)) {
    // A `__proto__` key would change the copy's prototype if assigned; it is dropped instead.
    if (key === "__proto__") continue;
    if (budget.left <= 0) {
      result[OUTPUT_LIMIT] = OUTPUT_LIMIT;
      return result;
    }
    const name = truncateString(key, 200);
    budget.left -= name.length + 3;
    result[name] = readAndConvert(() => object[key], depth, ancestors, budget);
  }
  if (keys.length > MAX_ITEMS) result["[more keys]"] = `[${keys.length - MAX_ITEMS} more keys]`;
  return result;
}

function readAndConvert(read: () => unknown, depth: number, ancestors: Set<object>, budget: Budget): JsonValue {
  let value: unknown;
  try {
    value = read();
  } catch (error) {
    return truncateString(`[Unreadable: ${describeError(error)}]`);
  }
  return convert(value, depth + 1, ancestors, budget);
}

/** A short class name for a value, as recorded in `outcome_summary.value_class`. */
export function valueClass(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value !== "object") return typeof value;
  const prototype = Object.getPrototypeOf(value);
  if (prototype === null || prototype === Object.prototype) return "object";
  return (prototype as { constructor?: { name?: string } }).constructor?.name || "object";
}
