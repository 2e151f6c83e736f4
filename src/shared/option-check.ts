/** Checks every options object of the public API the same way: an object, with known names only. */

/** A short, human description of a value's type for error messages. */
export function describeType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === "number") return `the number ${value}`;
  return `a ${typeof value}`;
}

/**
 * `options` as an object of known names (undefined: none given), or a `TypeError` naming
 * `caller` (`"new SqliteStore()"`) and the valid names. `hints` maps a lower-cased misspelling
 * to a note (`baseurl` → ` (it is spelled "baseURL")`).
 */
export function checkOptionNames<T extends object>(options: unknown, valid: readonly string[], caller: string, hints: Readonly<Record<string, string>> = {}): Partial<T> {
  if (options === undefined) return {};
  if (typeof options !== "object" || options === null || Array.isArray(options)) throw new TypeError(`The options of ${caller} must be an object, got ${describeType(options)}.`);
  for (const name of Object.keys(options)) {
    if (!valid.includes(name)) throw new TypeError(`Unknown option "${name}" for ${caller}${hints[name.toLowerCase()] ?? ""}. Valid options: ${valid.join(", ")}.`);
  }
  return options as Partial<T>;
}
