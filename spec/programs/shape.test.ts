import { describe, expect, test } from "vitest";
import { positionInProgram } from "../../src/programs/mistake.ts";
import { prepareProgram, type PreparedProgram } from "../../src/programs/shape.ts";

const ready = (code: string, method = "add") => {
  const prepared = prepareProgram(code, method);
  if (!prepared.ok) throw new Error(`not ready: ${prepared.message}`);
  return prepared as Extract<PreparedProgram, { ok: true }>;
};
const KWARGS = "(...args, ...(Object.keys(kwargs).length > 0 ? [kwargs] : []))";

describe("program shapes", () => {
  test.each([
    ["a body with a return runs as written", "const a = 1;\nreturn a;", "body", "const a = 1;\nreturn a;"],
    ["statements that end in a loop run as written", "for (const x of args) context.n = x;", "body", "for (const x of args) context.n = x;"],
    ["a last expression is returned", "const a = 1;\na + args[0];", "expression", "const a = 1;\nreturn (a + args[0]);"],
    ["an arrow is called", "(a, b) => a + b", "function", `return await ((a, b) => a + b)${KWARGS}`],
    ["a lone function declaration is called", "function sum(a, b) { return a + b }", "function", `function sum(a, b) { return a + b }\n;return await sum${KWARGS};`],
    ["the function named like the method is called", "function helper(x) { return x }\nfunction add(a, b) { return helper(a) + b }", "function", `function helper(x) { return x }\nfunction add(a, b) { return helper(a) + b }\n;return await add${KWARGS};`],
    ["a class with the method is instantiated", "class Calc { add(a, b) { return a + b } }", "class", `class Calc { add(a, b) { return a + b } }\n;return await new Calc()["add"]${KWARGS};`],
    ["a static method is called on the class", "class Calc { static add(a, b) { return a + b } }", "class", `class Calc { static add(a, b) { return a + b } }\n;return await Calc["add"]${KWARGS};`],
  ])("%s", (_name, code, shape, source) => {
    const prepared = ready(code);
    expect(prepared.shape).toBe(shape);
    expect(prepared.source).toBe(source);
  });

  test.each([
    ["a class without the method", "class Calc { multiply(a, b) { return a * b } }", "The reply is a class `Calc` with no method `add`. Write the body of `add`, or a class with a method of that name."],
    ["declarations only", "function a() {}\nfunction b() {}", "The reply only declares `a`, `b` and never returns a value or calls anything. Write the body of `add`: statements that end with `return`."],
    ["a value declared and never returned", "const result = args[0] + args[1];", "The reply only declares `result` and never returns a value or calls anything. Write the body of `add`: statements that end with `return`."],
  ])("%s is invalid_code that says what the reply held", (_name, code, message) => {
    expect(prepareProgram(code, "add")).toMatchObject({ ok: false, message });
  });

  test("TypeScript is stripped, positions kept, then shaped", () => {
    const prepared = ready("const a: number = args[0] as number;\na * 2;", "double");
    expect(prepared.stripped).toBe(true);
    expect(prepared.source).toBe("const a         = args[0]          ;\nreturn (a * 2);");
  });

  test("a program that parses nowhere is left to the sandbox's compiler", () => {
    const prepared = ready("return (((", "add");
    expect(prepared.parsed.ok).toBe(false);
    expect(prepared.source).toBe("return (((");
  });

  test("a position in the program as run maps back to the model's own program", () => {
    const code = "const a = 1;\nmissing + a;";
    const prepared = ready(code);
    // `missing` sits at line 2, column 9 of the program as run ("return (" was inserted before it).
    expect(prepared.source.split("\n")[1]?.indexOf("missing")).toBe(8);
    expect(positionInProgram(prepared, code, { line: 2, column: 9 })).toEqual({ line: 2, column: 1 });
    // A position inside inserted text maps to where the insertion was made.
    expect(positionInProgram(prepared, code, { line: 2, column: 3 })).toEqual({ line: 2, column: 1 });
    expect(positionInProgram(prepared, code, { line: 1, column: 7 })).toEqual({ line: 1, column: 7 });
  });
});

describe("programs too long or too deep to prepare", () => {
  const LONGEST = 256 * 1024;

  test("a program longer than 256 KiB is refused before it is parsed, saying so", () => {
    const code = `return 1 // ${"x".repeat(LONGEST)}`;
    expect(prepareProgram(code, "add")).toMatchObject({ ok: false, message: `The program is ${code.length} characters long, more than the ${LONGEST} a program may have. Write a shorter body of \`add\`.` });
    expect(ready(`return 1 // ${"x".repeat(LONGEST - 12)}`).shape).toBe("body");
  });

  // Each parses; the walkers that shape and check a program go down one level at a time.
  test.each([
    ["1,500 nested blocks", `${"{".repeat(1_500)}${"}".repeat(1_500)} return 1`],
    ["a sum of 1,500 terms", `return ${"1+".repeat(1_500)}1`],
    ["1,000 nested ifs", `${"if (args[0]) ".repeat(1_000)}return 1`],
  ])("%s: refused as nested too deep to check", (_name, code) => {
    expect(prepareProgram(code, "add")).toMatchObject({
      ok: false,
      message: "The program nests more than 500 levels deep (blocks, calls and operators within each other), too deep to check. Write the body of `add` with less nesting.",
    });
  });

  test("nesting within the bound is prepared", () => {
    expect(ready(`${"{".repeat(450)}${"}".repeat(450)} return 1`).shape).toBe("body");
    expect(ready(`return ${"1+".repeat(450)}1`).shape).toBe("body");
  });
});
