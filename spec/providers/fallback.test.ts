import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, test } from "vitest";
import { Agent, AnthropicProvider, OpenAIProvider, ProviderError, ScriptedProvider, type Provider } from "../../src/index.ts";
import { OpenAITestServer, type ScriptedReply } from "../../test-support/openai-server.ts";
import { readLogLines, tempLogPath } from "../../test-support/logs.ts";

const servers: OpenAITestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** A server that starts a 5,000-byte reply, sends part of it, and closes the connection. */
async function cuttingServer(): Promise<{ cutting: ReturnType<typeof createServer>; port: number }> {
  const cutting = createServer((request, response) => {
    response.writeHead(200, { "content-type": "application/json", "content-length": "5000" });
    response.write('{"id":"x","choices":[{"message":{"content":"ret');
    setTimeout(() => request.socket.destroy(), 50);
  });
  cutting.listen(0, "127.0.0.1");
  await once(cutting, "listening");
  return { cutting, port: (cutting.address() as AddressInfo).port };
}

async function openai(replies: ScriptedReply[]): Promise<{ server: OpenAITestServer; provider: OpenAIProvider }> {
  const server = await OpenAITestServer.start(replies);
  servers.push(server);
  return { server, provider: new OpenAIProvider({ apiKey: "k", baseURL: server.baseURL, model: "primary-model", maxRetries: 0 }) };
}

async function anthropic(replies: ScriptedReply[]): Promise<{ server: OpenAITestServer; provider: AnthropicProvider }> {
  const server = await OpenAITestServer.start(replies);
  servers.push(server);
  return { server, provider: new AnthropicProvider({ apiKey: "k", baseURL: server.origin, model: "backup-model", maxRetries: 0 }) };
}

const lastLine = (path: string) => readLogLines(path).at(-1)!;

describe("a list of providers", () => {
  test("a server failure (5xx) goes to the next provider; the record and the log line name the one that answered", async () => {
    const primary = await openai([{ kind: "status", status: 503 }]);
    const backup = await anthropic([{ kind: "structured", code: "return 'from backup'" }]);
    const log = tempLogPath("improv-fallback-");
    const agent = Agent.for("writer", { provider: [primary.provider, backup.provider], log });
    const r = await agent.write();
    expect(r.value).toBe("from backup");
    expect(primary.server.requests).toHaveLength(1);
    expect(backup.server.requests).toHaveLength(1);
    expect(Agent.history(agent)[0]).toMatchObject({ provider: "anthropic", model: "backup-model" });
    expect(lastLine(log)).toMatchObject({ provider: "anthropic", model: "backup-model", generation_attempt: 1 });
  });

  test("two providers of one kind, named: the record and the log line say which answered; a bad name is a TypeError", async () => {
    const first = await OpenAITestServer.start([{ kind: "status", status: 503 }]);
    const second = await OpenAITestServer.start([{ kind: "structured", code: "return 'second'" }]);
    servers.push(first, second);
    const log = tempLogPath("improv-fallback-");
    const provider = [first, second].map((server, index) => new OpenAIProvider({ apiKey: "k", baseURL: server.baseURL, model: "m", maxRetries: 0, name: `openai-${index === 0 ? "east" : "west"}` }));
    const agent = Agent.for("writer", { provider, log });
    expect((await agent.write()).value).toBe("second");
    expect(Agent.history(agent)[0]).toMatchObject({ provider: "openai-west" });
    expect(lastLine(log)).toMatchObject({ provider: "openai-west" });
    expect(() => new OpenAIProvider({ apiKey: "k", name: "" })).toThrow('OpenAIProvider option "name" must be a non-empty string');
    expect(() => new AnthropicProvider({ apiKey: "k", name: 7 as never })).toThrow('AnthropicProvider option "name" must be a non-empty string');
    expect(new AnthropicProvider({ apiKey: "k" }).name).toBe("anthropic");
  });

  test("a reply cut off as it was read may have been billed: the call's cost is unknown; a server never reached costs nothing", async () => {
    const { cutting, port } = await cuttingServer();
    const closed = createServer();
    closed.listen(0, "127.0.0.1");
    await once(closed, "listening");
    const refusedPort = (closed.address() as AddressInfo).port;
    closed.close();
    await once(closed, "close");
    const costOf = async (baseURL: string) => {
      const provider = new OpenAIProvider({ apiKey: "k", baseURL, model: "m", maxRetries: 0 });
      const agent = Agent.for("writer", { provider, pricing: { m: { input: 1, output: 1 } }, maxGenerationAttempts: 1, reuse: false });
      const outcome = await agent.write();
      expect(outcome).toMatchObject({ ok: false, errorType: "provider" });
      return Agent.history(agent).at(-1)?.cost_usd;
    };
    try {
      expect(await costOf(`http://127.0.0.1:${port}/v1`)).toBeUndefined();
      expect(await costOf(`http://127.0.0.1:${refusedPort}/v1`)).toBe(0);
    } finally {
      cutting.closeAllConnections();
      cutting.close();
    }
  });

  test("a reply cut off in the middle of its body is a connection failure: the next provider is asked", async () => {
    const { cutting, port } = await cuttingServer();
    try {
      for (const make of [
        () => new OpenAIProvider({ apiKey: "k", baseURL: `http://127.0.0.1:${port}/v1`, model: "m", maxRetries: 0 }),
        () => new AnthropicProvider({ apiKey: "k", baseURL: `http://127.0.0.1:${port}`, model: "m", maxRetries: 0 }),
      ]) {
        const backup = await anthropic([{ kind: "structured", code: "return 'from the backup'" }]);
        const r = await Agent.for("writer", { provider: [make(), backup.provider], maxGenerationAttempts: 1, reuse: false }).write();
        expect(r.value, r.errorMessage).toBe("from the backup");
      }
    } finally {
      cutting.closeAllConnections();
      cutting.close();
    }
  });

  test("a server that cannot be reached goes to the next provider", async () => {
    const primary = await openai([{ kind: "structured", code: "return 'never'" }]);
    await primary.server.close();
    servers.splice(servers.indexOf(primary.server), 1);
    const backup = await anthropic([{ kind: "structured", code: "return 'reached'" }]);
    expect((await Agent.for("writer", { provider: [primary.provider, backup.provider] }).write()).value).toBe("reached");
  });

  test("a 4xx the request caused is not sent to the next provider", async () => {
    const primary = await openai([{ kind: "status", status: 422, body: { error: { message: "bad request body" } } }]);
    const backup = await anthropic([{ kind: "structured", code: "return 'never'" }]);
    const r = await Agent.for("writer", { provider: [primary.provider, backup.provider], maxGenerationAttempts: 1 }).write();
    expect(r).toMatchObject({ ok: false, errorType: "provider" });
    expect(r.errorMessage).toContain("HTTP 422");
    expect(backup.server.requests).toHaveLength(0);
  });

  test("a refused key is not sent to the next provider either, and ends the call: not retriable", async () => {
    const primary = await openai([{ kind: "status", status: 401 }]);
    const backup = await anthropic([{ kind: "structured", code: "return 'never'" }]);
    const r = await Agent.for("writer", { provider: [primary.provider, backup.provider], maxGenerationAttempts: 3 }).write();
    expect(r).toMatchObject({ ok: false, errorType: "provider", retriable: false });
    expect(primary.server.requests).toHaveLength(1);
    expect(backup.server.requests).toHaveLength(0);
  });

  test("a rate limit with a long wait goes to the next provider at once", async () => {
    const primary = await openai([{ kind: "status", status: 429, retryAfterMs: 60_000 }]);
    const backup = await anthropic([{ kind: "structured", code: "return 'no wait'" }]);
    const started = performance.now();
    expect((await Agent.for("writer", { provider: [primary.provider, backup.provider] }).write()).value).toBe("no wait");
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(primary.server.requests).toHaveLength(1);
  });

  test("the SDK's own retries do not sleep out a rate limit: improv's rules do (a long wait goes to the next provider at once)", async () => {
    const limited = await OpenAITestServer.start([{ kind: "status", status: 429, retryAfterMs: 30_000 }]);
    servers.push(limited);
    const primary = new OpenAIProvider({ apiKey: "k", baseURL: limited.baseURL, model: "primary-model" });
    const backup = await anthropic([{ kind: "structured", code: "return 'from the backup'" }]);
    const started = performance.now();
    const r = await Agent.for("writer", { provider: [primary, backup.provider], providerTimeoutMs: 15_000 }).write();
    expect(r.value).toBe("from the backup");
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(limited.requests).toHaveLength(1);
  });

  test("a rate limit with a short wait is waited out at the same provider", async () => {
    const primary = await openai([{ kind: "status", status: 429, retryAfterMs: 300 }, { kind: "structured", code: "return 'after the wait'" }]);
    const backup = await anthropic([{ kind: "structured", code: "return 'never'" }]);
    const log = tempLogPath("improv-fallback-");
    const started = performance.now();
    const r = await Agent.for("writer", { provider: [primary.provider, backup.provider], log }).write();
    expect(r.value).toBe("after the wait");
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(primary.server.requests).toHaveLength(2);
    expect(backup.server.requests).toHaveLength(0);
    // Waiting out a rate limit is not a failed attempt.
    expect(lastLine(log)).toMatchObject({ generation_attempt: 1, attempt_errors: [], provider: "openai" });
  });

  test("the provider option takes a non-empty list of providers only", () => {
    expect(() => Agent.for("writer", { provider: [] })).toThrow('Option "provider" must be an object with a generate(request, signal) method');
    expect(() => Agent.for("writer", { provider: [new ScriptedProvider({ programs: {} }), {} as never] })).toThrow("entry 1 is an object");
  });
});

describe("rate limits and waiting turns", () => {
  test("a rate limit longer than what is left of the call ends it as a provider failure that says so, without waiting", async () => {
    const { provider } = await openai([{ kind: "status", status: 429, retryAfterMs: 120_000 }]);
    const started = performance.now();
    const r = await Agent.for("writer", { provider, maxGenerationAttempts: 1, callTimeoutMs: 20_000 }).write();
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(r).toMatchObject({ ok: false, errorType: "provider", retriable: true });
    expect(r.errorMessage).toContain("is limiting the rate of requests (HTTP 429; it asks to wait 120 s)");
    expect(r.errorMessage).toMatch(/That is longer than the call has left \(\d+ ms of callTimeoutMs\)\. Call again later\.$/);
  });

  test("a provider paused long by a rate limit is passed over at once by later calls while another follows it", async () => {
    const primary = await openai([{ kind: "status", status: 429, retryAfterMs: 31_536_000_000 }, { kind: "structured", code: "return 'primary'" }]);
    const backup = await anthropic([{ kind: "structured", code: "return 'backup'" }, { kind: "structured", code: "return 'backup again'" }]);
    const agent = Agent.for("writer", { provider: [primary.provider, backup.provider], reuse: false, callTimeoutMs: 5_000 });
    expect((await agent.write()).value).toBe("backup");
    expect((await agent.write()).value).toBe("backup again");
    expect(primary.server.requests).toHaveLength(1);
  });

  test("alone, a provider paused longer than the call has left ends each call at once, saying so, however many attempts it has", async () => {
    const { server, provider } = await openai([{ kind: "status", status: 429, retryAfterMs: 31_536_000_000 }, { kind: "structured", code: "return 'never'" }]);
    const agent = Agent.for("writer", { provider, reuse: false, callTimeoutMs: 5_000 });
    for (const _ of [1, 2]) {
      const started = performance.now();
      const r = await agent.write();
      expect(performance.now() - started).toBeLessThan(4_000);
      expect(r).toMatchObject({ ok: false, errorType: "provider", retriable: true });
      expect(r.errorMessage).toContain("longer than the call has left");
    }
    expect(server.requests).toHaveLength(1);
  });

  test("a wait a provider gives that is no number, or past all reason, is read as one it did not give, or as the longest taken", async () => {
    let asked = 0;
    const odd: Provider = {
      name: "odd",
      generate: async () => {
        asked += 1;
        if (asked === 1) throw new ProviderError("slow down", { kind: "rate_limit", retryAfterMs: Number.NaN });
        return { code: "return 'answered'", model: "m" };
      },
    };
    const agent = Agent.for("writer", { provider: odd, reuse: false, callTimeoutMs: 10_000 });
    expect((await agent.write()).value).toBe("answered");
    expect((await agent.write()).value).toBe("answered");
    expect(asked).toBe(3);
  });

  test("a provider sends at most maxConcurrentRequests at once; the other calls wait their turn and all succeed", async () => {
    const server = await OpenAITestServer.start([{ kind: "structured", code: "return args[0]", delayMs: 60 }]);
    servers.push(server);
    const provider = new OpenAIProvider({ apiKey: "k", baseURL: server.baseURL, model: "m", maxConcurrentRequests: 3 });
    const outcomes = await Promise.all(Array.from({ length: 12 }, (_, i) => Agent.for(`role${i}`, { provider, reuse: false }).echo(i)));
    expect(outcomes.map((r) => r.value)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(server.requests).toHaveLength(12);
    expect(server.maxInFlight).toBe(3);
  });

  test("a call whose time runs out while it waits its turn ends timeout, and its turn is not lost by the others", async () => {
    const server = await OpenAITestServer.start([{ kind: "structured", code: "return 1", delayMs: 400 }]);
    servers.push(server);
    const provider = new OpenAIProvider({ apiKey: "k", baseURL: server.baseURL, model: "m", maxConcurrentRequests: 1 });
    const slow = Agent.for("first", { provider }).one();
    const waiting = await Agent.for("second", { provider, callTimeoutMs: 100 }).one();
    expect(waiting).toMatchObject({ ok: false, errorType: "timeout" });
    expect(waiting.errorMessage).toMatch(/^The call took longer than callTimeoutMs \(100 ms\): \d+ ms waiting for the provider/);
    expect((await slow).value).toBe(1);
    expect((await Agent.for("third", { provider }).one()).value).toBe(1);
    expect(server.requests).toHaveLength(2);
  });
});
