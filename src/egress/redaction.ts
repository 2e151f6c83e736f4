/**
 * Taking the values the host adds to requests (`egress.headers`) out of what a program, a record
 * or a log may see. A server can send a credential back changed, so each value is
 * looked for in every form the host can recognize: verbatim, in any letter case, reversed, URL-,
 * JSON-, hex- and base64-encoded (at each of base64's three alignments, either alphabet), and any
 * 8 characters in a row of one of those forms. Values of 6 or 7 characters are looked for whole,
 * in the same forms; shorter ones are not looked for (too likely to stand for something else).
 *
 * The fragments are found in one pass: a rolling hash of every 8 characters of the text (in
 * lower case) against a bit table of the fragments' hashes, each hit confirmed
 * character by character; what matched is merged into runs, each replaced by `[redacted]`.
 */

export const REDACTED = "[redacted]";
/** Values shorter than this are not looked for. */
export const MIN_SECRET_CHARS = 6;
/** Fragments this long of a value (or of one of its forms) are recognized. */
const WINDOW = 8;
const TABLE_BITS = 20;
const MULTIPLIER = 0x01000193;
/** MULTIPLIER ** (WINDOW - 1), modulo 2 ** 32. */
const LEADING = Array.from({ length: WINDOW - 1 }).reduce<number>((power) => Math.imul(power, MULTIPLIER), 1);

/** Replaces every recognizable copy of the values it was made for. */
export interface Redactor {
  /** `text` with every recognizable copy replaced by `[redacted]`; `text` itself when there is none. */
  redact(text: string): string;
  /** Whether it looks for anything at all. */
  readonly active: boolean;
}

/** A redactor that looks for nothing. */
export const NO_REDACTION: Redactor = Object.freeze({ redact: (text: string) => text, active: false });

/** One redactor that takes out what each of `redactors` does (for a call tree whose agents have policies of their own). */
export function redactorOfAll(redactors: readonly Redactor[]): Redactor {
  const active = redactors.filter((redactor) => redactor.active);
  if (active.length <= 1) return active[0] ?? NO_REDACTION;
  return Object.freeze({ active: true, redact: (text: string) => active.reduce((result, redactor) => redactor.redact(result), text) });
}

/**
 * The redactor for the headers the host adds, given as `[name, value]`. Besides each value, it
 * looks for the credential of a `scheme credential` value (`Bearer x`: also `x`; `Basic x`: also
 * the user and password `x` decodes to) and the bare value of each cookie of a `cookie` header.
 */
export function redactorFor(headers: readonly (readonly [string, string])[]): Redactor {
  // A piece to be found only whole: the text around a secret (`Bearer `) is no secret of its own.
  const pieces = new Map<string, boolean>();
  for (const [name, value] of headers) {
    for (const [piece, wholeOnly] of piecesOf(name, value)) if (piece.length >= MIN_SECRET_CHARS) pieces.set(piece, (pieces.get(piece) ?? true) && wholeOnly);
  }
  if (pieces.size === 0) return NO_REDACTION;
  const windows: string[] = [];
  const whole: string[] = [];
  for (const [piece, wholeOnly] of pieces) {
    for (const form of formsOf(piece)) {
      const folded = fold(form);
      if (wholeOnly || piece.length < WINDOW || folded.length < WINDOW) {
        if (folded.length >= MIN_SECRET_CHARS) whole.push(folded);
      } else {
        for (let start = 0; start + WINDOW <= folded.length; start += 1) windows.push(folded.slice(start, start + WINDOW));
      }
    }
  }
  return new FragmentRedactor([...new Set(windows)], [...new Set(whole)]);
}

/** What of a header's value is a secret on its own, each with whether it is looked for only whole. */
function piecesOf(name: string, value: string): [string, boolean][] {
  const trimmed = value.trim();
  if (name.toLowerCase() === "cookie") {
    // Each cookie's value: a cookie's name is no secret, and fragments of it would be redacted everywhere.
    return [[trimmed, true], ...trimmed.split(";").map((pair): [string, boolean] => [pair.slice(pair.indexOf("=") + 1).trim().replace(/^"(.*)"$/, "$1"), false])];
  }
  const scheme = /^(\S+)\s+(\S.*)$/.exec(trimmed);
  if (scheme === null) return [[trimmed, false]];
  const credential = scheme[2]!;
  const pieces: [string, boolean][] = [
    [trimmed, true],
    [credential, false],
  ];
  if (scheme[1]!.toLowerCase() === "basic") {
    const decoded = Buffer.from(credential, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon !== -1) pieces.push([decoded, false], [decoded.slice(colon + 1), false]);
  }
  return pieces;
}

/** The forms a server may send a value back in. */
function formsOf(piece: string): string[] {
  const bytes = Buffer.from(piece, "utf8");
  const json = JSON.stringify(piece).slice(1, -1);
  const forms = [piece, [...piece].reverse().join(""), encodeURIComponent(piece), new URLSearchParams({ v: piece }).toString().slice(2), json, json.replaceAll("/", "\\/"), bytes.toString("hex")];
  for (const alphabet of ["base64", "base64url"] as const) for (const shift of [0, 1, 2]) forms.push(base64Core(bytes, shift, alphabet));
  return forms;
}

/**
 * The characters of `bytes`' base64 form that depend on its bytes alone, when `shift` bytes
 * came before it: the first characters also carry the bytes before, the last one the bytes after.
 */
function base64Core(bytes: Buffer, shift: number, alphabet: "base64" | "base64url"): string {
  const text = Buffer.concat([Buffer.alloc(shift), bytes]).toString(alphabet).replace(/=+$/, "");
  const lead = Math.ceil((shift * 8) / 6);
  const tail = ((shift + bytes.length) * 8) % 6 === 0 ? 0 : 1;
  return text.slice(lead, text.length - tail);
}

/** `text` in lower case with every index where it was: at once where lower-casing keeps the length (ASCII, most text), else its ASCII letters only. */
function fold(text: string): string {
  const lowered = text.toLowerCase();
  return lowered.length === text.length ? lowered : text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

class FragmentRedactor implements Redactor {
  readonly active = true;
  readonly #table = new Uint8Array(2 ** (TABLE_BITS - 3));
  readonly #byHash = new Map<number, string[]>();
  readonly #whole: RegExp | undefined;
  /** The same without `g`: asked first, as most texts hold no copy and an iterator of matches costs more than the search. */
  readonly #wholeFound: RegExp | undefined;
  /** Texts shorter than this hold nothing the redactor looks for. */
  readonly #shortest: number;

  constructor(windows: readonly string[], whole: readonly string[]) {
    for (const window of windows) {
      let hash = 0;
      for (let index = 0; index < WINDOW; index += 1) hash = (Math.imul(hash, MULTIPLIER) + window.charCodeAt(index)) | 0;
      const slot = hash >>> (32 - TABLE_BITS);
      this.#table[slot >>> 3]! |= 1 << (slot & 7);
      const same = this.#byHash.get(hash);
      if (same === undefined) this.#byHash.set(hash, [window]);
      else same.push(window);
    }
    // Longest first, so a form is taken whole before a shorter one inside it.
    this.#whole = whole.length === 0 ? undefined : new RegExp([...whole].sort((a, b) => b.length - a.length).map(escapeRegExp).join("|"), "gi");
    this.#wholeFound = this.#whole === undefined ? undefined : new RegExp(this.#whole.source, "i");
    this.#shortest = Math.min(windows.length > 0 ? WINDOW : Number.POSITIVE_INFINITY, ...whole.map((piece) => piece.length));
  }

  redact(text: string): string {
    // Most texts improv writes are short (names, keys, numbers): nothing to look for in them.
    if (text.length < this.#shortest) return text;
    const runs: number[] = [];
    if (this.#byHash.size > 0) this.#scan(text, runs);
    if (this.#whole !== undefined && this.#wholeFound!.test(text)) {
      for (const match of text.matchAll(this.#whole)) add(runs, match.index, match.index + match[0].length);
    }
    if (runs.length === 0) return text;
    const merged = mergeRuns(runs);
    let result = "";
    let at = 0;
    for (let index = 0; index < merged.length; index += 2) {
      result += text.slice(at, merged[index]) + REDACTED;
      at = merged[index + 1]!;
    }
    return result + text.slice(at);
  }

  /** Adds to `runs` every stretch of `text` that is a known fragment. */
  #scan(text: string, runs: number[]): void {
    const length = text.length;
    if (length < WINDOW) return;
    const folded = fold(text);
    const table = this.#table;
    let hash = 0;
    for (let index = 0; index < WINDOW - 1; index += 1) hash = (Math.imul(hash, MULTIPLIER) + folded.charCodeAt(index)) | 0;
    for (let end = WINDOW - 1; end < length; end += 1) {
      hash = (Math.imul(hash, MULTIPLIER) + folded.charCodeAt(end)) | 0;
      const slot = hash >>> (32 - TABLE_BITS);
      if ((table[slot >>> 3]! & (1 << (slot & 7))) !== 0) {
        const start = end - WINDOW + 1;
        if (this.#confirmed(folded, start, hash)) add(runs, start, end + 1);
      }
      // The character leaving the window takes its share out of the hash.
      hash = (hash - Math.imul(folded.charCodeAt(end - WINDOW + 1), LEADING)) | 0;
    }
  }

  #confirmed(folded: string, start: number, hash: number): boolean {
    const candidates = this.#byHash.get(hash);
    return candidates !== undefined && candidates.some((window) => folded.startsWith(window, start));
  }
}

/** Adds the run [start, end) to `runs`, joining it to the last run when they touch (scans add runs in order). */
function add(runs: number[], start: number, end: number): void {
  const last = runs.length - 1;
  if (last > 0 && start <= runs[last]! && start >= runs[last - 1]!) runs[last] = Math.max(runs[last]!, end);
  else runs.push(start, end);
}

/** Runs as sorted, disjoint [start, end) pairs. */
function mergeRuns(runs: readonly number[]): number[] {
  const pairs: [number, number][] = [];
  for (let index = 0; index < runs.length; index += 2) pairs.push([runs[index]!, runs[index + 1]!]);
  pairs.sort((a, b) => a[0] - b[0]);
  const merged: number[] = [];
  for (const [start, end] of pairs) {
    const last = merged.length - 1;
    if (last > 0 && start <= merged[last]!) merged[last] = Math.max(merged[last]!, end);
    else merged.push(start, end);
  }
  return merged;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
}
