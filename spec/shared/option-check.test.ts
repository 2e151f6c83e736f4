import { describe, expect, test } from "vitest";
import { checkOptionNames, describeType } from "../../src/shared/index.ts";

describe("describeType", () => {
  test("says what a value is, with the right article, and shows strings and numbers as such", () => {
    expect(describeType({})).toBe("an object");
    expect(describeType(new Date(0))).toBe("an object");
    expect(describeType(undefined)).toBe("undefined");
    expect(describeType(null)).toBe("null");
    expect(describeType([1])).toBe("an array");
    expect(describeType("100")).toBe('the string "100"');
    expect(describeType(100)).toBe("the number 100");
    expect(describeType(true)).toBe("a boolean");
    expect(describeType(() => 1)).toBe("a function");
    expect(describeType(Symbol("s"))).toBe("a symbol");
    expect(describeType(1n)).toBe("a bigint");
  });
});

describe("checkOptionNames", () => {
  const check = (options: unknown) => () => checkOptionNames(options, ["id", "keepLast", "timeoutMs", "name", "maxChars"], "f()");

  test("an unknown name close to one valid name is refused with a suggestion, the valid names still listed", () => {
    expect(check({ keepLst: 1 })).toThrow(new TypeError('Unknown option "keepLst" for f(). Did you mean "keepLast"? Valid options: id, keepLast, timeoutMs, name, maxChars.'));
    expect(check({ keeplast: 1 })).toThrow('Unknown option "keeplast" for f(). Did you mean "keepLast"?');
    expect(check({ timeout: 1 })).toThrow('Unknown option "timeout" for f(). Did you mean "timeoutMs"?');
    expect(check({ nmae: "x" })).toThrow('Unknown option "nmae" for f(). Did you mean "name"?');
    expect(check({ ID: "x" })).toThrow('Unknown option "ID" for f(). Did you mean "id"?');
  });

  test("a name close to none, or short and different, gets no suggestion", () => {
    expect(check({ dryRun: true })).toThrow(new TypeError('Unknown option "dryRun" for f(). Valid options: id, keepLast, timeoutMs, name, maxChars.'));
    expect(check({ ix: 1 })).toThrow(new TypeError('Unknown option "ix" for f(). Valid options: id, keepLast, timeoutMs, name, maxChars.'));
  });

  test("a hint given for a misspelling is said instead of a suggestion", () => {
    expect(() => checkOptionNames({ baseurl: "x" }, ["baseURL"], "g()", { baseurl: ' (it is spelled "baseURL")' })).toThrow(new TypeError('Unknown option "baseurl" for g() (it is spelled "baseURL"). Valid options: baseURL.'));
  });

  test("options that are not an object say what they are", () => {
    expect(check("x")).toThrow(new TypeError('The options of f() must be an object, got the string "x".'));
    expect(check(null)).toThrow(new TypeError("The options of f() must be an object, got null."));
    expect(check(undefined)).not.toThrow();
  });
});
