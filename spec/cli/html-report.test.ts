import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runTelemetry } from "../../src/cli/telemetry-command.ts";
import { Agent, fromRetrieval, literal, OpenAIProvider, ScriptedProvider } from "../../src/index.ts";
import { chromiumAvailable, launchChromium, openCollecting } from "../../test-support/browser.ts";
import { OpenAITestServer } from "../../test-support/openai-server.ts";
import { readLogLines, tempLogPath } from "../../test-support/logs.ts";

const cli = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

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

/**
 * A call log made through the whole stack: history reads, errors of several types, reuse, a
 * kept program that fails, is dropped and repaired, token usage, tool calls (one failing) and
 * a fetch the egress policy refuses.
 */
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
    // Kept after the first call; fails on a number by its own mistake, is dropped, and the repair works.
    const shouter = Agent.for("shouter", { provider: new ScriptedProvider({ programs: { shout: ["return args[0].toUpperCase()", "return String(args[0]).toUpperCase()"] } }), log, maxReuseFailures: 1 });
    await shouter.shout("hi");
    await shouter.shout(42);
    const news = Agent.for("news", { provider: new ScriptedProvider({ programs: { peek: "return (await fetch('http://169.254.169.254/latest/meta-data/')).status" } }), log, egress: { allow: ["http://127.0.0.1:9"] } });
    await news.peek();
    await new Promise((resolve) => setTimeout(resolve, 200));
    return log;
  } finally {
    await server.close();
  }
}

type Line = Record<string, unknown>;

describe.skipIf(!chromiumAvailable)("improv telemetry --html", () => {
  let browser: Browser;
  let log: string;
  let lines: Line[];
  let directory: string;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), "improv-html-"));
    log = await realLog(directory);
    lines = readLogLines<Line>(log);
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  /** Opens a report in the browser, collecting console errors, page errors and any request that leaves the file. */
  const open = (file: string) => openCollecting(browser, `file://${file}`);

  async function report(name: string, filters: { role?: string; method?: string } = {}): Promise<string> {
    const file = join(directory, name, "report.html");
    const stderr = sink();
    await runTelemetry({ inputs: [log], json: false, html: file, stdout: sink(), stderr, ...filters });
    expect(stderr.text).toContain(`wrote the HTML report to ${file}`);
    return file;
  }

  const rows = (page: Page, id: string) => page.$$eval(`#${id} tbody tr`, (trs) => trs.map((tr) => [...tr.querySelectorAll("th, td")].map((cell) => cell.textContent ?? "")));

  test("one self-contained page that renders in a real browser, every section present and every chart with data, no console errors", async () => {
    const file = await report("all");
    const html = readFileSync(file, "utf8");
    // Nothing to load: no script file, stylesheet, image or font, and a policy that forbids loading any. (URLs appear only as text, in error messages.)
    expect(html).not.toMatch(/<link|<img|<iframe|\ssrc=|url\(|@import/i);
    expect(html).toMatch(/<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-[A-Za-z0-9+/]{43}='; base-uri 'none'; form-action 'none'">/);
    const { page, problems } = await open(file);
    try {
      expect(await page.title()).toBe("improv telemetry");
      const sections = await page.$$eval("section[data-section]", (found) => found.map((section) => section.id));
      expect(sections).toEqual(["summary", "activity", "errors", "durations", "history", "reuse-and-repair", "cost", "tools", "egress", "calls"]);
      for (const id of sections) expect(await page.isVisible(`#${id}`), id).toBe(true);
      // The table of contents reaches every section below the summary.
      expect(await page.$$eval("nav a", (links) => links.map((link) => link.getAttribute("href")))).toEqual(sections.slice(1).map((id) => `#${id}`));
      const charts = await page.$$eval("figure.chart", (figures) =>
        figures.map((figure) => ({ id: figure.id, points: Number(figure.getAttribute("data-points")), bars: figure.querySelectorAll("svg rect").length, width: figure.querySelector("svg")?.getBoundingClientRect().width ?? 0 })),
      );
      expect(charts.map((chart) => chart.id)).toEqual(["calls-over-time", "errors-by-type", "latency", "history-reads", "history-operations", "reuse", "program-sources", "tokens", "tool-use", "tool-calls"]);
      for (const chart of charts) {
        expect(chart.points, chart.id).toBeGreaterThan(0);
        expect(chart.bars, chart.id).toBeGreaterThan(0);
        expect(chart.width, chart.id).toBeGreaterThan(100);
      }
      const summary = Object.fromEntries(await page.$$eval("#summary tr", (trs) => trs.map((tr) => [tr.querySelector("th")?.textContent, tr.querySelector("td")?.textContent])));
      expect(summary).toMatchObject({
        calls: String(lines.length),
        errors: `3 (${(300 / lines.length).toFixed(1)}%)`,
        // ledger.add three times, desk.forecast once
        "served by kept programs": `4 (${((400 / lines.length)).toFixed(1)}%)`,
        "repaired programs that worked": "1",
        "kept programs dropped": "1",
        "tool calls": "4 (2 failed)",
        "calls that fetched": "1",
        "malformed lines": "0",
      });
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  }, 60_000);

  test("what went wrong: failed calls by error type, role and method with the latest messages, and the failed calls by call id", async () => {
    const { page, problems } = await open(await report("errors"));
    try {
      const failed = lines.filter((line) => line.outcome_status !== "ok");
      // refuse: execution; outage: tool (the weather tool threw); peek: tool (the egress policy refused the fetch).
      expect(failed.map((line) => `${line.role}.${line.method} ${line.error_type}`)).toEqual(["ledger.refuse execution", "desk.outage tool", "news.peek tool"]);
      expect(await page.$$eval("#errors-by-type svg text.label", (labels) => labels.map((label) => label.textContent))).toEqual(["tool", "execution"]);
      expect(await page.$$eval("#errors-by-type svg text.value", (values) => values.map((value) => value.textContent))).toEqual(["2", "1"]);
      const byMethod = await rows(page, "errors-by-method");
      const refuse = failed[0]!;
      expect(byMethod.find((row) => row[0] === "ledger.refuse")).toEqual(["ledger.refuse", "1", "1", "100.0%", "execution\u00a01", `RangeError: no x (call ${refuse.call_id})`]);
      expect(byMethod.find((row) => row[0] === "news.peek")?.[5]).toMatch(/^EgressError: fetch http:\/\/169\.254\.169\.254\/latest\/meta-data\/: .+ \(call [0-9a-f-]{36}\)$/);
      // Most failed first, then most calls.
      expect((await rows(page, "errors-by-role")).map((row) => row.slice(0, 5))).toEqual([
        ["ledger", "6", "1", "16.7%", "execution\u00a01"],
        ["desk", "3", "1", "33.3%", "tool\u00a01"],
        ["news", "1", "1", "100.0%", "tool\u00a01"],
      ]);
      // The failed calls themselves, newest first, by their full call ids.
      const calls = await rows(page, "failing-calls");
      expect(calls.map((row) => row[0])).toEqual(failed.map((line) => line.call_id).reverse());
      expect(calls.at(-1)?.slice(2, 5)).toEqual(["ledger.refuse", expect.stringMatching(/ ms$/), "error execution"]);
      expect(calls.at(-1)?.at(-1)).toBe("RangeError: no x");
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  }, 60_000);

  test("durations: the histogram's axes and bin edges are written on the page, and the slowest calls are listed by call id", async () => {
    const { page } = await open(await report("durations"));
    try {
      // Every bin edge under its bar, and round ticks on the calls axis: nothing needs hovering.
      expect(await page.$$eval("#latency svg text.xlabel", (labels) => labels.map((label) => label.textContent))).toEqual([
        "0.2", "0.5", "1", "2", "5", "10", "20", "50", "100", "200", "500", "1 s", "2 s", "5 s", "10 s", "30 s", "longer",
      ]);
      const bounds = [0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000, Infinity];
      const bins = bounds.map((bound, index) => lines.filter((line) => (line.duration_ms as number) <= bound && (line.duration_ms as number) > (bounds[index - 1] ?? -1)).length);
      const ticks = await page.$$eval("#latency svg text.tick", (labels) => labels.map((label) => Number(label.textContent)));
      expect(ticks).toHaveLength(3);
      expect(ticks[0]).toBe(0);
      expect(ticks[2]).toBeGreaterThanOrEqual(Math.max(...bins));
      expect(ticks[2]).toBeLessThanOrEqual(2 * Math.max(...bins));
      expect(await page.isVisible("#latency svg text.xlabel")).toBe(true);
      // Each non-empty bar is labelled with its count, and the counts add up to the calls.
      const counts = await page.$$eval("#latency svg text.value", (values) => values.map((value) => Number(value.textContent)));
      expect(counts).toEqual(bins.filter((calls) => calls > 0));
      expect(await page.$$eval("#calls-over-time svg text.tick", (labels) => labels.length)).toBe(3);

      const slowest = await rows(page, "slowest-calls");
      const expected = [...lines].sort((a, b) => (b.duration_ms as number) - (a.duration_ms as number)).slice(0, 10);
      expect(slowest.map((row) => row[0])).toEqual(expected.map((line) => line.call_id));
    } finally {
      await page.close();
    }
  }, 60_000);

  test("reuse and repair, tools and egress: a dropped kept program and its repair, tool failures, the refused fetch", async () => {
    const { page, problems } = await open(await report("reuse"));
    try {
      const shout = lines.filter((line) => line.method === "shout");
      expect(shout.map((line) => [line.program_source, line.kept_program_dropped, line.outcome_status])).toEqual([["generated", false, "ok"], ["repaired", true, "ok"]]);
      // role.method, calls, reused, repaired, repairs that worked, kept program failed, kept program dropped, new program kept, not kept
      const fates = await rows(page, "reuse-by-method");
      expect(fates.find((row) => row[0] === "shouter.shout")).toEqual(["shouter.shout", "2", "0", "1", "1", "1", "1", "2", "0"]);
      expect(fates.find((row) => row[0] === "ledger.add")).toEqual(["ledger.add", "4", "3", "0", "0", "0", "0", "1", "0"]);
      expect(await page.textContent("#reuse-and-repair .intro")).toBe(
        "1 calls ran a repaired program (1 of them ended ok); 1 kept programs failed by their own mistake, 1 of them dropped after failing in a row; 5 new programs were kept and 0 that worked were not.",
      );
      // Per tool: two calls with no failed tool call, one with; fetch counts as a tool.
      expect(await page.$$eval("#tool-use svg text.label", (labels) => labels.map((label) => label.textContent))).toEqual(["weather", "fetch"]);
      expect(await page.$$eval("#tool-use svg rect title", (titles) => titles.map((title) => title.textContent))).toEqual(["no tool call failed: 2", "a tool call failed: 1", "a tool call failed: 1"]);
      expect(await page.$$eval("#tool-calls svg text.label", (labels) => labels.map((label) => label.textContent))).toEqual(["desk.forecast", "desk.outage", "news.peek"]);
      // calls, using tools, reach tools, tool calls, failed, tool ms (varies), outcome tool
      const methods = await rows(page, "tools-by-method");
      expect(methods.map((row) => [...row.slice(0, 6), row[7]])).toEqual([
        ["desk.forecast", "2", "100.0%", "100.0%", "2", "0", "0"],
        ["desk.outage", "1", "100.0%", "100.0%", "1", "1", "1"],
        ["news.peek", "1", "100.0%", "100.0%", "1", "1", "1"],
      ]);
      // role.method, calls, fetched, with a failed tool call, code reaches fetch
      expect(await rows(page, "egress-by-method")).toEqual([["news.peek", "1", "1", "1", "1"]]);
      expect(await page.textContent("#egress .intro")).toMatch(/^1 calls made egress requests \(tool calls named fetch\), 1 of them with a failed tool call/);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  }, 60_000);

  test("knowledge: a page of calls with knowledge sources has the knowledge section, linked, its chart drawn and its tables filled", async () => {
    const knowledgeLog = tempLogPath("improv-html-knowledge-");
    const passages = [{ sourceId: "refunds.md#1", content: "Refunds take five days.", score: 0.9 }];
    // Passages for a question about refunds, none for any other; down for "boom".
    const kb = { search: async (query: string) => (query.includes("boom") ? Promise.reject(new Error("index offline")) : query.includes("refund") ? passages : []) };
    const support = Agent.for("support", {
      provider: new ScriptedProvider({ programs: { lookup: "return knowledge.length" } }),
      log: knowledgeLog,
      knowledge: [fromRetrieval(kb, { name: "kb", query: (request) => String(request.args[0]) }), literal("Answer briefly.", { name: "policy" })],
    });
    await support.lookup("refund?");
    await support.lookup("shipping?");
    expect((await support.lookup("boom")).errorType).toBe("knowledge");
    const file = join(directory, "knowledge", "report.html");
    await runTelemetry({ inputs: [knowledgeLog], json: false, html: file, stdout: sink(), stderr: sink() });
    const { page, problems } = await open(file);
    try {
      const sections = await page.$$eval("section[data-section]", (found) => found.map((section) => section.id));
      expect(sections.slice(-2)).toEqual(["knowledge", "calls"]);
      expect(await page.isVisible("#knowledge")).toBe(true);
      expect(await page.$$eval("nav a", (links) => links.map((link) => link.getAttribute("href")))).toEqual(sections.slice(1).map((id) => `#${id}`));
      expect(await page.$eval("#knowledge-sources", (figure) => Number(figure.getAttribute("data-points")))).toBe(2);
      expect(await page.$$eval("#knowledge-sources svg text.label", (labels) => labels.map((label) => label.textContent))).toEqual(["kb", "policy"]);
      // source, calls, found nothing, share, failed
      expect(await rows(page, "knowledge-sources-table")).toEqual([
        ["kb", "3", "1", "33.3%", "1"],
        ["policy", "3", "0", "0.0%", "0"],
      ]);
      // role, calls, with knowledge, passages retrieved, per call, time p50 and p95 (they vary), outcome knowledge
      expect((await rows(page, "knowledge-by-role")).map((row) => [...row.slice(0, 5), row[7]])).toEqual([["support", "3", "100.0%", "1", "0.3", "1"]]);
      expect((await rows(page, "knowledge-by-method"))[0]?.[5]).toMatch(/ ms$/);
      expect(await page.textContent("#knowledge .intro")).toMatch(/^3 calls \(100\.0%\) had knowledge; 1 passages were retrieved \(0\.3 per call with knowledge\); gathering took .+; 1 calls ended knowledge/);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  }, 60_000);

  test("the real CLI's --role and --method give a page of those calls only; a role with no calls gives an empty page that says so", async () => {
    const roleFile = join(directory, "role", "desk.html");
    const byRole = spawnSync(process.execPath, [cli, "telemetry", log, "--role", "desk", "--html", roleFile], { encoding: "utf8", timeout: 60_000 });
    expect(byRole.status).toBe(0);
    const methodFile = join(directory, "method", "add.html");
    expect(spawnSync(process.execPath, [cli, "telemetry", log, "--method", "ledger.add", "--html", methodFile], { encoding: "utf8", timeout: 60_000 }).status).toBe(0);
    const noneFile = join(directory, "none", "nobody.html");
    const none = spawnSync(process.execPath, [cli, "telemetry", log, "--role", "nobody", "--html", noneFile], { encoding: "utf8", timeout: 60_000 });
    expect(none.status).toBe(0);
    expect(none.stdout).toContain(`  calls                 0  (${lines.length} left out by --role nobody)\n  no calls matched --role nobody\n`);

    const { page, problems } = await open(roleFile);
    try {
      expect(await page.textContent("p.note")).toContain("Calls matching --role desk.");
      expect(await page.textContent("#summary")).toContain(`calls3 (${lines.length - 3} more left out by --role desk)`);
      expect((await rows(page, "tools-by-method")).map((row) => row[0])).toEqual(["desk.forecast", "desk.outage"]);
      expect((await rows(page, "failing-calls")).map((row) => row[2])).toEqual(["desk.outage"]);
      expect(await page.$$eval("#history-reads svg text.label", (labels) => labels.map((label) => label.textContent))).toEqual(["desk.forecast", "desk.outage"]);
      expect(problems).toEqual([]);
      await page.goto(`file://${methodFile}`);
      expect(await page.$$eval("#reuse svg text.label", (labels) => labels.map((label) => label.textContent))).toEqual(["ledger.add"]);
      await page.goto(`file://${noneFile}`);
      expect(await page.textContent("#no-calls")).toBe("No calls matched --role nobody.");
      expect(await page.$$eval("section[data-section]", (found) => found.length)).toBe(10);
      expect(await rows(page, "failing-calls")).toEqual([["No call failed."]]);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  }, 60_000);
});
