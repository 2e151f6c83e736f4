/**
 * JSON Schema `pattern`s are ECMA-262 regular expressions (ajv reads them with the `u` flag);
 * improv runs them on RE2, in linear time, whose syntax mostly agrees. Where the two differ in
 * meaning, a pattern is written anew for RE2 so that it means what it means in JavaScript:
 * - `\s` and `\S`: JavaScript's white space and line terminators (RE2's are ASCII only);
 * - `.`: any character but a line terminator (RE2's also matches `\r`, U+2028 and U+2029);
 * - `\uXXXX` (a surrogate pair as one character), `\u{X…}` and `\cX`, which RE2 writes `\x{…}`;
 * - `[^]` (any character), `[]` (none), and in a class `\b` (backspace) and `[` (itself).
 * What RE2 cannot run (a lookaround, a backreference) is left as it is, for RE2 to refuse.
 */

/** JavaScript's `\s`, as the inside of an RE2 class. */
const WHITE = "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";
/** JavaScript's `.` without the `s` flag. */
const NOT_LINE_END = "[^\\n\\r\\x{2028}\\x{2029}]";

/** `pattern` as RE2 reads it with the meaning JavaScript gives it; throws when it has no such writing. */
export function ecmaPatternForRe2(pattern: string): string {
  let written = "";
  let at = 0;
  while (at < pattern.length) {
    const char = pattern[at] as string;
    const [text, next] = char === "\\" ? escape(pattern, at, false) : char === "[" ? characterClass(pattern, at) : [char === "." ? NOT_LINE_END : char, at + 1];
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
  if (pattern[index] === "]") return [negated ? "(?s:.)" : "[^\\x{0}-\\x{10FFFF}]", index + 1];
  let items = "";
  let notWhite = false;
  while (index < pattern.length && pattern[index] !== "]") {
    const char = pattern[index] as string;
    if (char === "\\" && pattern[index + 1] === "S") {
      notWhite = true;
      index += 2;
      continue;
    }
    // A `[` in a class is itself in JavaScript; RE2 would read `[:alpha:]` as a class of its own.
    const [text, next] = char === "\\" ? escape(pattern, index, true) : [char === "[" ? "\\[" : char, index + 1];
    items += text;
    index = next;
  }
  // Not closed: left as it is, for RE2 to refuse.
  if (index >= pattern.length) return [pattern.slice(at), pattern.length];
  index += 1;
  if (!notWhite) return [`[${negated ? "^" : ""}${items}]`, index];
  if (negated) throw new Error("a negated character class that holds \\S cannot be checked here; list the characters it allows instead");
  return [items === "" ? `[^${WHITE}]` : `(?:[^${WHITE}]|[${items}])`, index];
}
