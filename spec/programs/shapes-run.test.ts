import { describe, expect, test } from "vitest";
import { kw, type Tool } from "../../src/index.ts";
import { agentWith, scriptedAgent } from "../../test-support/agents.ts";

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

describe("programs too long or too deep to check, through an agent", () => {
  test("a working program wrapped in 1,500 blocks that writes through a tool: invalid_code before it runs; nothing is sent, the context stays", async () => {
    let transfers = 0;
    const transfer: Tool = {
      description: "Sends money.",
      inputSchema: { type: "object", properties: { to: { type: "string" }, amount: { type: "number" } }, required: ["to", "amount"] },
      execute: () => {
        transfers += 1;
        return { ok: true };
      },
    };
    const body = "await tools.transfer({ to: 'bob', amount: 100 }); context.transferred = (context.transferred ?? 0) + 100; return 'sent'";
    const { agent, history } = agentWith({ pay: `${"{".repeat(1_500)}${body}${"}".repeat(1_500)}` }, { role: "bank", maxGenerationAttempts: 1, tools: { transfer } });
    const r = await agent.pay();
    expect(r).toMatchObject({ status: "error", errorType: "invalid_code", errorMessage: expect.stringContaining("nests more than 500 levels deep") });
    expect(transfers).toBe(0);
    expect(agent.runtimeContext.transferred).toBeUndefined();
    expect(history()[0]?.tool_calls).toBeUndefined();
  });

  test.each([
    ["1,500 nested blocks", `${"{".repeat(1_500)}${"}".repeat(1_500)} return 1`],
    ["a sum of 1,500 terms", `return ${"1+".repeat(1_500)}1`],
    ["1,000 nested ifs", `${"if (args[0]) ".repeat(1_000)}return 1`],
  ])("%s: invalid_code, asked again with the reason", async (_name, code) => {
    const { agent, provider } = agentWith({ compute: [code, "return 2"] }, { role: "deep" });
    const r = await agent.compute(1);
    expect({ value: r.value, error: r.errorMessage }).toEqual({ value: 2, error: undefined });
    expect(provider.calls[1]?.feedback?.error).toContain("nests more than 500 levels deep");
  });

  test("a program longer than 256 KiB is invalid_code saying so, and is not run", async () => {
    const code = `context.ran = true; return 1 // ${"x".repeat(256 * 1024)}`;
    const { agent } = agentWith({ compute: code }, { role: "long", maxGenerationAttempts: 1 });
    const r = await agent.compute();
    expect(r).toMatchObject({ errorType: "invalid_code", errorMessage: `The program is ${code.length} characters long, more than the 262144 a program may have. Write a shorter body of \`compute\`.` });
    expect(agent.runtimeContext.ran).toBeUndefined();
  });
});
