import { deserialize, serialize } from "node:v8";
import { ownBytes } from "../sandbox/index.ts";
import type { StoredContext } from "./store.ts";

/** A new agent's context. */
export const EMPTY_CONTEXT: StoredContext = Object.freeze({ values: {}, appKeys: [] });

/**
 * An agent's context as bytes: V8's structured serialisation, the same copy semantics as the
 * sandbox boundary (Date, Map, Set, typed arrays and cycles survive), so what a program left in
 * `context` comes back from the store as it was.
 */
export function encodeContext(context: StoredContext): Uint8Array {
  // An empty context (an agent whose methods keep nothing) is always the same bytes, encoded once:
  // a serializer made and run per commit costs about 10 µs.
  if (context.appKeys.length === 0 && isEmptyPlainObject(context.values)) return EMPTY_BYTES;
  return serialize({ values: context.values, appKeys: [...context.appKeys] });
}

/** The encoding of {@link EMPTY_CONTEXT} (shared: stores copy what they bind, and nothing writes to it). */
const EMPTY_BYTES: Uint8Array = serialize({ values: {}, appKeys: [] });

/** Whether `value` serializes as `{}`: an ordinary object (not a Date, Map, array, …) with no own enumerable keys. */
function isEmptyPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) return false;
  for (const key in value) if (Object.hasOwn(value, key)) return false;
  return true;
}

/** Bytes written by {@link encodeContext} back to a context; anything else is an error. */
export function decodeContext(bytes: Uint8Array): StoredContext {
  // Typed arrays in it would otherwise be views over the row's bytes (a driver's pooled buffer, say).
  const decoded = ownBytes(deserialize(bytes) as Partial<StoredContext> | null);
  if (typeof decoded !== "object" || decoded === null || typeof decoded.values !== "object" || decoded.values === null || !Array.isArray(decoded.appKeys)) {
    throw new TypeError("a stored context is not in improv's format");
  }
  return { values: decoded.values as Record<string, unknown>, appKeys: decoded.appKeys.filter((key): key is string => typeof key === "string") };
}
