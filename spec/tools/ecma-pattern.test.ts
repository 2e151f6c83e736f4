/**
 * JSON Schema patterns are ECMA-262 regular expressions; improv runs them on RE2 (linear time),
 * written so that they mean what they mean in JavaScript: a schema check answers as
 * `new RegExp(pattern, "u").test(text)` does.
 */
import { describe, expect, test } from "vitest";
import { JsonSchemaCompiler } from "../../src/tools/json-schema.ts";
import { ecmaPatternForRe2 } from "../../src/tools/ecma-pattern.ts";

const compiler = new JsonSchemaCompiler();
const matches = (pattern: string, text: string) => compiler.compile({ type: "string", pattern })(text).ok;

const SPACES = ["\t", "\n", "\v", "\f", "\r", " ", "\u00a0", "\u1680", "\u2000", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\ufeff"];
const TEXTS = ["abc", "a b", "a\u00a0b", "a\vb", "a\u2028b", "a\ufeffb", "a\rb", "a\nb", "", "A", "ABC", "\u0001", "x", "é", "٣", "-", "a\u0085b", "\u{1F600}", "a]b", "[", "\b"];

describe("patterns mean what they mean in JavaScript", () => {
  test.each([
    "^\\S+$",
    "^\\s+$",
    "^[^\\s]+$",
    "^[\\s]+$",
    "^[\\S]+$",
    "^[\\Sa]+$",
    "^[a\\s-]+$",
    "^.+$",
    "^.*$",
    "^[.]+$",
    "^\\u0041$",
    "^[\\u0041-\\u005A]+$",
    "^\\u{1F600}$",
    "^\\cA$",
    "^[^]$",
    "^[^]*$",
    "^[]$",
    "^\\w+$",
    "^\\d+$",
    "^\\p{L}+$",
    "^a$",
    "^(?:a|b)$",
    "^\\x41$",
    "^[\\b]$",
    "^\\]$",
    "^[\\]]$",
    "\\\\.",
    "^[\\S^a]+$",
    "^[\\S^]+$",
    "^[\\S^-]$",
    "^[a^]+$",
    "^[^\\S\\r\\n]+$",
    "^[^\\S\\n]$",
    "^[^\\S]$",
    "^[^\\Sa]$",
    "^(?s:.)$",
    "^(?s:a.b)$",
    "^(?s:(?-s:.))$",
    "^(?i:a.)$",
    "^(?i:A)[a.]$",
  ])("%s", (pattern) => {
    for (const text of [...TEXTS, ...SPACES, ...SPACES.map((space) => `a${space}b`)]) {
      expect([pattern, text, matches(pattern, text)]).toEqual([pattern, text, new RegExp(pattern, "u").test(text)]);
    }
  });

  test("what RE2 cannot run, or means otherwise and cannot be written for it, is refused with its reason", () => {
    expect(() => compiler.compile({ type: "string", pattern: "^(?<n>a)\\k<n>$" })).toThrow(/not a usable JSON Schema/);
    expect(() => compiler.compile({ type: "string", pattern: "^(?=a)" })).toThrow(/not a usable JSON Schema/);
  });

  test("only what differs is written anew", () => {
    expect(ecmaPatternForRe2("^[a-z0-9_]+\\d{2,}(?:x|y)$")).toBe("^[a-z0-9_]+\\d{2,}(?:x|y)$");
    expect(ecmaPatternForRe2("a.b")).toBe("a[^\\n\\r\\x{2028}\\x{2029}]b");
  });
});
