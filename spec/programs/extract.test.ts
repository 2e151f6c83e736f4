import { describe, expect, test } from "vitest";
import { Agent, OpenAIProvider } from "../../src/index.ts";
import { extractProgram } from "../../src/programs/extract.ts";
import type { AnyAgent } from "../../test-support/agents.ts";
import { OpenAITestServer } from "../../test-support/openai-server.ts";

describe("extractProgram", () => {
  test.each([
    ["structured output", '{"code":"return 1"}', "return 1"],
    ["structured output with other keys", '{"explanation":"adds","code":"return 2"}', "return 2"],
    ["structured output inside a json fence", 'Here:\n```json\n{ "code": "return 3" }\n```', "return 3"],
    ["structured output whose code is fenced", '{"code":"```js\\nreturn 4\\n```"}', "return 4"],
    ["a tilde fence", "~~~javascript\nreturn 5\n~~~", "return 5"],
    ["a fence never closed", "Sure:\n```js\nreturn 6", "return 6"],
    ["reasoning first", "<think>maybe ```js\nreturn 0\n``` no</think>\n```js\nreturn 7\n```", "return 7"],
    ["a closing reasoning tag with no opening one", "I should add them.</think>return 8", "return 8"],
    ["a usage example before the body", "Use it like this:\n```js\nconst r = await calc.add(2, 3);\nconsole.log(r);\n```\nThe body:\n```js\nreturn args[0] + args[1];\n```", "return args[0] + args[1];"],
    ["a text plan, then the code outside any fence", "```text\n1. add the numbers\n```\nreturn args[0] + args[1];", "return args[0] + args[1];"],
    ["prose around unfenced code", "Here is the body:\nconst [a, b] = args;\nreturn a * b;\nThis multiplies the two numbers.", "const [a, b] = args;\nreturn a * b;"],
    ["an Explanation section after unfenced code", "return args[0];\n\nExplanation:\nIt returns the first argument.", "return args[0];"],
    ["structured output encoded twice (a JSON string holding it)", JSON.stringify('{"code":"return 42"}'), "return 42"],
    ["structured output alone in an array", '[{"code":"return 43"}]', "return 43"],
  ])("%s", (_name, content, program) => {
    expect(extractProgram(content, "add")).toBe(program);
  });

  test.each([
    ["null content", null],
    ["blank content", " \n\t "],
    ["a structured reply whose code is not a string", '{"code": 5}'],
    ["only reasoning", "<think>I am not sure what to write"],
  ])("%s is no program", (_name, content) => {
    expect(extractProgram(content, "add")).toBeNull();
  });

  test("prose with no code comes back as it is, for the compiler to reject", () => {
    expect(extractProgram("I'm sorry, but I can't help with that.", "add")).toBe("I'm sorry, but I can't help with that.");
  });
});

describe("replies built to cost the host", () => {
  // Every fence is data, so the program is looked for outside them: each line once, not once per fence.
  const EMPTY_FENCES = "```json\n```\n".repeat(128_000) + "return 1";
  // Each line starts like a declaration of `m`, and no `)` follows: each is looked at once, not to the end of the block.
  const OPEN_CALLS = "```js\n/*\n" + "m(\n".repeat(80_000) + "*/\nreturn 2\n```";

  test("a 1.5 MB reply of empty json fences holds the program after them", () => {
    expect(EMPTY_FENCES.length).toBeGreaterThan(1_500_000);
    expect(extractProgram(EMPTY_FENCES, "m")).toBe("return 1");
  });

  test.each([
    ["empty json fences", EMPTY_FENCES, 1],
    ["a block of lines that open a call of the method", OPEN_CALLS, 2],
  ])("%s, through an agent: the call ends within its callTimeoutMs, with the program's value", async (_name, content, value) => {
    const server = await OpenAITestServer.start([{ kind: "content", content }]);
    try {
      const provider = new OpenAIProvider({ apiKey: "test-key", baseURL: server.baseURL, model: "test-model", structuredOutput: false, maxRetries: 0 });
      const agent = Agent.for("hostile", { provider, callTimeoutMs: 8_000, maxGenerationAttempts: 1, reuse: false }) as AnyAgent;
      const outcome = await agent.m();
      expect({ errorType: outcome.errorType, errorMessage: outcome.errorMessage, value: outcome.value }).toEqual({ errorType: undefined, errorMessage: undefined, value });
    } finally {
      await server.close();
    }
  });

  test("blocks padded with runs of spaces or blank lines are scored in one pass", () => {
    const padded = "```js\nfunction" + " ".repeat(200_000) + "x\n```\n```js\n" + "\n".repeat(200_000) + "add(a)\n```\n```js\nreturn args[0] + args[1]\n```";
    expect(extractProgram(padded, "add")).toBe("return args[0] + args[1]");
  });

  test("a reply longer than 4 MiB is not searched: it comes back as it is", () => {
    const reply = "```js\nreturn 1\n```\n" + " ".repeat(4 * 1024 * 1024);
    expect(extractProgram(reply, "m")?.length).toBe(reply.length);
  });

  test("only the first 200 fenced blocks are looked into; later ones are still fences", () => {
    const plans = "```text\nstep\n```\n".repeat(200);
    expect(extractProgram(`${plans}return 1`, "m")).toBe("return 1");
    expect(extractProgram(`${plans}\`\`\`js\nreturn 2\n\`\`\`\nreturn 1`, "m")).toBe("return 1");
    expect(extractProgram(`${plans.slice(0, -"```text\nstep\n```\n".length)}\`\`\`js\nreturn 2\n\`\`\``, "m")).toBe("return 2");
  });
});
