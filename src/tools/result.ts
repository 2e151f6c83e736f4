/**
 * A tool's result is hostile input: it may be any value the application's function (or a
 * server) made. It reaches the program only as a copy of plain data, made here once: each
 * getter read once, every step counted against the limit for what a program receives, and
 * anything that is not data refused with the place it was found.
 */
import { types } from "node:util";
import { describeError } from "../shared/index.ts";

/** A copy of a tool's result, or why it cannot be sent to the program. */
export type ToolResultCopy = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly message: string };

const MAX_DEPTH = 200;
const dateGetTime = Date.prototype.getTime;
const dateToIso = Date.prototype.toISOString;

class Unsendable extends Error {}

/**
 * Copies `value` as plain data (objects, arrays, strings, finite numbers, booleans, null; a
 * class instance as its own enumerable fields, a Date as its ISO text, as JSON would), within
 * `maxChars` characters of JSON (a part reached twice counts twice).
 */
export function copyToolResult(value: unknown, maxChars: number): ToolResultCopy {
  const budget: Budget = { left: maxChars, limit: maxChars };
  try {
    return { ok: true, value: copy(value, "result", 0, budget, new Set()) };
  } catch (error) {
    if (error instanceof Unsendable) return { ok: false, message: error.message };
    return { ok: false, message: `the result could not be read (${describe(error)})` };
  }
}

interface Budget {
  left: number;
  readonly limit: number;
}

function spend(budget: Budget, chars: number): void {
  budget.left -= chars;
  if (budget.left < 0) throw new Unsendable(`the result is larger than the ${budget.limit}-character limit for what a program receives, as JSON`);
}

function copy(value: unknown, path: string, depth: number, budget: Budget, open: Set<object>): unknown {
  switch (typeof value) {
    case "string":
      spend(budget, value.length + 2);
      return value;
    case "boolean":
      spend(budget, 5);
      return value;
    case "number":
      if (!Number.isFinite(value)) throw new Unsendable(`${path} is ${String(value)}, which JSON cannot hold`);
      spend(budget, String(value).length);
      return value;
    case "undefined":
      if (depth === 0) return undefined;
      throw new Unsendable(`${path} is undefined; leave the key out or use null`);
    case "bigint":
      throw new Unsendable(`${path} is a BigInt; send it as a string`);
    case "function":
      throw new Unsendable(`${path} is a function; tools must return plain data`);
    case "symbol":
      throw new Unsendable(`${path} is a symbol; tools must return plain data`);
  }
  if (value === null) {
    spend(budget, 4);
    return null;
  }
  const node = value as object;
  if (types.isProxy(node)) throw new Unsendable(`${path} is a Proxy; tools must return plain data`);
  if (depth >= MAX_DEPTH) throw new Unsendable(`${path} is nested deeper than ${MAX_DEPTH} levels`);
  if (open.has(node)) throw new Unsendable(`${path} refers back to a value that contains it (a cycle)`);
  if (node instanceof Date) {
    // The built-in methods, not the value's own: a Date may carry a toISOString of its own.
    const time = dateGetTime.call(node);
    spend(budget, 26);
    return Number.isNaN(time) ? null : dateToIso.call(node);
  }
  if (node instanceof Map || node instanceof Set || node instanceof WeakMap || node instanceof WeakSet || node instanceof Promise || ArrayBuffer.isView(node) || node instanceof ArrayBuffer) {
    throw new Unsendable(`${path} is a ${node.constructor.name}; tools must return plain data (objects, arrays, strings, numbers, booleans, null)`);
  }
  open.add(node);
  try {
    spend(budget, 2);
    if (Array.isArray(node)) {
      const items: unknown[] = [];
      for (let index = 0; index < node.length; index += 1) {
        spend(budget, 1);
        items.push(copy(read(node, index, `${path}[${index}]`), `${path}[${index}]`, depth + 1, budget, open));
      }
      return items;
    }
    const fields: Record<string, unknown> = {};
    for (const key of Object.keys(node)) {
      const where = `${path}.${key.length > 50 ? `${key.slice(0, 50)}…` : key}`;
      const field = read(node, key, where);
      // As JSON writes an object: keys whose values it leaves out are left out here too.
      if (field === undefined || typeof field === "function" || typeof field === "symbol") continue;
      spend(budget, key.length + 4);
      Object.defineProperty(fields, key, { value: copy(field, where, depth + 1, budget, open), enumerable: true, writable: true, configurable: true });
    }
    return fields;
  } finally {
    open.delete(node);
  }
}

function read(node: object, key: string | number, where: string): unknown {
  try {
    return (node as Record<string | number, unknown>)[key];
  } catch (error) {
    throw new Unsendable(`reading ${where} threw (${describe(error)})`);
  }
}

function describe(error: unknown): string {
  const text = describeError(error);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
