import { describe, expect, test } from "vitest";
import { extractProgram } from "../../src/programs/extract.ts";

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
