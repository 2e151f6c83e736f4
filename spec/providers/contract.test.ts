import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { OpenAIProvider, ScriptedProvider, type Provider } from "../../src/index.ts";
import { OpenAITestServer } from "../helpers/openai-server.ts";

/** One contract every Provider keeps, run against each implementation. */
let server: OpenAITestServer;
beforeAll(async () => {
  server = await OpenAITestServer.start([{ kind: "structured", code: "return 1" }]);
});
afterAll(() => server.close());

const implementations: [string, () => Provider][] = [
  ["ScriptedProvider", () => new ScriptedProvider({ programs: { one: "return 1" } })],
  ["OpenAIProvider", () => new OpenAIProvider({ apiKey: "k", baseURL: server.baseURL, model: "m" })],
];

describe.each(implementations)("%s keeps the Provider contract", (_name, make) => {
  test("generate resolves to { code: string | null, model: string }", async () => {
    const generation = await make().generate({ role: "r", method: "one", attempt: 1, system: "s", user: "u" }, new AbortController().signal);
    expect(generation.code).toBe("return 1");
    expect(typeof generation.model).toBe("string");
  });

  test("generate rejects once its signal is aborted", async () => {
    const controller = new AbortController();
    controller.abort(new Error("aborted by test"));
    await expect(make().generate({ role: "r", method: "one", attempt: 1, system: "s", user: "u" }, controller.signal)).rejects.toBeDefined();
  });
});
