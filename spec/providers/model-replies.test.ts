import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Agent, kw, OpenAIProvider } from "../../src/index.ts";
import { OpenAITestServer, type RoutedReplies } from "../../test-support/openai-server.ts";
import { MODEL_REPLIES } from "./fixtures/model-replies.ts";

// Each case gets a role of its own, so the server can route its reply by the prompt.
const roleOf = (index: number) => `${MODEL_REPLIES[index]!.role}-${index}`;
let server: OpenAITestServer;

beforeAll(async () => {
  const routes: RoutedReplies = {};
  MODEL_REPLIES.forEach((reply, index) => (routes[`${roleOf(index)}.${reply.method}`] = { kind: "content", content: reply.content }));
  server = await OpenAITestServer.start(routes);
});

afterAll(() => server.close());

describe("realistic model replies, through OpenAIProvider over HTTP", () => {
  test.each(MODEL_REPLIES.map((reply, index) => [reply.name, index] as const))("%s", async (_name, index) => {
    const reply = MODEL_REPLIES[index]!;
    const provider = new OpenAIProvider({ apiKey: "test-key", baseURL: server.baseURL, model: "test-model", structuredOutput: false });
    const agent = Agent.for(roleOf(index), { provider, executionTimeoutMs: 2_000 });
    const call = (agent as unknown as Record<string, (...args: unknown[]) => Promise<import("../../src/index.ts").Outcome>>)[reply.method]!;
    const r = await call(...reply.args, ...(reply.kwargs ? [kw({ ...reply.kwargs })] : []));
    if (reply.expect.ok) {
      expect({ errorType: r.errorType, errorMessage: r.errorMessage }).toEqual({ errorType: undefined, errorMessage: undefined });
      expect(r.value).toEqual(reply.expect.value);
    } else {
      expect(r.errorType, r.errorMessage).toBe(reply.expect.errorType);
      if (reply.expect.message) expect(r.errorMessage).toMatch(reply.expect.message);
    }
    expect(Agent.history(agent)).toHaveLength(1);
  });
});
