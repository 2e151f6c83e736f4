/**
 * JSON Schema `pattern`s are ECMA-262 regular expressions (ajv reads them with the `u` flag);
 * improv runs them on RE2, in linear time, whose syntax mostly agrees. Where the two differ in
 * meaning, a pattern is written anew for RE2 so that it means what it means in JavaScript:
 * - `\s` and `\S`: JavaScript's white space and line terminators (RE2's are ASCII only);
 * - `.`: any character but a line terminator (RE2's also matches `\r`, U+2028 and U+2029);
 * - `\uXXXX` (a surrogate pair as one character), `\u{X…}` and `\cX`, which RE2 writes `\x{…}`;
 * - `[^]` (any character), `[]` (none), and in a class `\b` (backspace), `[` and `^` (themselves);
 * - a negated class holding `\S` (`[^\S\r\n]`: white space but line breaks), written as the white
 *   space characters it leaves in;
 * - `.` in a group that turns `s` on or off (`(?s:…)`, ES2025's modifiers).
 * What RE2 cannot run (a lookaround, a backreference) is left as it is, for RE2 to refuse.
 */

/** JavaScript's `\s`, as the inside of an RE2 class. */
const WHITE = "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";
/** JavaScript's `\s`, each of its characters. */
const WHITE_CHARACTERS = ["\t", "\n", "\v", "\f", "\r", " ", "\u00a0", "\u1680", ...Array.from({ length: 11 }, (_, at) => String.fromCharCode(0x2000 + at)), "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\ufeff"];
/** JavaScript's `.` without the `s` flag, and with it. */
const NOT_LINE_END = "[^\\n\\r\\x{2028}\\x{2029}]";
const ANY = "(?s:.)";
/** A class that matches nothing. */
const NOTHING = "[^\\x{0}-\\x{10FFFF}]";

/** `pattern` as RE2 reads it with the meaning JavaScript gives it; throws when it has no such writing. */
export function ecmaPatternForRe2(pattern: string): string {
  let written = "";
  let at = 0;
  // Whether `.` matches line terminators, for each open group (a modifier group may change it).
  const dotAll: boolean[] = [false];
  while (at < pattern.length) {
    const char = pattern[at] as string;
    if (char === "(") {
      const modifiers = /^\(\?([a-z]*)(?:-([a-z]*))?:/.exec(pattern.slice(at, at + 12));
      const inside = dotAll.at(-1) as boolean;
      dotAll.push(modifiers === null ? inside : (modifiers[1] ?? "").includes("s") ? true : (modifiers[2] ?? "").includes("s") ? false : inside);
    } else if (char === ")" && dotAll.length > 1) dotAll.pop();
    const [text, next] = char === "\\" ? escape(pattern, at, false) : char === "[" ? characterClass(pattern, at) : [char === "." ? (dotAll.at(-1) ? ANY : NOT_LINE_END) : char, at + 1];
    written += text;
    at = next;
  }
  return written;
}

/** The escape at `at` as RE2 writes it, and where the pattern goes on. */
function escape(pattern: string, at: number, inClass: boolean): [string, number] {
  const next = pattern[at + 1];
  switch (next) {
    case undefined:
      return ["\\", at + 1];
    case "s":
      return [inClass ? WHITE : `[${WHITE}]`, at + 2];
    case "S":
      return [`[^${WHITE}]`, at + 2];
    case "u":
      return unicodeEscape(pattern, at);
    case "c": {
      const letter = pattern[at + 2] ?? "";
      return /^[A-Za-z]$/.test(letter) ? [`\\x{${(letter.charCodeAt(0) % 32).toString(16)}}`, at + 3] : ["\\c", at + 2];
    }
    case "b":
      return [inClass ? "\\x{08}" : "\\b", at + 2];
    default:
      return [`\\${next}`, at + 2];
  }
}

/** `\uXXXX` (two of them when they are a surrogate pair) or `\u{X…}`; anything else is left for RE2 to refuse. */
function unicodeEscape(pattern: string, at: number): [string, number] {
  const braced = /^\{([0-9a-fA-F]{1,6})\}/.exec(pattern.slice(at + 2, at + 11));
  if (braced !== null) return [`\\x{${braced[1]}}`, at + 4 + (braced[1] as string).length];
  const pair = /^([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})/.exec(pattern.slice(at + 2, at + 12));
  if (pair !== null) {
    const code = ((parseInt(pair[1] as string, 16) - 0xd800) << 10) + (parseInt(pair[2] as string, 16) - 0xdc00) + 0x10000;
    return [`\\x{${code.toString(16)}}`, at + 12];
  }
  const four = /^[0-9a-fA-F]{4}/.exec(pattern.slice(at + 2, at + 6));
  return four === null ? ["\\u", at + 2] : [`\\x{${four[0]}}`, at + 6];
}

/** The class that opens at `at` as RE2 writes it, and where the pattern goes on after it. */
function characterClass(pattern: string, at: number): [string, number] {
  let index = at + 1;
  const negated = pattern[index] === "^";
  if (negated) index += 1;
  if (pattern[index] === "]") return [negated ? ANY : NOTHING, index + 1];
  let items = "";
  // The class's other items as JavaScript writes them, for a negated class holding `\S`.
  let others = "";
  let notWhite = false;
  while (index < pattern.length && pattern[index] !== "]") {
    const char = pattern[index] as string;
    if (char === "\\" && pattern[index + 1] === "S") {
      notWhite = true;
      index += 2;
      continue;
    }
    // `[` and `^` in a class are themselves in JavaScript; RE2 would read `[:alpha:]` as a class of its own, and `^` first as negation.
    const [text, next] = char === "\\" ? escape(pattern, index, true) : [char === "[" || char === "^" ? `\\${char}` : char, index + 1];
    items += text;
    others += pattern.slice(index, next);
    index = next;
  }
  // Not closed: left as it is, for RE2 to refuse.
  if (index >= pattern.length) return [pattern.slice(at), pattern.length];
  index += 1;
  if (!notWhite) return [`[${negated ? "^" : ""}${items}]`, index];
  if (negated) return [whiteOutside(others), index];
  return [items === "" ? `[^${WHITE}]` : `(?:[^${WHITE}]|[${items}])`, index];
}

/**
 * `[^\S…]`: the white space characters the class's other items (`others`, as JavaScript writes
 * them) leave out, as a class of their own. The items are read by JavaScript itself, one white
 * space character at a time: a class, on at most 25 characters of one code point each.
 */
function whiteOutside(others: string): string {
  let matches: RegExp;
  try {
    matches = new RegExp(`^[${others}]$`, "u");
  } catch (error) {
    throw new Error(`its class [^\\S${others}] is not a JavaScript class (${(error as Error).message})`);
  }
  const left = WHITE_CHARACTERS.filter((character) => !matches.test(character));
  return left.length === 0 ? NOTHING : `[${left.map((character) => `\\x{${(character.codePointAt(0) as number).toString(16)}}`).join("")}]`;
}
