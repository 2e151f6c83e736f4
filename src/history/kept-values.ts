import { readKeptValue } from "../sandbox/index.ts";
import { describeType } from "../shared/index.ts";

/**
 * The values of an agent's latest ok calls, by call id (a record's `content_ref`), kept as the
 * encoded text the sandbox sent (a third of the memory of the objects, and a fresh copy each
 * time it is read). Bounded by count and by bytes of text; the oldest go first.
 */
export class KeptValues {
  readonly #values = new Map<string, string>();
  #bytes = 0;

  get size(): number {
    return this.#values.size;
  }

  /** Bytes of encoded text held. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Whether a value of this encoded length fits the rule at all. */
  static fits(rule: KeepValuesRule, text: string): boolean {
    return rule.count > 0 && text.length * 2 <= rule.maxBytes;
  }

  /** Keeps `text` as the value of call `ref`, evicting the oldest values past the rule's bounds. */
  keep(rule: KeepValuesRule, ref: string, text: string): void {
    if (!KeptValues.fits(rule, text)) return;
    this.#remove(ref);
    this.#values.set(ref, text);
    this.#bytes += text.length * 2;
    if (this.#values.size <= rule.count && this.#bytes <= rule.maxBytes) return;
    for (const oldest of this.#values.keys()) {
      if (this.#values.size <= rule.count && this.#bytes <= rule.maxBytes) break;
      this.#remove(oldest);
    }
  }

  has(ref: string): boolean {
    return this.#values.has(ref);
  }

  /** A fresh copy of call `ref`'s value, or undefined when it is not (or no longer) kept. */
  get(ref: string): unknown {
    const text = this.#values.get(ref);
    return text === undefined ? undefined : readKeptValue(text);
  }

  /** The encoded text of call `ref`'s value, for a store. */
  text(ref: string): string | undefined {
    return this.#values.get(ref);
  }

  /** Every kept value, oldest first. */
  entries(): IterableIterator<[string, string]> {
    return this.#values.entries();
  }

  clear(): void {
    this.#values.clear();
    this.#bytes = 0;
  }

  #remove(ref: string): void {
    const text = this.#values.get(ref);
    if (text === undefined) return;
    this.#values.delete(ref);
    this.#bytes -= text.length * 2;
  }
}

/** How many call values an agent keeps; count 0 keeps none. */
export interface KeepValuesRule {
  readonly count: number;
  readonly maxBytes: number;
}

const KEEP_VALUES_SHAPE = 'Option "keepValues" must be false or { count?, maxBytes? } with whole numbers ≥ 0.';

/** The option as given. */
export type KeepValuesOption = false | { readonly count?: number; readonly maxBytes?: number };

/** The values an agent keeps unless told otherwise. */
export const DEFAULT_KEEP_VALUES: KeepValuesRule = { count: 100, maxBytes: 16 * 2 ** 20 };

/** The `keepValues` option read: `base` when not given, the defaults for the fields it leaves out. */
export function readKeepValues(value: KeepValuesOption | undefined, base: KeepValuesRule): KeepValuesRule {
  if (value === undefined) return base;
  if (value === false) return { count: 0, maxBytes: 0 };
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new TypeError(`${KEEP_VALUES_SHAPE} Got ${describeType(value)}.`);
  for (const key of Object.keys(value)) if (key !== "count" && key !== "maxBytes") throw new TypeError(`${KEEP_VALUES_SHAPE} "${key}" is not one of them.`);
  const field = (name: "count" | "maxBytes", fallback: number) => {
    const given = value[name];
    if (given === undefined) return fallback;
    if (!Number.isSafeInteger(given) || given < 0) throw new TypeError(`${KEEP_VALUES_SHAPE} Got ${name}: ${JSON.stringify(given)}.`);
    return given;
  };
  return { count: field("count", DEFAULT_KEEP_VALUES.count), maxBytes: field("maxBytes", DEFAULT_KEEP_VALUES.maxBytes) };
}
