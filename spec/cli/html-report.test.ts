import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { chromium } from "playwright-core";
import { describe, expect, test } from "vitest";
import { runTelemetry } from "../../src/cli/telemetry-command.ts";
import { Agent, OpenAIProvider } from "../../src/index.ts";
import { OpenAITestServer } from "../helpers/openai-server.ts";

const CHROMIUM = "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === "true") throw new Error(`${CHROMIUM} is missing; .ci/run installs Debian's chromium.`);

function sink(): Writable & { text: string } {
  const stream = new Writable({ write: (chunk, _encoding, done) => ((stream.text += String(chunk)), done()) }) as Writable & { text: string };
  stream.text = "";
  return stream;
}

/** A call log with history reads, errors, reuse and token usage, made through the whole stack. */
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
      expect(charts.map((chart) => chart.id)).toEqual(["calls-over-time", "history-reads", "history-operations", "reuse", "latency", "tokens"]);
      for (const chart of charts) {
        expect(chart.points, chart.id).toBeGreaterThan(0);
        expect(chart.bars, chart.id).toBeGreaterThan(0);
        expect(chart.width, chart.id).toBeGreaterThan(100);
      }
      expect(await page.textContent("body")).toContain("served by kept programs");
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});
