import { readFileSync } from "node:fs";
import { afterEach, describe, expect, test } from "vitest";
import { Agent, extractProgram, OpenAIProvider } from "../../src/index.ts";
import { OpenAITestServer, type ScriptedReply } from "../../test-support/openai-server.ts";
import { readLogLines, tempLogPath } from "../../test-support/logs.ts";
import { withoutSecrets } from "../../src/providers/http-failure.ts";

let server: OpenAITestServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function agentAgainst(replies: ScriptedReply[], options: Record<string, unknown> = {}) {
  server = await OpenAITestServer.start(replies);
  const provider = new OpenAIProvider({ apiKey: "test-key", baseURL: server.baseURL, model: "test-model", maxRetries: 2 });
  return Agent.for("calculator", { provider, ...options });
}

describe("OpenAIProvider over HTTP", () => {
  test("structured output: the code field is the program, and the request asks for a JSON schema", async () => {
    const calc = await agentAgainst([{ kind: "structured", code: "return args[0] * 2" }]);
    const r = await calc.double(21);
    expect(r.value).toBe(42);
    const body = server!.requests[0]!.body;
    expect(body.model).toBe("test-model");
    expect(body.response_format).toMatchObject({ type: "json_schema", json_schema: { name: "program" } });
    expect((body.messages as { role: string }[]).map((m) => m.role)).toEqual(["system", "user"]);
  });

  test("plain text with a fenced code block: the block is the program", async () => {
    const calc = await agentAgainst([{ kind: "content", content: "Here you go:\n```javascript\nreturn 'fenced'\n```\nEnjoy." }]);
    expect((await calc.greet()).value).toBe("fenced");
  });

  test("empty content is an invalid payload, retried, then invalid_code", async () => {
    const calc = await agentAgainst([{ kind: "content", content: "" }], { maxGenerationAttempts: 2 });
    const r = await calc.greet();
    expect(r.errorType).toBe("invalid_code");
    expect(r.errorMessage).toBe("The provider returned no program (attempt 2).");
    expect(server!.requests).toHaveLength(2);
  });

  test("HTTP 429 is retried by the SDK inside one attempt and then succeeds", async () => {
    const calc = await agentAgainst([
      { kind: "status", status: 429, retryAfterMs: 5 },
      { kind: "structured", code: "return 'after 429'" },
    ]);
    const r = await calc.greet();
    expect(r.value).toBe("after 429");
    expect(server!.requests).toHaveLength(2);
  });

  test("HTTP 500 on every try ends as a provider outcome after the SDK's retries", async () => {
    const calc = await agentAgainst([{ kind: "status", status: 500, retryAfterMs: 5 }], { maxGenerationAttempts: 1 });
    const r = await calc.greet();
    expect(r.errorType).toBe("provider");
    expect(r.errorMessage).toMatch(/^The provider failed: The model server failed \(HTTP 500\)/);
    expect(r.retriable).toBe(true);
    expect(server!.requests).toHaveLength(3);
  });

  test.each([401, 403])("HTTP %i (the key refused) is not asked again, and the outcome is not retriable: it says to check the key", async (status) => {
    const calc = await agentAgainst([{ kind: "status", status, body: { error: { message: "Incorrect API key provided", type: "invalid_request_error" } } }], { maxGenerationAttempts: 3 });
    const r = await calc.greet();
    expect(r).toMatchObject({ ok: false, errorType: "provider", retriable: false });
    expect(r.errorMessage).toContain(`refused the API key (HTTP ${status})`);
    expect(r.errorMessage).toContain("Check the key (apiKey / OPENAI_API_KEY)");
    // Neither improv's attempts nor the SDK's retries ask again.
    expect(server!.requests).toHaveLength(1);
    expect(Agent.history(calc).at(-1)?.outcome_summary).toMatchObject({ error_type: "provider", retriable: false });
  });

  test("a key the server echoes back (its own message, or a proxy's echo of the headers) is taken out of the outcome, the record and the log line", async () => {
    const key = "k-live-SECRET-0123456789abcdef";
    const log = tempLogPath("improv-key-echo-");
    server = await OpenAITestServer.start([
      { kind: "status", status: 401, body: { error: { message: `Incorrect API key provided: ${key}. You can find your key at …` } } },
      { kind: "status", status: 502, body: { error: { message: `bad gateway; request headers: authorization: Bearer ${key}, x-api-key: ${key}` } } },
    ]);
    const provider = new OpenAIProvider({ apiKey: key, baseURL: server.baseURL, model: "test-model", maxRetries: 0 });
    const calc = Agent.for("calculator", { provider, log, maxGenerationAttempts: 1, reuse: false });
    for (const status of [401, 502]) {
      const r = await calc.greet();
      expect(r.errorMessage).toContain(`HTTP ${status}`);
      expect(r.errorMessage).toContain("[redacted]");
      expect(r.errorMessage).not.toContain("SECRET");
    }
    expect(JSON.stringify(Agent.history(calc))).not.toContain("SECRET");
    expect(readFileSync(log, "utf8")).not.toContain("SECRET");
  });

  test("a reply past 16 MiB (decoded) is refused as it is read, saying so; a model name is kept to 200 characters everywhere", async () => {
    const log = tempLogPath("improv-big-reply-");
    const huge = JSON.stringify({ id: "x", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: `\`\`\`js\nreturn ${"1+".repeat(9_000_000)}1\n\`\`\`` } }] });
    const longName = "model-" + "n".repeat(100_000);
    server = await OpenAITestServer.start([
      { kind: "raw", body: huge },
      { kind: "raw", body: JSON.stringify({ id: "y", object: "chat.completion", created: 1, model: longName, choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "```js\nreturn 2\n```" } }] }) },
    ]);
    const provider = new OpenAIProvider({ apiKey: "test-key", baseURL: server.baseURL, model: "test-model", maxRetries: 0 });
    const calc = Agent.for("calculator", { provider, log, maxGenerationAttempts: 1, reuse: false });
    const big = await calc.sum();
    expect(big).toMatchObject({ ok: false, errorType: "provider" });
    expect(big.errorMessage).toContain("larger than 16 MiB");
    expect((await calc.two()).value).toBe(2);
    expect(Agent.history(calc).at(-1)?.model?.length).toBeLessThanOrEqual(200);
    expect(String(readLogLines(log).at(-1)?.model).length).toBeLessThanOrEqual(200);
  });

  test("a hung server ends as a timeout after providerTimeoutMs", async () => {
    const calc = await agentAgainst([{ kind: "hang" }], { providerTimeoutMs: 200, maxGenerationAttempts: 1 });
    const started = performance.now();
    const r = await calc.greet();
    expect(r.errorType).toBe("timeout");
    expect(r.errorMessage).toBe("The provider did not answer within providerTimeoutMs (200 ms).");
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  test("with several attempts a hung server holds the call for attempts × providerTimeoutMs at most, each attempt one request", async () => {
    const calc = await agentAgainst([{ kind: "hang" }, { kind: "hang" }], { providerTimeoutMs: 300, maxGenerationAttempts: 2 });
    const started = performance.now();
    const r = await calc.greet();
    const elapsed = performance.now() - started;
    expect(r).toMatchObject({ ok: false, errorType: "timeout", retriable: true });
    expect(server!.requests).toHaveLength(2);
    expect(elapsed).toBeGreaterThanOrEqual(2 * 300 - 20);
    expect(elapsed).toBeLessThan(10_000);
  });

  test("a malformed JSON body is a provider outcome", async () => {
    const calc = await agentAgainst([{ kind: "raw", body: "{not json" }], { maxGenerationAttempts: 1 });
    const r = await calc.greet();
    expect(r.errorType).toBe("provider");
  });

  test("a body that is JSON but not a completion is a provider outcome", async () => {
    const calc = await agentAgainst([{ kind: "raw", body: '{"hello":"world"}' }], { maxGenerationAttempts: 1 });
    const r = await calc.greet();
    expect(r.errorType).toBe("provider");
    expect(r.errorMessage).toContain("does not look like an OpenAI chat completion");
  });

  test("a server that rejects response_format gets plain requests from then on", async () => {
    const calc = await agentAgainst([
      { kind: "status", status: 400, body: { error: { message: "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.", type: "invalid_request_error" } } },
      { kind: "content", content: "```js\nreturn 'plain'\n```" },
    ]);
    expect((await calc.greet()).value).toBe("plain");
    // Another method, so the provider is asked again (greet's program would be reused).
    expect((await calc.wave()).value).toBe("plain");
    const formats = server!.requests.map((request) => request.body.response_format?.constructor === Object);
    expect(formats).toEqual([true, false, false]);
  });

  test("other HTTP 400 errors are provider failures, not a format fallback", async () => {
    const calc = await agentAgainst([{ kind: "status", status: 400, body: { error: { message: "context length exceeded" } } }], { maxGenerationAttempts: 1 });
    expect((await calc.greet()).errorType).toBe("provider");
    expect(server!.requests).toHaveLength(1);
  });

  test("without an API key the constructor says how to provide one", () => {
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      expect(() => new OpenAIProvider()).toThrow("OpenAIProvider has no API key. Pass { apiKey } or set the OPENAI_API_KEY environment variable.");
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
    }
  });

  test("a blank apiKey gets improv's own message, not the SDK's", () => {
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      expect(() => new OpenAIProvider({ apiKey: "  " })).toThrow(
        "OpenAIProvider has no API key (the apiKey given is blank). Pass { apiKey } or set the OPENAI_API_KEY environment variable.",
      );
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
    }
  });

  test("options are validated as Agent.for() validates its own", () => {
    expect(() => new OpenAIProvider({ apiKey: "k", baseUrl: "http://x" } as never)).toThrow(
      'Unknown option "baseUrl" for new OpenAIProvider() (it is spelled "baseURL"). Valid options: apiKey, baseURL, model, maxRetries, name, structuredOutput, maxConcurrentRequests, client.',
    );
    expect(() => new OpenAIProvider({ apiKey: "k", maxRetries: -1 })).toThrow(RangeError);
    expect(() => new OpenAIProvider({ apiKey: "k", baseURL: "not a url" })).toThrow('OpenAIProvider option "baseURL" must be a URL such as http://127.0.0.1:11434/v1, got the string "not a url".');
    expect(() => new OpenAIProvider({ apiKey: 5 } as never)).toThrow('OpenAIProvider option "apiKey" must be a string, got the number 5.');
  });

  test("a server that cannot be reached is named, with the cause", async () => {
    // A port that was free a moment ago: nothing listens there.
    const probe = await OpenAITestServer.start([]);
    const baseURL = probe.baseURL;
    await probe.close();
    const provider = new OpenAIProvider({ apiKey: "k", baseURL, maxRetries: 0 });
    const r = await Agent.for("calculator", { provider, maxGenerationAttempts: 1 }).add(1);
    expect(r.errorType).toBe("provider");
    expect(r.errorMessage).toContain(`The model server at ${baseURL} could not be reached (ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:`);
    expect(r.errorMessage).toContain("Check that it runs and that baseURL / OPENAI_BASE_URL points to it.");
  });

  test("the default provider is configured from OPENAI_API_KEY, OPENAI_BASE_URL and IMPROV_MODEL", async () => {
    server = await OpenAITestServer.start([{ kind: "structured", code: "return 'from env'" }]);
    const saved = { ...process.env };
    Object.assign(process.env, { OPENAI_API_KEY: "env-key", OPENAI_BASE_URL: server.baseURL, IMPROV_MODEL: "env-model" });
    try {
      expect((await Agent.for("greeter").greet()).value).toBe("from env");
      expect(server.requests[0]!.body.model).toBe("env-model");
    } finally {
      for (const name of ["OPENAI_API_KEY", "OPENAI_BASE_URL", "IMPROV_MODEL"]) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    }
  });
});

describe("extractProgram", () => {
  test("reads structured JSON, fenced blocks, bare code and nothing", () => {
    expect(extractProgram('{"code":"return 1"}')).toBe("return 1");
    expect(extractProgram("```js\nreturn 2\n```")).toBe("return 2");
    expect(extractProgram("return 3")).toBe("return 3");
    expect(extractProgram("   ")).toBeNull();
    expect(extractProgram(null)).toBeNull();
    expect(extractProgram('{"code": 5}')).toBeNull();
  });
});

describe("what a server says is written without credentials", () => {
  test.each([
    ["Incorrect API key provided: sk-proj-AbCdEf0123456789xyz.", "Incorrect API key provided: [redacted]."],
    ["headers: authorization: Bearer abc.def-ghi_12345, x-api-key: my-key-9876543210", "headers: authorization: [redacted], x-api-key: [redacted]"],
    ['{"Authorization":"Basic dXNlcjpwYXNzd29yZA=="}', '{"Authorization":"[redacted]"}'],
    ["no key here, just words", "no key here, just words"],
  ])("%s", (said, written) => {
    expect(withoutSecrets(said)).toBe(written);
  });

  test("the key itself, whatever its shape, wherever it is", () => {
    expect(withoutSecrets("got plain-key-material-42 twice: plain-key-material-42", "plain-key-material-42")).toBe("got [redacted] twice: [redacted]");
  });
});
