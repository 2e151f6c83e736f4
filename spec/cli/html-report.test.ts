import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { chromium } from "playwright-core";
import { describe, expect, test } from "vitest";
import { runTelemetry } from "../../src/cli/telemetry-command.ts";
import { Agent, OpenAIProvider, ScriptedProvider } from "../../src/index.ts";
import { OpenAITestServer } from "../helpers/openai-server.ts";

const CHROMIUM = "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === "true") throw new Error(`${CHROMIUM} is missing; .ci/run installs Debian's chromium.`);

function sink(): Writable & { text: string } {
  const stream = new Writable({ write: (chunk, _encoding, done) => ((stream.text += String(chunk)), done()) }) as Writable & { text: string };
  stream.text = "";
  return stream;
}

/** A tool that answers for any city but "nowhere". */
const weather = {
  description: "Current weather for a city.",
  inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  annotations: { readOnlyHint: true },
  execute: async ({ city }: { city: string }) => {
    if (city === "nowhere") throw new Error("no such city");
    return { city, tempC: 21 };
  },
};

/** A call log with history reads, errors, reuse, token usage and tool calls, made through the whole stack. */
async function realLog(directory: string): Promise<string> {
  const server = await OpenAITestServer.start([
    { kind: "structured", code: "context.total = (context.total ?? 0) + args[0]; return context.total" },
    { kind: "structured", code: "return context.conversation_history.filter((r) => r.outcome_summary.ok).map((r) => r.method_name)" },
    { kind: "structured", code: "throw new RangeError('no ' + args[0])" },
  ]);
  try {
    const log = join(directory, "calls.jsonl");
    const agent = Agent.for("ledger", { provider: new OpenAIProvider({ apiKey: "test", baseURL: server.baseURL }), log });
    for (const amount of [1, 2, 3, 4]) await agent.add(amount);
    await agent.history();
    await agent.refuse("x");
    const desk = Agent.for("desk", {
      provider: new ScriptedProvider({
        programs: {
          "desk.forecast": "return (await tools.weather({ city: args[0] })).tempC",
          "desk.outage": "return await tools.weather({ city: 'nowhere' })",
        },
      }),
      log,
      tools: { weather },
    });
    await desk.forecast("Paris");
    await desk.forecast("Oslo");
    await desk.outage();
    await new Promise((resolve) => setTimeout(resolve, 200));
    return log;
  } finally {
    await server.close();
  }
}

describe("improv telemetry --html", () => {
  test.skipIf(!available)("writes one self-contained page that renders in a real browser with data in every chart and no console errors", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-html-"));
    const log = await realLog(directory);
    const file = join(directory, "report", "report.html");
    const stderr = sink();
    await runTelemetry({ inputs: [log], json: false, html: file, stdout: sink(), stderr });
    expect(stderr.text).toContain(`wrote the HTML report to ${file}`);
    const html = readFileSync(file, "utf8");
    expect(html).not.toMatch(/<script|<link|https?:\/\//);

    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-background-networking"] });
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on("console", (message) => {
        if (message.type() === "error") problems.push(message.text());
      });
      page.on("pageerror", (error) => problems.push(error.message));
      page.on("request", (request) => {
        if (!request.url().startsWith("file:")) problems.push(`network: ${request.url()}`);
      });
      await page.goto(`file://${file}`);
      expect(await page.title()).toBe("improv telemetry");
      const charts = await page.$$eval("figure.chart", (figures) =>
        figures.map((figure) => ({ id: figure.id, points: Number(figure.getAttribute("data-points")), bars: figure.querySelectorAll("svg rect").length, width: figure.querySelector("svg")?.getBoundingClientRect().width ?? 0 })),
      );
      expect(charts.map((chart) => chart.id)).toEqual(["calls-over-time", "history-reads", "history-operations", "reuse", "latency", "tokens", "tool-use", "tool-calls"]);
      for (const chart of charts) {
        expect(chart.points, chart.id).toBeGreaterThan(0);
        expect(chart.bars, chart.id).toBeGreaterThan(0);
        expect(chart.width, chart.id).toBeGreaterThan(100);
      }
      expect(await page.textContent("body")).toContain("served by kept programs");

      expect(await page.isVisible("h2#tools")).toBe(true);
      // Per tool: two calls with no failed tool call, one with.
      expect(await page.$$eval("#tool-use svg rect title", (titles) => titles.map((title) => title.textContent))).toEqual(["no tool call failed: 2", "a tool call failed: 1"]);
      expect(await page.textContent("#tool-use svg")).toContain("weather");
      // Per method: forecast's two tool calls succeeded, outage's one failed.
      expect(await page.$$eval("#tool-calls svg text.label", (labels) => labels.map((label) => label.textContent))).toEqual(["desk.forecast", "desk.outage"]);
      expect(await page.$$eval("#tool-calls svg rect title", (titles) => titles.map((title) => title.textContent))).toEqual(["ok: 2", "failed: 1"]);
      const rows = (id: string) => page.$$eval(`#${id} tbody tr`, (trs) => trs.map((tr) => [...tr.querySelectorAll("th, td")].map((cell) => cell.textContent)));
      // calls, using tools, reach tools, tool calls, failed, tool ms (varies), outcome tool
      const role = await rows("tools-by-role");
      expect(role.map((row) => [...row.slice(0, 6), row[7]])).toEqual([["desk", "3", "100.0%", "100.0%", "3", "1", "1"]]);
      const methods = await rows("tools-by-method");
      expect(methods.map((row) => [...row.slice(0, 6), row[7]])).toEqual([
        ["desk.forecast", "2", "100.0%", "100.0%", "2", "0", "0"],
        ["desk.outage", "1", "100.0%", "100.0%", "1", "1", "1"],
      ]);
      expect(await page.isVisible("#tools-by-method")).toBe(true);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});
