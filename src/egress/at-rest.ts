/**
 * Taking injected credentials out of what improv writes of a call whose call tree sent them
 *: a program can put a credential together from pieces no response redaction
 * could see (fragments under 8 characters, a value spelled with separators), so the copy it
 * made is looked for where it would be kept: in JSON data (a record's fields, a log line) and in
 * the sandbox's encoding of a value or context (`sandbox/prelude/encode.ts`), by the same
 * {@link Redactor} that cleans responses. Each string, object key and long whole number is
 * redacted; what holds no copy is returned as it is, so nothing is copied for it.
 */
import { REDACTED, type Redactor } from "./redaction.ts";

/** Whole numbers with fewer digits than this are not looked at: no credential the redactor looks for is that short. */
const MIN_NUMBER = 100_000;

/**
 * JSON data with every recognizable copy taken out of its strings and keys; a whole number
 * that holds one becomes the string `[redacted]`. Parts that hold none are shared with `value`.
 */
export function redactData<T>(value: T, redactor: Redactor): T {
  return redactJson(value, redactor) as T;
}

function redactJson(value: unknown, redactor: Redactor): unknown {
  if (typeof value === "string") return redactor.redact(value);
  if (typeof value === "number") return redactNumber(value, redactor);
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let index = 0; index < value.length; index += 1) {
      const item: unknown = value[index];
      const redacted = redactJson(item, redactor);
      if (redacted !== item) (copy ??= value.slice())[index] = redacted;
    }
    return copy ?? value;
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  let changed = false;
  const entries = Object.entries(value).map(([key, item]): [string, unknown] => {
    const redactedKey = redactor.redact(key);
    const redacted = redactJson(item, redactor);
    changed ||= redactedKey !== key || redacted !== item;
    return [redactedKey, redacted];
  });
  // fromEntries defines each key as an own property, `__proto__` included.
  return changed ? Object.fromEntries(entries) : value;
}

function redactNumber(value: number, redactor: Redactor): number | string {
  if (!Number.isSafeInteger(value) || Math.abs(value) < MIN_NUMBER) return value;
  const text = String(value);
  return redactor.redact(text) === text ? value : REDACTED;
}

/**
 * A value (or context) as the sandbox encodes it, with every recognizable copy taken out: of
 * strings, object keys, long whole numbers and error messages in place; a Date, BigInt, RegExp,
 * byte array or handed-back agent whose text holds one becomes the string `[redacted]`, as its
 * text cannot change without it becoming something else. `text` itself when it holds none.
 */
export function redactEncoded(text: string, redactor: Redactor): string {
  const parsed = JSON.parse(text) as { readonly root: unknown; readonly nodes: readonly unknown[] };
  let changed = false;
  const nodes = parsed.nodes.map((node) => {
    const redacted = redactNode(node, redactor);
    changed ||= redacted !== node;
    return redacted;
  });
  return changed ? JSON.stringify({ root: parsed.root, nodes }) : text;
}

function redactNode(node: unknown, redactor: Redactor): unknown {
  if (typeof node === "string") return redactor.redact(node);
  if (typeof node === "number") return redactNumber(node, redactor);
  if (typeof node !== "object" || node === null) return node;
  if (Array.isArray(node)) return typeof node[0] === "string" ? redactTagged(node, redactor) : node;
  return redactKeys(node as Record<string, unknown>, redactor);
}

/** An object of references: only its keys are text. */
function redactKeys(node: Record<string, unknown>, redactor: Redactor): Record<string, unknown> {
  let changed = false;
  const entries = Object.entries(node).map(([key, ref]): [string, unknown] => {
    const redacted = redactor.redact(key);
    changed ||= redacted !== key;
    return [redacted, ref];
  });
  return changed ? Object.fromEntries(entries) : node;
}

function redactTagged(node: readonly unknown[], redactor: Redactor): unknown {
  const [tag, ...rest] = node;
  // Their other items are references, redacted as nodes of their own.
  if (tag === "Map" || tag === "Set") return node;
  if (tag === "Error") {
    const redacted = rest.map((item) => (typeof item === "string" ? redactor.redact(item) : item));
    return redacted.some((item, index) => item !== rest[index]) ? [tag, ...redacted] : node;
  }
  return rest.some((item) => typeof item === "string" && redactor.redact(item) !== item) ? REDACTED : node;
}
