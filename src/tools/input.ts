/**
 * A program's tool input, as the tool is given it: JSON data. The host decodes the input from
 * the sandbox's encoding, which can carry what JSON cannot (Map, Set, BigInt, RegExp, errors,
 * binary data, NaN, cycles); a tool's schema describes JSON, and what an MCP server is sent is
 * JSON. So the input is copied here, before the schema check and `execute`:
 *
 * | in the program                          | the tool is given                         |
 * |-----------------------------------------|-------------------------------------------|
 * | object, array, string, finite number, boolean, null | a copy of its own                 |
 * | `Date`                                  | its ISO text (`null` for an invalid date)  |
 * | `undefined` in an object                | the key left out                          |
 * | `undefined` or a hole in an array       | `null`                                    |
 * | `-0`                                    | `0`                                       |
 * | no input at all                         | `undefined` (the schema decides)          |
 * | Map, Set, BigInt, RegExp, an error, binary data, NaN, ±Infinity, a cycle, nesting past 200 levels | refused: a `TypeError` in the program naming the place |
 * | a function or symbol, a getter that threw, a promise, an object that could not be read | refused too (the sandbox writes these as text, such as `[Function: f]`, which the tool must never take for the program's own) |
 *
 * A part shared by two places is copied in each, as JSON writes it.
 */

import { AgentReference, StandIn } from "../sandbox/index.ts";

/** The input as the tool is given it, or why it cannot be (the program's mistake). */
export type ToolInputCopy = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly message: string };

/** Deepest nesting an input may have (a tool's result is held to the same). */
export const MAX_INPUT_DEPTH = 200;

const dateGetTime = Date.prototype.getTime;
const dateToIso = Date.prototype.toISOString;

class NotJson extends Error {}

/** Copies a decoded input as JSON data; `maxChars` bounds the copy's JSON (the decoder measured it already: this is a backstop). */
export function copyToolInput(value: unknown, maxChars: number): ToolInputCopy {
  if (value === undefined) return { ok: true, value: undefined };
  const walk: Walk = { left: maxChars, open: new Set(), trail: [] };
  try {
    return { ok: true, value: copy(value, walk) };
  } catch (error) {
    if (error instanceof NotJson) return { ok: false, message: error.message };
    throw error;
  }
}

/** The copy under way: characters of JSON it may still take, the containers open above, and the keys down to the value at hand. */
interface Walk {
  left: number;
  readonly open: Set<object>;
  readonly trail: (string | number)[];
}

/** `input.items[3].owner`: the place at hand, written only when it is named in an error. */
function where(walk: Walk): string {
  return `input${walk.trail.map((key) => (typeof key === "number" ? `[${key}]` : `.${key.length > 50 ? `${key.slice(0, 50)}…` : key}`)).join("")}`;
}

const ADVICE: Readonly<Record<string, string>> = {
  Map: "send Object.fromEntries(map) or an array of pairs",
  Set: "send an array",
  RegExp: "send its source as a string",
  ArrayBuffer: "send an array of numbers or a base64 string",
  DataView: "send an array of numbers or a base64 string",
};

/** What a stand-in stood for, and what to send instead. */
function standInWhat(text: string): [what: string, advice?: string] {
  if (text.startsWith("[Function")) return [`a function (${text})`, "send data, not code"];
  if (text.startsWith("[Symbol(")) return [`a symbol (${text})`, "send a string"];
  switch (text) {
    case "[getter threw]":
      return ["a getter that threw", "send the value itself"];
    case "[Promise]":
      return ["a Promise", "await it and send its value"];
    case "[WeakMap]":
    case "[WeakSet]":
      return [`a ${text.slice(1, -1)}`];
    case "[unreadable property]":
      return ["a property that could not be read"];
    default:
      return ["an object whose properties could not be read"];
  }
}

function refuse(walk: Walk, what: string, advice?: string): never {
  throw new NotJson(`${where(walk)} is ${what}, which JSON cannot hold${advice === undefined ? "" : `; ${advice}`}.`);
}

function spend(walk: Walk, chars: number): void {
  walk.left -= chars;
  if (walk.left < 0) throw new NotJson("The input is too large as JSON (a part shared by many places is copied in each); pass less data.");
}

function copy(value: unknown, walk: Walk): unknown {
  switch (typeof value) {
    case "string":
      spend(walk, value.length + 2);
      return value;
    case "boolean":
      spend(walk, value ? 4 : 5);
      return value;
    case "number":
      if (Number.isNaN(value)) refuse(walk, "NaN", "send a number or null");
      if (!Number.isFinite(value)) refuse(walk, String(value), "send a number or null");
      // At least one character; -0 is 0, as JSON writes it.
      spend(walk, 1);
      return value === 0 ? 0 : value;
    case "bigint":
      return refuse(walk, "a BigInt", "send it as a string (String(n)) or a number");
    case "undefined":
      spend(walk, 4);
      return null;
    case "object":
      break;
    default:
      // The sandbox's encoding writes functions and symbols as stand-ins (refused above); nothing else reaches here.
      return refuse(walk, `a ${typeof value}`);
  }
  if (value === null) {
    spend(walk, 4);
    return null;
  }
  if (value instanceof StandIn) {
    const [what, advice] = standInWhat(value.text);
    return refuse(walk, what, advice);
  }
  if (value instanceof Date) {
    spend(walk, 26);
    return Number.isNaN(dateGetTime.call(value)) ? null : dateToIso.call(value);
  }
  const node = value as object;
  const { open, trail } = walk;
  if (open.has(node)) throw new NotJson(`${where(walk)} refers back to a value that contains it (a cycle), which JSON cannot hold; send a copy without it.`);
  const isArray = Array.isArray(node);
  if (!isArray) {
    const prototype = Object.getPrototypeOf(node) as unknown;
    if (prototype !== Object.prototype && prototype !== null) refuse(walk, kindOf(node), adviceFor(node));
  }
  if (trail.length >= MAX_INPUT_DEPTH) throw new NotJson(`${where(walk)} is nested deeper than ${MAX_INPUT_DEPTH} levels; pass flatter data.`);
  open.add(node);
  // Counted as JSON writes it: brackets, a comma between items, a key's quotes and colon.
  spend(walk, 2);
  let copied: unknown;
  if (isArray) {
    const items = node as unknown[];
    const copies: unknown[] = new Array(items.length);
    for (let index = 0; index < items.length; index += 1) {
      if (index > 0) spend(walk, 1);
      trail.push(index);
      copies[index] = copy(items[index], walk);
      trail.pop();
    }
    copied = copies;
  } else {
    const fields: Record<string, unknown> = {};
    let first = true;
    for (const key of Object.keys(node)) {
      const field = (node as Record<string, unknown>)[key];
      if (field === undefined) continue;
      spend(walk, key.length + (first ? 3 : 4));
      first = false;
      trail.push(key);
      const fieldCopy = copy(field, walk);
      trail.pop();
      // A key "__proto__" is a field of its own, never the prototype.
      if (key === "__proto__") Object.defineProperty(fields, key, { value: fieldCopy, enumerable: true, writable: true, configurable: true });
      else fields[key] = fieldCopy;
    }
    copied = fields;
  }
  open.delete(node);
  return copied;
}

/** "a Map", "an Error", "a TypeError", "a Uint8Array", "an agent": what the decoder builds besides plain data. */
function kindOf(node: object): string {
  if (node instanceof AgentReference) return "an agent (from delegate)";
  const given = node instanceof Error ? String(node.name) : (node.constructor as { name?: unknown } | undefined)?.name;
  const name = typeof given === "string" && given !== "" ? given.slice(0, 50) : "object";
  return `${/^[AEIO]/.test(name) ? "an" : "a"} ${name}`;
}

function adviceFor(node: object): string | undefined {
  if (node instanceof AgentReference) return "tools cannot call agents; send data";
  if (node instanceof Error) return "send its message as a string";
  if (ArrayBuffer.isView(node) && !(node instanceof DataView)) return "send an array of numbers or a base64 string";
  return ADVICE[(node.constructor as { name?: string } | undefined)?.name ?? ""];
}
