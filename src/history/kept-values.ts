import { readKeptValue } from "../sandbox/host/inbound.ts";
import type { KeepValuesRule } from "../options.ts";

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
