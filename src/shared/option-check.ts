/** Checks every options object of the public API the same way: an object, with known names only. */

/** A short, human description of a value's type for error messages. */
export function describeType(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === "number") return `the number ${value}`;
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/**
 * The message for a name not among `valid`: `Unknown option "x" for f(). Did you mean "y"? Valid
 * options: y, z.` `hint` (` (it is spelled "baseURL")`) is said instead of a suggestion.
 */
export function unknownNameMessage(name: string, valid: readonly string[], where: string, noun = "option", hint = ""): string {
  const near = hint === "" ? closeName(name, valid) : undefined;
  return `Unknown ${noun} "${name}" for ${where}${hint}.${near === undefined ? "" : ` Did you mean "${near}"?`} Valid ${noun}s: ${valid.join(", ")}.`;
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
    if (!valid.includes(name)) throw new TypeError(unknownNameMessage(name, valid, caller, "option", hints[name.toLowerCase()] ?? ""));
  }
  return options as Partial<T>;
}

/** The one valid name `name` is likely a misspelling of: the same but for case, or at most 2 edits away (fewer for short names). */
function closeName(name: string, valid: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  const sameButCase = valid.filter((candidate) => candidate.toLowerCase() === lower);
  if (sameButCase.length > 0) return sameButCase.length === 1 ? sameButCase[0] : undefined;
  const near = valid.filter((candidate) => editDistance(lower, candidate.toLowerCase()) <= Math.min(2, Math.floor(candidate.length / 3)));
  return near.length === 1 ? near[0] : undefined;
}

/** Insertions, deletions, substitutions and swaps of neighbours that make `a` into `b` (3 for any more than 2). */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  const width = b.length + 1;
  const distances: number[] = [];
  const at = (i: number, j: number) => distances[i * width + j] ?? 0;
  for (let i = 0; i <= a.length; i += 1) {
    for (let j = 0; j <= b.length; j += 1) {
      let best = i === 0 || j === 0 ? i + j : Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1);
      distances[i * width + j] = best;
    }
  }
  return at(a.length, b.length);
}
