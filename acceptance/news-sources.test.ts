/**
 * End to end over HTTP: the model's replies come from a local OpenAI-compatible server (the
 * official SDK talking to it), a news agent fetches a feed from a local web server under its
 * egress policy, and a second call says where its answer came from, from history alone.
 */
import { afterEach, describe, expect, test } from "vitest";
import { Agent, OpenAIProvider, type HistoryRecord } from "../src/index.ts";
import { OpenAITestServer } from "../test-support/openai-server.ts";
import { json, startWebServer, type WebServer } from "../test-support/web-server.ts";

let model: OpenAITestServer | undefined;
let news: WebServer | undefined;
afterEach(async () => {
  await model?.close();
  await news?.close();
  model = undefined;
  news = undefined;
});

describe("a follow-up names the sources of an answer from history", () => {
  test("a news agent fetches a feed, answers, and then says where that came from", async () => {
    news = await startWebServer({
      "/feed.json": json({ items: [{ title: "Harbour bridge reopens", published: "2026-11-26" }, { title: "Library extends hours", published: "2026-11-25" }] }),
    });
    model = await OpenAITestServer.start([
      // headlines(): what a model writes to read the news
      {
        kind: "structured",
        code: `const response = await fetch("${news.origin}/feed.json");\nif (!response.ok) throw new Error("feed unavailable: " + response.status);\nconst feed = await response.json();\nreturn feed.items.map((item) => item.title);`,
      },
      // sources(): "where did that come from?"
      {
        kind: "structured",
        code: [
          "const last = context.conversation_history.findLast((r) => r.method_name === 'headlines' && r.outcome_summary.ok);",
          "if (!last) return 'I have not read any news yet.';",
          "return { call: last.call_id, sources: last.outcome_summary.sources ?? [] };",
        ].join("\n"),
      },
    ]);
    const provider = new OpenAIProvider({ apiKey: "test", baseURL: model.baseURL, model: "scripted-model" });
    const reader = Agent.for("news", { provider, egress: { allow: [news.origin] } });

    const headlines = await reader.headlines();
    expect(headlines.value).toEqual(["Harbour bridge reopens", "Library extends hours"]);
    const followUp = await reader.sources();
    expect(followUp.value).toEqual({ call: headlines.callId, sources: [`${news.origin}/feed.json`] });

    // The feed was fetched once, by the first call; the second answered from its record alone.
    expect(news.requests.map((request) => request.path)).toEqual(["/feed.json"]);
    const [first, second] = Agent.history(reader) as readonly HistoryRecord[];
    expect(first?.outcome_summary).toMatchObject({ ok: true, sources: [`${news.origin}/feed.json`], source_count: 1 });
    expect(second?.tool_calls).toBeUndefined();
    // The model was told which origins it may fetch, and where sources are kept.
    const system = (model.requests[0]?.body.messages as { role: string; content: string }[])[0]?.content ?? "";
    expect(system).toContain(news.origin);
    expect(system).toContain("outcome_summary.sources");
  });
});
