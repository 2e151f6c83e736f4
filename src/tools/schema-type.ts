/**
 * A JSON Schema as TypeScript type text, for the prompt's tool declarations.
 *
 * Schemas come from applications and from MCP servers, so nothing here trusts them: every read
 * of a schema may throw (getters, proxies), and schemas may be cyclic or huge. The converter
 * answers `unknown` for what it cannot say.
 */
import { boundedInteger, has, isObject, ownKeys, read, readOption } from "./guarded-read.ts";

/** Options of {@link schemaToType}. */
export interface SchemaToTypeOptions {
  /** Nesting of objects and arrays shown before `unknown`. Default: 6 (at most 32). */
  readonly maxDepth?: number;
  /** Longest type text. Default: 2000 (never less than `unknown`). @unit characters */
  readonly maxChars?: number;
}

const DEFAULT_MAX_DEPTH = 6;
const MAX_DEPTH_LIMIT = 32;
const DEFAULT_TYPE_CHARS = 2_000;

const MAX_LITERALS = 20;
const MAX_UNION_MEMBERS = 20;
const MAX_PROPERTIES = 40;
const MAX_TUPLE_ELEMENTS = 20;
const MAX_TYPE_NAMES = 10;
const MAX_LITERAL_CHARS = 200;
const MAX_KEY_CHARS = 200;
const MAX_REQUIRED_SCANNED = 10_000;
// Recursion through combinators and $ref chains does not nest the value, so it is not
// counted as depth; this bounds it separately (and keeps the stack shallow).
const MAX_FRAMES = 100;
// A schema object (a $ref target, or an object reached through a cycle) is shown at most this
// many times on one path: a recursive type is unrolled once, then `unknown`.
const MAX_EXPANSIONS = 2;

/** A piece of type text, with its top-level operator so that composition can parenthesise it. */
interface TypeText {
  readonly text: string;
  readonly op?: "|" | "&";
}

const UNKNOWN: TypeText = { text: "unknown" };
const NEVER: TypeText = { text: "never" };

/** Thrown inside a rendering that grew past its bounds; never escapes this module. */
class TooLarge extends Error {}

interface RenderContext {
  readonly root: unknown;
  readonly maxDepth: number;
  readonly maxChars: number;
  readonly workLimit: number;
  work: number;
  readonly path: object[];
}

/**
 * The TypeScript type text of a JSON Schema: `{ city: string; days?: number }`. Understands
 * `type` (and arrays of types), `const`, `enum`, objects, arrays and tuples, `anyOf`/`oneOf`
 * (union), `allOf` (intersection), `nullable` and local `$ref`s; everything else, remote
 * `$ref`s and what lies deeper than `maxDepth` read as `unknown`. When the text would pass
 * `maxChars` a shallower form is given, down to `unknown`. Never throws.
 */
export function schemaToType(schema: unknown, options?: SchemaToTypeOptions): string {
  const maxChars = boundedInteger(readOption(options, "maxChars"), DEFAULT_TYPE_CHARS, UNKNOWN.text.length, Number.MAX_SAFE_INTEGER);
  const maxDepth = boundedInteger(readOption(options, "maxDepth"), DEFAULT_MAX_DEPTH, 0, MAX_DEPTH_LIMIT);
  for (let depth = maxDepth; depth >= 0; depth--) {
    const text = renderWithin(schema, depth, maxChars);
    if (text !== undefined) return text;
  }
  return UNKNOWN.text;
}

/** The type text at one depth limit, or undefined when it does not fit. */
function renderWithin(schema: unknown, maxDepth: number, maxChars: number): string | undefined {
  const context: RenderContext = {
    root: schema,
    maxDepth,
    maxChars,
    workLimit: Math.min(Math.max(1_000, maxChars * 4), 200_000),
    work: 0,
    path: [],
  };
  try {
    const { text } = render(schema, context, 0);
    return text.length <= maxChars ? text : undefined;
  } catch (error) {
    // Anything else thrown (a hostile getter or proxy past the guarded reads, a stack overflow)
    // says nothing more can be known about the schema.
    return error instanceof TooLarge ? undefined : UNKNOWN.text;
  }
}

function render(schema: unknown, context: RenderContext, depth: number): TypeText {
  if (schema === true) return UNKNOWN;
  if (schema === false) return NEVER;
  if (!isObject(schema) || depth > context.maxDepth) return UNKNOWN;
  if (context.path.length >= MAX_FRAMES) return UNKNOWN;
  if (++context.work > context.workLimit) throw new TooLarge();
  if (context.path.filter((seen) => seen === schema).length >= MAX_EXPANSIONS) return UNKNOWN;
  context.path.push(schema);
  try {
    const result = renderSchemaObject(schema, context, depth);
    if (result.text.length > context.maxChars) throw new TooLarge();
    return result;
  } finally {
    context.path.pop();
  }
}

function renderSchemaObject(schema: object, context: RenderContext, depth: number): TypeText {
  const ref = read(schema, "$ref");
  const parts: TypeText[] = [];
  if (typeof ref === "string") {
    parts.push(renderRef(ref, context, depth));
  } else {
    const base = renderBase(schema, context, depth);
    if (base !== undefined) parts.push(base);
    const anyOf = read(schema, "anyOf");
    if (Array.isArray(anyOf)) parts.push(renderMembers(anyOf, context, depth, union));
    const oneOf = read(schema, "oneOf");
    if (Array.isArray(oneOf)) parts.push(renderMembers(oneOf, context, depth, union));
    const allOf = read(schema, "allOf");
    if (Array.isArray(allOf)) parts.push(renderMembers(allOf, context, depth, intersection));
  }
  const result = intersection(parts);
  return read(schema, "nullable") === true ? union([result, { text: "null" }]) : result;
}

/** A local reference (`#`, `#/$defs/x`, any JSON Pointer) resolved against the root schema. */
function renderRef(ref: string, context: RenderContext, depth: number): TypeText {
  if (!ref.startsWith("#")) return UNKNOWN; // remote: never fetched
  const target = resolvePointer(context.root, ref.slice(1));
  return target === undefined ? UNKNOWN : render(target, context, depth);
}

function resolvePointer(root: unknown, pointer: string): unknown {
  if (pointer === "") return root;
  if (!pointer.startsWith("/")) return undefined; // "#anchor": not supported
  let node: unknown = root;
  for (const segment of pointer.slice(1).split("/")) {
    if (!isObject(node)) return undefined;
    node = read(node, decodePointerSegment(segment));
  }
  return node;
}

function decodePointerSegment(segment: string): string {
  let decoded = segment;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    // Not percent-encoded after all: use it as written.
  }
  return decoded.replaceAll("~1", "/").replaceAll("~0", "~");
}

/** What `const`, `enum`, `type` (or, without `type`, the object and array keywords) say. */
function renderBase(schema: object, context: RenderContext, depth: number): TypeText | undefined {
  if (has(schema, "const")) return literal(read(schema, "const"));
  const values = read(schema, "enum");
  if (Array.isArray(values)) return renderEnum(values);
  const type = read(schema, "type");
  if (typeof type === "string") return renderType(type, schema, context, depth);
  if (Array.isArray(type)) {
    const names = type.slice(0, MAX_TYPE_NAMES);
    return union(names.map((name) => (typeof name === "string" ? renderType(name, schema, context, depth) : UNKNOWN)));
  }
  if (["properties", "additionalProperties", "required"].some((key) => has(schema, key))) {
    return renderObject(schema, context, depth);
  }
  if (["items", "prefixItems"].some((key) => has(schema, key))) return renderArray(schema, context, depth);
  return undefined;
}

function renderType(type: string, schema: object, context: RenderContext, depth: number): TypeText {
  switch (type) {
    case "string":
    case "number":
    case "boolean":
    case "null":
      return { text: type };
    case "integer":
      return { text: "number" };
    case "object":
      return renderObject(schema, context, depth);
    case "array":
      return renderArray(schema, context, depth);
    default:
      return UNKNOWN;
  }
}

function renderEnum(values: readonly unknown[]): TypeText {
  const shown = values.slice(0, MAX_LITERALS).map(literal);
  return withHiddenCount(union(shown), values.length - shown.length);
}

/** A union cut short, with a comment saying how many members are not shown. */
function withHiddenCount(shown: TypeText, hidden: number): TypeText {
  if (hidden <= 0 || shown.text === UNKNOWN.text) return shown;
  if (shown.text === NEVER.text) return UNKNOWN; // the members not shown may admit anything
  return { text: `${shown.text} /* … ${hidden} more */`, op: "|" };
}

/** A JSON value as a literal type; long strings widen to `string`, other values to `unknown`. */
function literal(value: unknown): TypeText {
  if (value === null) return { text: "null" };
  switch (typeof value) {
    case "string":
      return value.length > MAX_LITERAL_CHARS ? { text: "string" } : { text: quote(value) };
    case "boolean":
      return { text: String(value) };
    case "number":
      return Number.isFinite(value) ? { text: JSON.stringify(value) } : { text: "number" };
    default:
      return UNKNOWN;
  }
}

function renderMembers(
  members: readonly unknown[],
  context: RenderContext,
  depth: number,
  combine: (parts: readonly TypeText[]) => TypeText,
): TypeText {
  const shown = members.slice(0, MAX_UNION_MEMBERS).map((member) => render(member, context, depth));
  // Leaving members out of an intersection only widens it: no need to say so.
  return combine === union ? withHiddenCount(combine(shown), members.length - shown.length) : combine(shown);
}

function renderObject(schema: object, context: RenderContext, depth: number): TypeText {
  const properties = read(schema, "properties");
  const names = isObject(properties) ? ownKeys(properties) : [];
  const required = requiredNames(read(schema, "required"));
  const members: string[] = [];
  let hidden = 0;
  for (const name of names) {
    // A name too long to show is left out like the properties past the cap.
    if (members.length >= MAX_PROPERTIES || name.length > MAX_KEY_CHARS) {
      hidden++;
      continue;
    }
    const value = render(read(properties as object, name), context, depth + 1);
    members.push(`${propertyKey(name)}${required.has(name) ? "" : "?"}: ${value.text}`);
  }
  if (hidden > 0) members.push(`/* … ${hidden} more properties */`);

  const additional = read(schema, "additionalProperties");
  const rest = isObject(additional) ? render(additional, context, depth + 1) : UNKNOWN;
  const restType = rest === UNKNOWN ? undefined : { text: `Record<string, ${rest.text}>` };
  if (members.length === 0) {
    if (restType !== undefined) return restType;
    return { text: additional === false ? "Record<string, never>" : "Record<string, unknown>" };
  }
  const shape = { text: `{ ${members.join("; ")} }` };
  // An index signature inside the literal would have to admit every property's type.
  return restType === undefined ? shape : intersection([shape, restType]);
}

/** The names listed in `required` (the scan is bounded: a huge list is not read to its end). */
function requiredNames(required: unknown): Set<string> {
  const names = new Set<string>();
  if (!Array.isArray(required)) return names;
  const length = Math.min(required.length, MAX_REQUIRED_SCANNED);
  for (let index = 0; index < length; index++) {
    const name: unknown = required[index];
    if (typeof name === "string") names.add(name);
  }
  return names;
}

function renderArray(schema: object, context: RenderContext, depth: number): TypeText {
  const prefixItems = read(schema, "prefixItems");
  const items = read(schema, "items");
  // Draft 2020-12 tuples use prefixItems/items; drafts 4 to 7 used an items array/additionalItems.
  if (Array.isArray(prefixItems)) return renderTuple(prefixItems, items, schema, context, depth);
  if (Array.isArray(items)) return renderTuple(items, read(schema, "additionalItems"), schema, context, depth);
  return { text: `${operand(render(items === undefined ? true : items, context, depth + 1))}[]` };
}

function renderTuple(prefix: readonly unknown[], rest: unknown, schema: object, context: RenderContext, depth: number): TypeText {
  const minItems = read(schema, "minItems");
  const required = typeof minItems === "number" ? minItems : 0;
  const shown = prefix.slice(0, MAX_TUPLE_ELEMENTS);
  const elements = shown.map((item, index) => {
    const element = render(item, context, depth + 1);
    return index < required ? element.text : `${operand(element)}?`;
  });
  const open = shown.length < prefix.length || rest !== false;
  if (open) {
    const restElement = shown.length < prefix.length ? UNKNOWN : render(rest === undefined ? true : rest, context, depth + 1);
    if (restElement.text !== NEVER.text) elements.push(`...${operand(restElement)}[]`);
  }
  return { text: `[${elements.join(", ")}]` };
}

/** `A | B`: `unknown` absorbs the rest, `never` drops out, duplicates are shown once. */
function union(parts: readonly TypeText[]): TypeText {
  if (parts.some((part) => part.text === UNKNOWN.text)) return UNKNOWN;
  return combined(parts.filter((part) => part.text !== NEVER.text), "|", NEVER);
}

/** `A & B`: `never` absorbs the rest, `unknown` drops out, duplicates are shown once. */
function intersection(parts: readonly TypeText[]): TypeText {
  if (parts.some((part) => part.text === NEVER.text)) return NEVER;
  return combined(parts.filter((part) => part.text !== UNKNOWN.text), "&", UNKNOWN);
}

function combined(parts: readonly TypeText[], op: "|" | "&", empty: TypeText): TypeText {
  const members = [...new Map(parts.map((part) => [part.text, part])).values()];
  if (members.length === 0) return empty;
  if (members.length === 1) return members[0] as TypeText;
  // Intersections inside a union are parenthesised too: not needed, but easier to read.
  return { text: members.map((member) => (member.op === undefined || member.op === op ? member.text : `(${member.text})`)).join(` ${op} `), op };
}

/** The text, parenthesised when it is a union or an intersection (before `[]` or `?`). */
function operand(type: TypeText): string {
  return type.op === undefined ? type.text : `(${type.text})`;
}

/** A property name as TypeScript writes it: as is when an identifier, else quoted. */
export function propertyKey(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : quote(name);
}

/**
 * A string literal; U+2028/U+2029 are escaped so the text stays on its line, and backticks so
 * that no literal can close the prompt's code block.
 */
function quote(text: string): string {
  return JSON.stringify(text).replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029").replaceAll("`", "\\u0060");
}
