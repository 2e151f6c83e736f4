import { describe, expect, test } from "vitest";
import { scanToolUse } from "../../src/telemetry/tool-scan.ts";

describe("the static scan's tool fields", () => {
  const cases: [string, string, boolean, string[]][] = [
    ["a tool called", "return await tools.weather({ city: 'x' })", true, ["weather"]],
    ["a tool in a set", "await tools.notes.append({ text: 'a' }); return tools.notes.list({})", true, ["notes.append", "notes.list"]],
    ["a computed name", "return tools['weather']({})", true, ["weather"]],
    ["destructured", "const { weather, units } = tools; return weather({})", true, ["weather", "units"]],
    ["a function's own members are not tool names", "return await tools.weather.call(null, {})", true, ["weather"]],
    ["passed along whole: reached, names unknown", "const t = tools; return Object.keys(t)", true, []],
    ["a tools of the program's own is not the granted one", "const tools = { weather: () => 1 }; return tools.weather()", false, []],
    ["a parameter named tools", "const f = (tools) => tools.weather(); return f({ weather: () => 1 })", false, []],
    ["the word in a string", "return 'tools.weather'", false, []],
    ["no tools at all", "return args[0] + 1", false, []],
  ];
  test.each(cases)("%s", (_name, code, detected, names) => {
    expect(scanToolUse(code)).toEqual({ toolAccessDetected: detected, toolsReferenced: names });
  });

  test("a program that does not parse falls back to the text", () => {
    expect(scanToolUse("await tools.weather({ city: ")).toEqual({ toolAccessDetected: true, toolsReferenced: [] });
  });

  test("at most 50 names", () => {
    const code = Array.from({ length: 80 }, (_, i) => `await tools.t${i}({});`).join("\n");
    expect(scanToolUse(code).toolsReferenced).toHaveLength(50);
  });
});
