import { UnsupportedFunctionalityError } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { describe, expect, test } from "vitest";
import { Agent, AISDKProvider } from "../../src/index.ts";

type GenerateResult = Awaited<ReturnType<MockLanguageModelV4["doGenerate"]>>;

function textResult(text: string): GenerateResult {
  return {
    content: [{ type: "text", text }],
    finishReason: { unified: "stop", raw: "stop" },
    usage: { inputTokens: { total: 50, noCache: 50, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 7, text: 7, reasoning: undefined } },
    warnings: [],
  };
}

describe("AISDKProvider", () => {
  test("an agent on an AI SDK model: the model gets the prompts and a JSON response format, and the record names the model's provider", async () => {
    const model = new MockLanguageModelV4({ provider: "mock.chat", modelId: "mock-1", doGenerate: async () => textResult(JSON.stringify({ code: "return args[0] - args[1]" })) });
    const calc = Agent.for("calculator", { provider: new AISDKProvider({ model }) });
    expect((await calc.subtract(9, 4)).value).toBe(5);
    const [call] = model.doGenerateCalls;
    expect(call?.responseFormat).toMatchObject({ type: "json", schema: { required: ["code"] } });
    expect(call?.prompt.map((message) => message.role)).toEqual(["system", "user"]);
    expect(Agent.history(calc)[0]).toMatchObject({ provider: "mock.chat", model: "mock-1" });
  });

  test("a model that cannot give structured output is asked plainly from then on", async () => {
    const model = new MockLanguageModelV4({
      doGenerate: async (options) => {
        if (options.responseFormat?.type === "json") throw new UnsupportedFunctionalityError({ functionality: "structured outputs" });
        return textResult("```js\nreturn 'plain'\n```");
      },
    });
    const provider = new AISDKProvider({ model });
    const agent = Agent.for("writer", { provider, reuse: false });
    expect((await agent.one()).value).toBe("plain");
    expect((await agent.two()).value).toBe("plain");
    expect(model.doGenerateCalls.map((call) => call.responseFormat?.type ?? "text")).toEqual(["json", "text", "text"]);
  });

  test("options are checked at construction", () => {
    expect(() => new (AISDKProvider as unknown as new () => unknown)()).toThrow("new AISDKProvider() needs { model }");
    expect(() => new AISDKProvider({ model: "gpt-4.1" as never })).toThrow('AISDKProvider option "model" must be an AI SDK language model such as openai("gpt-4.1-mini")');
    expect(() => new AISDKProvider({ model: new MockLanguageModelV4(), temperature: 0 } as never)).toThrow('Unknown option "temperature" for new AISDKProvider(). Valid options: model, structuredOutput, maxRetries, maxConcurrentRequests, name.');
  });
});
