import { describe, expect, test } from "vitest";
import { kw } from "../../src/index.ts";
import { scriptedAgent } from "../../test-support/agents.ts";

/** Shapes a model writes instead of a body, run in the real sandbox as `add(10, 20)`. */
const SHAPES: [string, string, unknown][] = [
  ["a bare expression", "args[0] + args[1]", 30],
  ["an object literal in parentheses", "({ sum: args[0] + args[1] })", { sum: 30 }],
  ["an arrow in parentheses", "((a, b) => a + b)", 30],
  ["an expression in parentheses after statements", "const offset = 1;\n(args[0] + args[1] + offset);", 31],
  ["a function called with a made-up example", "function add(a, b) { return a + b }\nadd(2, 3)", 30],
  ["a function printed with a made-up example", "function add(a, b) { return a + b }\nconsole.log(add(2, 3));", 30],
  ["a function called with the call's own arguments", "function add(a, b) { return a + b }\nadd(args[0], 1)", 11],
  ["a lone string", '"thirty"', "thirty"],
  ["a directive before a function", '"use strict";\nfunction add(a, b) { return a + b }', 30],
  ["an exported default function", "export default function add(a, b) { return a + b }", 30],
  ["an exported function in TypeScript", "export function add(a: number, b: number): number { return a + b }", 30],
  ["a class whose method is a field arrow", "class Calculator { add = (a, b) => a + b }", 30],
  ["an assignment as the last statement", "context.total = args[0] + args[1]", 30],
];

describe("shapes run as their model meant", () => {
  test.each(SHAPES)("%s", async (_name, program, value) => {
    const { agent, provider } = scriptedAgent("calculator", { add: program });
    const r = await agent.add(10, 20);
    expect({ value: r.value, error: r.errorMessage }).toEqual({ value, error: undefined });
    expect(provider.calls).toHaveLength(1);
  });

  test("named arguments reach a called function as one last argument", async () => {
    const { agent } = scriptedAgent("converter", { convert: "const convert = (value, { to }) => (to === 'f' ? value * 9 / 5 + 32 : value);" });
    expect((await agent.convert(100, kw({ to: "f" }))).value).toBe(212);
  });

  test("a reply with only comments is invalid_code that says so", async () => {
    const { agent } = scriptedAgent("calculator", { add: "// TODO: implement add\n/* nothing yet */" }, { maxGenerationAttempts: 1 });
    const r = await agent.add(1, 2);
    expect(r).toMatchObject({ errorType: "invalid_code", errorMessage: "The reply holds no statements (only comments, or nothing). Write the body of `add`: statements that end with `return`." });
  });
});
