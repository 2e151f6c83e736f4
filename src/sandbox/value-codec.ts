/**
 * Host-side decoder for the JSON the in-isolate normaliser writes (format described in
 * `prelude/encode.ts`). Input is untrusted: its expanded size is measured against a limit
 * before any value is built (`value-size.ts`), every ref is range-checked, and anything
 * malformed is a {@link MalformedValueError}, never a crash or a prototype change.
 */
import { AgentReference } from "./agent-reference.ts";
import { maxEncodedChars } from "./limits.ts";
import { measureExpandedChars, ValueTooLargeError } from "./value-size.ts";

export class MalformedValueError extends Error {
  override readonly name = "MalformedValueError";
}

/**
 * What the sandbox could only write as text: a function or a symbol (`[Function: f]`,
 * `[Symbol(x)]`), a getter that threw, a promise, an object or property it could not read.
 * Decoded as that text, unless the caller asks to tell it from a string the program wrote.
 */
export class StandIn {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

const SPECIAL_REFS: ReadonlyMap<number, unknown> = new Map<number, unknown>([
  [-1, undefined],
  [-3, Number.NaN],
  [-4, Number.POSITIVE_INFINITY],
  [-5, Number.NEGATIVE_INFINITY],
  [-6, -0],
]);

const ERROR_CLASSES: Record<string, ErrorConstructor> = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };

const TYPED_ARRAYS: Record<string, new (buffer: ArrayBuffer) => ArrayBufferView> = {
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
  DataView,
};

const isPrimitiveNode = (node: unknown): boolean => node === null || typeof node !== "object";

/**
 * Most values are a primitive, or a plain object of primitives (a context, a small record):
 * built directly when every primitive is used once, so that the value's JSON is no longer than
 * the text it came in. Undefined for anything else, which the graph walk decodes.
 */
function decodeFlat(nodes: readonly unknown[]): { value: unknown } | undefined {
  const top = nodes[0];
  if (isPrimitiveNode(top)) return nodes.length === 1 ? { value: top } : undefined;
  if (Array.isArray(top)) return undefined;
  const object: Record<string, unknown> = {};
  const used = new Set<number>();
  for (const [key, ref] of Object.entries(top as Record<string, unknown>)) {
    if (typeof ref !== "number" || !Number.isInteger(ref) || ref === 0 || ref >= nodes.length) return undefined;
    if (key === "__proto__") continue;
    if (ref < 0) {
      // NaN and the infinities are `null` in JSON, longer than their reference: the graph walk measures them.
      if (!SPECIAL_REFS.has(ref) || ref === -3 || ref === -4 || ref === -5) return undefined;
      object[key] = SPECIAL_REFS.get(ref);
      continue;
    }
    if (used.has(ref) || !isPrimitiveNode(nodes[ref])) return undefined;
    used.add(ref);
    object[key] = nodes[ref];
  }
  return used.size === nodes.length - 1 ? { value: object } : undefined;
}

/**
 * Decodes one encoded value whose JSON would take at most `maxChars` characters. Throws
 * {@link ValueTooLargeError} past that (before building anything) and
 * {@link MalformedValueError} for anything malformed.
 */
export function decodeValue(text: string, maxChars: number, options: { readonly markStandIns?: boolean } = {}): unknown {
  // Longer than the in-isolate encoder ever writes for a value within the limit: refused unread.
  if (text.length > maxEncodedChars(maxChars)) throw new ValueTooLargeError(maxChars);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new MalformedValueError("The sandbox sent a value that is not valid JSON.");
  }
  if (typeof parsed !== "object" || parsed === null || !Array.isArray((parsed as { nodes?: unknown }).nodes)) {
    throw new MalformedValueError("The sandbox sent a value without nodes.");
  }
  const { root, nodes } = parsed as { root: unknown; nodes: unknown[] };
  if (text.length <= maxChars && root === 0) {
    const flat = decodeFlat(nodes);
    if (flat !== undefined) return flat.value;
  }
  measureExpandedChars(nodes, root, maxChars);
  const built = new Map<number, unknown>();
  const fill: (() => void)[] = [];

  const resolve = (ref: unknown): unknown => {
    if (typeof ref !== "number" || !Number.isInteger(ref)) throw new MalformedValueError("A reference in the sandbox's value is not an integer.");
    if (ref < 0) {
      if (!SPECIAL_REFS.has(ref)) throw new MalformedValueError(`Unknown special reference ${ref}.`);
      return SPECIAL_REFS.get(ref);
    }
    if (ref >= nodes.length) throw new MalformedValueError(`Reference ${ref} is out of range.`);
    if (built.has(ref)) return built.get(ref);
    return materialize(ref);
  };

  const materialize = (index: number): unknown => {
    const node = nodes[index];
    if (node === null || typeof node !== "object") {
      built.set(index, node);
      return node;
    }
    if (Array.isArray(node)) {
      if (typeof node[0] === "string") return tagged(index, node);
      const array: unknown[] = new Array(node.length);
      built.set(index, array);
      fill.push(() => {
        node.forEach((ref: unknown, position: number) => {
          if (ref !== -2) array[position] = resolve(ref);
        });
      });
      return array;
    }
    const object: Record<string, unknown> = {};
    built.set(index, object);
    fill.push(() => {
      for (const [key, ref] of Object.entries(node)) {
        if (key === "__proto__") continue;
        object[key] = resolve(ref);
      }
    });
    return object;
  };

  const tagged = (index: number, node: unknown[]): unknown => {
    const [tag, ...rest] = node;
    switch (tag) {
      case "Date":
        return remember(index, new Date(typeof rest[0] === "string" ? rest[0] : Number.NaN));
      case "BigInt":
        if (typeof rest[0] !== "string" || !/^-?\d+$/.test(rest[0])) throw new MalformedValueError("Malformed BigInt.");
        return remember(index, BigInt(rest[0]));
      case "RegExp":
        try {
          return remember(index, new RegExp(String(rest[0]), String(rest[1] ?? "")));
        } catch {
          throw new MalformedValueError("Malformed RegExp.");
        }
      case "Error": {
        const name = String(rest[0] ?? "Error");
        const Ctor = Object.hasOwn(ERROR_CLASSES, name) ? (ERROR_CLASSES[name] as ErrorConstructor) : Error;
        const error = new Ctor(String(rest[1] ?? ""));
        if (error.name !== name) error.name = name;
        return remember(index, error);
      }
      case "Map": {
        const map = remember(index, new Map<unknown, unknown>());
        fill.push(() => {
          for (let at = 0; at + 1 < rest.length; at += 2) map.set(resolve(rest[at]), resolve(rest[at + 1]));
        });
        return map;
      }
      case "Set": {
        const set = remember(index, new Set<unknown>());
        fill.push(() => {
          for (const ref of rest) set.add(resolve(ref));
        });
        return set;
      }
      case "Bytes":
        return remember(index, bytes(String(rest[0]), String(rest[1] ?? "")));
      case "StandIn":
        if (typeof rest[0] !== "string") throw new MalformedValueError("Malformed stand-in.");
        return remember(index, options.markStandIns === true ? new StandIn(rest[0]) : rest[0]);
      case "Agent":
        if (typeof rest[0] !== "string" || (typeof rest[1] !== "string" && rest[1] !== null)) throw new MalformedValueError("Malformed agent.");
        return remember(index, new AgentReference(rest[0], rest[1]));
      default:
        throw new MalformedValueError(`Unknown tag ${JSON.stringify(tag)}.`);
    }
  };

  const remember = <T>(index: number, value: T): T => {
    built.set(index, value);
    return value;
  };

  const value = resolve(root);
  // Fill containers breadth-first so deep nesting never recurses deeply.
  for (let index = 0; index < fill.length; index += 1) (fill[index] as () => void)();
  return value;
}

function bytes(kind: string, hex: string): ArrayBuffer | ArrayBufferView {
  if (!/^(?:[0-9a-f]{2})*$/.test(hex)) throw new MalformedValueError("Malformed bytes.");
  const buffer = new ArrayBuffer(hex.length / 2);
  const view = new Uint8Array(buffer);
  for (let index = 0; index < view.length; index += 1) view[index] = Number.parseInt(hex.slice(index * 2, index * 2 + 2), 16);
  if (kind === "ArrayBuffer") return buffer;
  const Ctor = Object.hasOwn(TYPED_ARRAYS, kind) ? TYPED_ARRAYS[kind] : undefined;
  if (!Ctor) throw new MalformedValueError(`Unknown byte kind ${JSON.stringify(kind)}.`);
  try {
    return new Ctor(buffer);
  } catch {
    throw new MalformedValueError(`Malformed ${kind}.`);
  }
}
