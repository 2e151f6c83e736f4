/**
 * End to end through the whole stack: OpenAIProvider and the official SDK talking HTTP to a
 * local OpenAI-compatible server with scripted completions, the sandbox process, history.
 */
import { afterEach, describe, expect, test } from "vitest";
import { Agent, OpenAIProvider } from "../src/index.ts";
import { OpenAITestServer } from "../test-support/openai-server.ts";

let server: OpenAITestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("generated code answers a follow-up by reading prior records", () => {
  test("an assistant names the source of its previous answer from history", async () => {
    server = await OpenAITestServer.start([
      // lookup("boiling point of water")
      {
        kind: "structured",
        code: "const facts = { 'boiling point of water': '100 °C at sea level' }; context.sources = { ...context.sources, [args[0]]: 'CRC Handbook' }; return facts[args[0]];",
      },
      // source(): "what was the source of that?"
      {
        kind: "structured",
        code: [
          "const previous = context.conversation_history.findLast((r) => r.method_name === 'lookup' && r.outcome_summary.ok);",
          "if (!previous) return 'nothing looked up yet';",
          "return { topic: previous.args[0], source: context.sources[previous.args[0]], call: previous.call_id };",
        ].join("\n"),
      },
    ]);
    const provider = new OpenAIProvider({ apiKey: "test", baseURL: server.baseURL, model: "scripted-model" });
    const assistant = Agent.for("assistant", { provider });
    const answer = await assistant.lookup("boiling point of water");
    expect(answer.value).toBe("100 °C at sea level");
    const followUp = await assistant.source();
    expect(followUp.value).toEqual({ topic: "boiling point of water", source: "CRC Handbook", call: answer.callId });

    // The second request's prompt carried the bounded history preview, not the records themselves.
    const userPrompt = (server.requests[1]?.body.messages as { role: string; content: string }[])[1]?.content ?? "";
    expect(userPrompt).toContain("History: 1 earlier call(s) in context.conversation_history.");
    expect(userPrompt).toContain(`- ${answer.callId} lookup: ok`);
    expect(Agent.history(assistant).map((r) => r.method_name)).toEqual(["lookup", "source"]);
  });

  test("a calculator summarises what it computed so far, including its failures", async () => {
    server = await OpenAITestServer.start([
      // One add program: the second add(…) runs it again (reuse), with no request.
      { kind: "structured", code: "context.value = (context.value ?? 0) + args[0]; return context.value" },
      { kind: "structured", code: "if (args[0] === 0) throw new RangeError('division by zero'); return context.value / args[0]" },
      {
        kind: "structured",
        code: "const h = context.conversation_history; return { ok: h.filter((r) => r.outcome_summary.ok).map((r) => r.method_name + '(' + r.args.join(',') + ')'), failed: h.filter((r) => !r.outcome_summary.ok).map((r) => r.error_type) }",
      },
    ]);
    const calc = Agent.for("calculator", { provider: new OpenAIProvider({ apiKey: "test", baseURL: server.baseURL }) });
    await calc.add(2);
    await calc.add(5);
    expect((await calc.divide(0)).errorType).toBe("execution");
    const summary = await calc.summary();
    expect(summary.value).toEqual({ ok: ["add(2)", "add(5)"], failed: ["execution"] });
    expect(server.requests).toHaveLength(3);
    expect(Agent.history(calc).map((r) => r.program_source)).toEqual(["generated", "reused", "generated", "generated"]);
  });

  test("a follow-up converts the previous result, read back through content(ref)", async () => {
    server = await OpenAITestServer.start([
      // measure("Oslo")
      { kind: "structured", code: "return { city: args[0], celsius: 21.5, taken: new Date(Date.UTC(2026, 10, 23)) }" },
      // convertLast(): "and in Fahrenheit?"
      {
        kind: "structured",
        code: [
          "const last = context.conversation_history.findLast((r) => r.outcome_summary.ok && r.outcome_summary.content_ref);",
          "const reading = await content(last.outcome_summary.content_ref);",
          "return { city: reading.city, fahrenheit: reading.celsius * 9 / 5 + 32, year: reading.taken.getUTCFullYear(), from: last.call_id };",
        ].join("\n"),
      },
    ]);
    const provider = new OpenAIProvider({ apiKey: "test", baseURL: server.baseURL, model: "scripted-model" });
    const weather = Agent.for("weather", { provider });
    const reading = await weather.measure("Oslo");
    expect(reading.value).toMatchObject({ city: "Oslo", celsius: 21.5 });
    const converted = await weather.convertLast();
    expect(converted.value).toEqual({ city: "Oslo", fahrenheit: 70.7, year: 2026, from: reading.callId });

    const messages = server.requests[1]?.body.messages as { role: string; content: string }[];
    expect(messages[0]?.content).toContain("await content(ref)");
    expect(messages[1]?.content).toContain(`- ${reading.callId} measure: ok (value kept: content_ref ${reading.callId})`);
    const [first, second] = Agent.history(weather);
    expect(first!.outcome_summary.content_ref).toBe(reading.callId);
    expect(second!.outcome_summary.content_ref).toBe(converted.callId);
    expect(await Agent.value(weather, reading.callId)).toMatchObject({ city: "Oslo" });
  });
});
