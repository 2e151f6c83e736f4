/**
 * Names a telemetry report keeps apart are bounded: past the first few of a kind (roles,
 * methods, error types, history scans, not-kept reasons), calls are counted together under
 * {@link OTHER}, so a log of countless distinct names is reported in bounded memory. How many
 * distinct names went there is counted too, by a hash of each. Each name kept is cut to
 * {@link MAX_NAME_CHARS}, so a name megabytes long does not make a report of gigabytes.
 */

/** Where calls past the first names of a kind are counted. */
export const OTHER = "(other)";

/** Longest name a report keeps: a role, method, error type, history scan, call id or program source. @unit characters */
export const MAX_NAME_CHARS = 200;

/** A name as the report keeps it: cut to {@link MAX_NAME_CHARS}, with "…" where it was cut. */
export function boundedName(name: string): string {
  return name.length > MAX_NAME_CHARS ? `${name.slice(0, MAX_NAME_CHARS)}…` : name;
}

/** Distinct names folded into {@link OTHER} counted, per kind; past it the count stays there, meaning at least that many. */
export const MAX_FOLDED_COUNTED = 500_000;

/** The key to count `name` under in `counts`: its own while fewer than `limit` names have one, else {@link OTHER}. */
export function keyIn(counts: Readonly<Record<string, unknown>>, name: string, limit: number): string {
  if (Object.hasOwn(counts, name)) return name;
  // Once names have filled it, (other) is there: no need to count its keys for every new name.
  if (Object.hasOwn(counts, OTHER)) return OTHER;
  return Object.keys(counts).length < limit ? name : OTHER;
}

/** How many distinct names were folded into {@link OTHER}: kept as 53-bit hashes, so a name's length costs nothing and collisions are too rare to count. */
export class FoldedNames {
  readonly #hashes = new Set<number>();

  add(name: string): void {
    if (this.#hashes.size < MAX_FOLDED_COUNTED) this.#hashes.add(hash53(name));
  }

  get count(): number {
    return this.#hashes.size;
  }
}

/** A 53-bit hash of a string: two 32-bit multiplicative hashes, mixed, joined into one safe integer. */
function hash53(text: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    h1 = Math.imul(h1 ^ code, 2654435761);
    h2 = Math.imul(h2 ^ code, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}
