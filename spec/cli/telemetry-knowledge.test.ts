/**
 * The knowledge part of `improv telemetry`: per source, the calls that had it, found nothing with
 * it or saw it fail; per group, calls with knowledge, passages retrieved and the time gathering
 * took; read from real calls' log lines and from hand-written ones, sane or not.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Writable } from "node:stream";
import { describe, expect, test } from "vitest";
import { renderHtmlReport } from "../../src/cli/report-html/page.ts";
import { runTelemetry, type TelemetryCommandOptions } from "../../src/cli/telemetry-command.ts";
import { Agent, fromRetrieval, literal, ScriptedProvider, type KnowledgeResult, type Retriever } from "../../src/index.ts";
import { readLogLines, tempLogPath } from "../../test-support/logs.ts";

const cli = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
const improv = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 60_000 });

function sink(): Writable & { text: string } {
  const stream = new Writable({ write: (chunk, _encoding, done) => ((stream.text += String(chunk)), done()) }) as Writable & { text: string };
  stream.text = "";
  return stream;
}

async function run(options: Partial<TelemetryCommandOptions> & { inputs: string[] }) {
  const stdout = sink();
  const report = await runTelemetry({ json: false, stdout, stderr: sink(), ...options });
  return { report, text: stdout.text };
}

/** Writes `lines` (objects, or raw text) to a fresh JSONL file, returning its path. */
function logOf(lines: readonly (Record<string, unknown> | string)[]): string {
  const path = tempLogPath("improv-telemetry-knowledge-");
  writeFileSync(path, `${lines.map((line) => (typeof line === "string" ? line : JSON.stringify(line))).join("\n")}\n`);
  return path;
}

let id = 0;
/** A call line; `fields` adds or overrides. */
const call = (fields: Record<string, unknown> = {}) => ({ timestamp: "2025-01-01T00:00:00.000Z", call_id: `c${(id += 1)}`, outcome_status: "ok", error_type: null, role: "support", method: "answer", ...fields });
/** A call line with knowledge fields as improv writes them. */
const withKnowledge = (sources: unknown, fields: Record<string, unknown> = {}) => call({ knowledge_sources: sources, knowledge_empty: [], knowledge_failed: [], retrieved_count: 0, knowledge_ms: 1, ...fields });

/** The nearest-rank percentile of `values`. */
const percentile = (values: readonly number[], q: number) => [...values].sort((a, b) => a - b)[Math.max(1, Math.ceil(q * values.length)) - 1];

/** A retriever over fixed passages: those sharing a word with the query; it throws when asked for "boom". */
function wordRetriever(passages: Record<string, string>): Retriever {
  return {
    async search(query, { topK }) {
      if (query.includes("boom")) throw new Error("index offline");
      const words = new Set(query.toLowerCase().split(/\W+/).filter(Boolean));
      const found: KnowledgeResult[] = Object.entries(passages)
        .map(([sourceId, content]) => ({ sourceId, content, score: content.toLowerCase().split(/\W+/).filter((word) => words.has(word)).length / Math.max(1, words.size) }))
        .filter((result) => result.score > 0);
      return found.sort((a, b) => b.score - a.score).slice(0, topK);
    },
  };
}

const PASSAGES = {
  "refunds.md#1": "Refunds take five days to reach the card.",
  "shipping.md#1": "Shipping takes two days inside the country.",
};

describe("improv telemetry: knowledge", () => {
  test("the report of real calls counts each source: calls that had it, found nothing with it, saw it fail; passages, time and calls ended knowledge", async () => {
    const log = tempLogPath("improv-telemetry-knowledge-");
    const provider = new ScriptedProvider({ programs: { lookup: "return knowledge.map((segment) => segment.name)", add: "return args[0] + 1", summarize: "return knowledge.length" } });
    const question = (request: { args: readonly unknown[] }) => String(request.args[0]);
    const support = Agent.for("support", { provider, log, knowledge: [fromRetrieval(wordRetriever(PASSAGES), { name: "kb", query: question, topK: 2 }), literal("Answer briefly.", { name: "policy" })] });
    const helper = Agent.for("helper", {
      provider,
      log,
      knowledge: [fromRetrieval({ search: async () => Promise.reject(new Error("archive down")) }, { name: "archive", query: "anything", optional: true }), literal("Be kind.", { name: "policy" })],
    });
    const plain = Agent.for("plain", { provider, log });
    expect((await support.lookup("how long do refunds and shipping take")).value).toEqual(["kb", "policy"]);
    expect((await support.lookup("refunds please")).value).toEqual(["kb", "policy"]); // a kept program: knowledge is gathered still
    expect((await support.lookup("nothing matches this")).value).toEqual(["kb", "policy"]);
    expect(await support.lookup("boom")).toMatchObject({ ok: false, errorType: "knowledge" });
    expect((await helper.summarize()).value).toBe(1); // the optional source failed and was left out
    expect((await plain.add(1)).value).toBe(2);

    const lines = readLogLines(log);
    expect(lines.map((line) => [line.method, line.knowledge_sources, line.knowledge_empty, line.knowledge_failed, line.retrieved_count])).toEqual([
      ["lookup", ["kb", "policy"], [], [], 2],
      ["lookup", ["kb", "policy"], [], [], 1],
      ["lookup", ["kb", "policy"], ["kb"], [], 0],
      ["lookup", ["kb", "policy"], [], ["kb"], 0],
      ["summarize", ["archive", "policy"], [], ["archive"], 0],
      ["add", [], [], [], 0],
    ]);
    const times = lines.slice(0, 5).map((line) => line.knowledge_ms as number);

    const { report, text } = await run({ inputs: [log], json: true });
    expect(report.overall.knowledge).toEqual({
      callsWithKnowledge: 5,
      retrieved: 3,
      retrievedPerCall: 0.6,
      msP50: percentile(times, 0.5),
      msP95: percentile(times, 0.95),
      endedByKnowledge: 1,
      sources: {
        kb: { calls: 4, empty: 1, emptyShare: 0.25, failed: 1 },
        policy: { calls: 5, empty: 0, emptyShare: 0, failed: 0 },
        archive: { calls: 1, empty: 0, emptyShare: 0, failed: 1 },
      },
    });
    expect(report.overall.errorTypes).toEqual({ knowledge: 1 });
    expect(report.byRole.support?.knowledge).toMatchObject({ callsWithKnowledge: 4, retrieved: 3, retrievedPerCall: 0.75, endedByKnowledge: 1, sources: { kb: { calls: 4, empty: 1, failed: 1 }, policy: { calls: 4 } } });
    expect(report.byRole.helper?.knowledge).toMatchObject({ callsWithKnowledge: 1, endedByKnowledge: 0, sources: { archive: { calls: 1, failed: 1 }, policy: { calls: 1 } } });
    expect(report.byMethod["plain.add"]?.knowledge).toEqual({ callsWithKnowledge: 0, retrieved: 0, retrievedPerCall: 0, msP50: null, msP95: null, endedByKnowledge: 0, sources: {} });
    // --json prints exactly the report.
    expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(report)));

    // The real command line's text report.
    const result = improv("telemetry", log);
    expect(result.status).toBe(0);
    const section = result.stdout.slice(result.stdout.indexOf("\nknowledge\n"));
    expect(section.startsWith("\nknowledge\n  calls with knowledge  5  (83.3% of calls)\n  passages retrieved    3  (0.6 per call with knowledge)\n")).toBe(true);
    expect(section).toMatch(/\n {2}knowledge time {8}p50 \d+\.\d+ ms, p95 \d+\.\d+ ms\n/);
    expect(section).toContain("\n  outcome knowledge     1  (calls ended by a failed source that is not optional)\n");
    // calls, with knowledge, passages, per call, p50 ms, p95 ms, outcome knowledge
    expect(section).toMatch(/\nsupport +4 +100\.0% +3 +0\.8 +\d+\.\d+ +\d+\.\d+ +1\nhelper +1 +100\.0% +0 +0\.0 +\d+\.\d+ +\d+\.\d+ +0\n\n/);
    expect(section).not.toMatch(/\nplain /);
    // source, calls, found nothing, share, failed: most used first
    expect(section).toMatch(/\nsource +calls +found nothing +share +failed\npolicy +5 +0 +0\.0% +0\nkb +4 +1 +25\.0% +1\narchive +1 +0 +0\.0% +1\n/);
  });

  test("lines with and without knowledge fields: older lines and calls without sources count as no knowledge, and the figures are exact", async () => {
    const log = logOf([
      withKnowledge(["kb", "policy"], { retrieved_count: 4, knowledge_ms: 2 }),
      withKnowledge(["kb", "policy"], { knowledge_empty: ["kb"], knowledge_ms: 8 }),
      withKnowledge(["kb"], { method: "lookup", retrieved_count: 5, knowledge_ms: 4 }),
      withKnowledge(["kb"], { method: "lookup", outcome_status: "error", error_type: "knowledge", knowledge_failed: ["kb"], knowledge_ms: 16 }),
      withKnowledge(["kb"], { role: "other", retrieved_count: 1, knowledge_ms: 1 }),
      // Written by an improv without knowledge, and by one with it for an agent without sources.
      call({ role: "old" }),
      call({ role: "old", knowledge_sources: [], knowledge_empty: [], knowledge_failed: [], retrieved_count: 0, knowledge_ms: 0 }),
    ]);
    const { report } = await run({ inputs: [log], json: true });
    expect(report.calls).toBe(7);
    expect(report.overall.knowledge).toEqual({
      callsWithKnowledge: 5,
      retrieved: 10,
      retrievedPerCall: 2,
      msP50: 4,
      msP95: 16,
      endedByKnowledge: 1,
      sources: { kb: { calls: 5, empty: 1, emptyShare: 0.2, failed: 1 }, policy: { calls: 2, empty: 0, emptyShare: 0, failed: 0 } },
    });
    expect(report.byMethod["support.answer"]?.knowledge).toMatchObject({ callsWithKnowledge: 2, retrieved: 4, retrievedPerCall: 2, msP50: 2, msP95: 8 });
    expect(report.byMethod["support.lookup"]?.knowledge).toMatchObject({ callsWithKnowledge: 2, retrieved: 5, msP50: 4, msP95: 16, endedByKnowledge: 1, sources: { kb: { calls: 2, empty: 0, emptyShare: 0, failed: 1 } } });
    expect(report.byRole.old?.knowledge).toEqual({ callsWithKnowledge: 0, retrieved: 0, retrievedPerCall: 0, msP50: null, msP95: null, endedByKnowledge: 0, sources: {} });

    const { text } = await run({ inputs: [log] });
    expect(text).toContain("\nknowledge\n  calls with knowledge  5  (71.4% of calls)\n  passages retrieved    10  (2.0 per call with knowledge)\n  knowledge time        p50 4.00 ms, p95 16.0 ms\n  outcome knowledge     1  (");
    expect(text).toMatch(/\nknowledge by role +calls +with knowledge +passages +per call +p50 ms +p95 ms +outcome knowledge\nsupport +4 +100\.0% +9 +2\.3 +4\.00 +16\.0 +1\nother +1 +100\.0% +1 +1\.0 +1\.00 +1\.00 +0\n\n/);
    expect(text).toMatch(/\nsupport\.answer +2 +100\.0% +4 +2\.0 +2\.00 +8\.00 +0\n/);
    expect(text).toMatch(/\nkb +5 +1 +20\.0% +1\npolicy +2 +0 +0\.0% +0\n/);
  });

  test("without any knowledge the text and the page leave the section out, and --json carries it empty", async () => {
    const log = logOf([call(), call({ role: "old", knowledge_sources: [], knowledge_ms: 0 })]);
    const { report, text } = await run({ inputs: [log], json: true });
    const empty = { callsWithKnowledge: 0, retrieved: 0, retrievedPerCall: 0, msP50: null, msP95: null, endedByKnowledge: 0, sources: {} };
    const printed = JSON.parse(text) as { overall: { knowledge: unknown }; byRole: Record<string, { knowledge: unknown }> };
    expect(printed.overall.knowledge).toEqual(empty);
    expect(printed.byRole.old?.knowledge).toEqual(empty);
    expect(report.overall.knowledge).toEqual(empty);
    const readable = await run({ inputs: [log] });
    expect(readable.text).not.toMatch(/^knowledge/m);
    expect(readable.text.endsWith("\n\ntools                   no tool calls, and no program reaches tools\n")).toBe(true);
    const html = renderHtmlReport(report);
    expect(html).not.toContain('id="knowledge"');
    expect(html).not.toContain('href="#knowledge"');
    expect(html).not.toContain("calls with knowledge");
    // An empty log too.
    expect((await run({ inputs: [logOf([])], json: true })).report.overall.knowledge).toEqual(empty);
  });

  test("malformed knowledge fields are skipped, never fatal, and do not skew the figures", async () => {
    const many = Array.from({ length: 1_000 }, (_, index) => `s${index}`);
    const log = logOf([
      withKnowledge(["kb"], { retrieved_count: 2, knowledge_ms: 3 }),
      withKnowledge("kb", { retrieved_count: 7, knowledge_ms: 9 }), // a string, not a list: no knowledge
      call({ knowledge_sources: { kb: true }, retrieved_count: 7 }),
      withKnowledge(["kb"], { retrieved_count: -4, knowledge_ms: -1 }),
      withKnowledge(["kb"], { retrieved_count: 1.5, knowledge_ms: "7" }),
      withKnowledge(["kb"], { retrieved_count: 1e15, knowledge_ms: 1e300 }),
      withKnowledge(["kb"], { retrieved_count: "3", knowledge_ms: null }),
      withKnowledge(["kb"], { knowledge_empty: "kb", knowledge_failed: { kb: 1 } }),
      withKnowledge(["kb"], { knowledge_empty: ["elsewhere"], knowledge_failed: ["not-a-source-here", 42] }),
      withKnowledge([42, null, { name: "x" }, "", "no spaces", "<b>", "__proto__", "x".repeat(65), "(other)", "kb", "kb"]),
      withKnowledge(many.slice(0, 200)),
      '{"call_id":"broken","outcome_status":"ok","knowledge_sources":["kb"',
    ]);
    const { report, text } = await run({ inputs: [log], json: true });
    expect(report.calls).toBe(11);
    expect(report.malformed.count).toBe(1);
    const { knowledge } = report.overall;
    // Calls whose sources are a list with a sane name: all but the string and the object.
    expect(knowledge.callsWithKnowledge).toBe(9);
    // Only the sane counts (2 of the first line; the default 0s) and the sane times (3, and the default 1s).
    expect(knowledge.retrieved).toBe(2);
    expect(knowledge.msP95).toBe(3);
    expect(knowledge.sources.kb).toEqual({ calls: 8, empty: 0, emptyShare: 0, failed: 0 });
    expect(knowledge.sources["(other)"]).toEqual({ calls: 1, empty: 0, emptyShare: 0, failed: 0 });
    // kb, the first 49 names of the long list (of its first 100 read), and the rest under (other).
    expect(Object.keys(knowledge.sources)).toHaveLength(51);
    expect(knowledge.sources.s48).toBeDefined();
    expect(knowledge.sources.s49).toBeUndefined();
    expect(Object.getPrototypeOf(knowledge.sources)).toBe(Object.prototype);
    expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(report)));
  });

  test("source names are bounded: each group keeps 50, the others under (other); the text lists 15 and the page 20", async () => {
    const lines = Array.from({ length: 60 }, (_, index) => withKnowledge([`source${String(index).padStart(2, "0")}`, "shared"], { knowledge_empty: index % 2 === 0 ? [`source${String(index).padStart(2, "0")}`] : [] }));
    const { report } = await run({ inputs: [logOf(lines)], json: true });
    const { sources } = report.overall.knowledge;
    expect(Object.keys(sources)).toHaveLength(51);
    expect(sources.shared).toEqual({ calls: 60, empty: 0, emptyShare: 0, failed: 0 });
    // source49 … source59 (the first 49 and shared fill the list): 11 calls, 5 of them empty.
    expect(sources["(other)"]).toEqual({ calls: 11, empty: 5, emptyShare: 5 / 11, failed: 0 });
    const { text } = await run({ inputs: [logOf(lines)] });
    expect(text).toMatch(/\nsource +calls +found nothing +share +failed\nshared +60 +0 +0\.0% +0\n\(other\) +11 +5 +45\.5% +0\n/);
    expect(text).toContain("\n… and 36 more sources\n");
    const html = renderHtmlReport(report);
    expect(html).toContain('<table class="data" id="knowledge-sources-table" data-rows="20"><caption>Knowledge sources (the 20 most used of 51)</caption>');
  });

  test("past 2,048 calls a group's percentiles come from buckets, within 1% of the exact ones", async () => {
    const values = Array.from({ length: 5_000 }, (_, index) => ((index * 7_919) % 5_000) + 1);
    const { report } = await run({ inputs: [logOf(values.map((ms) => withKnowledge(["kb"], { knowledge_ms: ms })))], json: true });
    const { msP50, msP95 } = report.overall.knowledge;
    expect(Math.abs((msP50 as number) / 2_500 - 1)).toBeLessThanOrEqual(0.01);
    expect(Math.abs((msP95 as number) / 4_750 - 1)).toBeLessThanOrEqual(0.01);
  });

  test("the HTML page has the knowledge section, linked from the table of contents, with its chart and tables", async () => {
    const log = logOf([
      withKnowledge(["kb", "policy"], { retrieved_count: 3, knowledge_ms: 2 }),
      withKnowledge(["kb", "policy"], { knowledge_empty: ["kb"], knowledge_ms: 0.5 }),
      withKnowledge(["kb", "policy"], { method: "lookup", outcome_status: "error", error_type: "knowledge", knowledge_failed: ["kb"], knowledge_ms: 40 }),
      call({ role: "plain" }),
    ]);
    const file = tempLogPath("improv-telemetry-knowledge-", "report.html");
    const result = improv("telemetry", log, "--html", file);
    expect(result.status).toBe(0);
    const html = readFileSync(file, "utf8");
    expect(html).toContain('<a href="#knowledge">knowledge</a><a href="#calls">calls</a></nav>');
    expect(html).toContain('<section id="knowledge" data-section="knowledge"><h2>Knowledge</h2>');
    expect(html).toContain("3 calls (75.0%) had knowledge; 3 passages were retrieved (1.0 per call with knowledge); gathering took 2.00 ms at the median and 40.0 ms at the 95th percentile; 1 calls ended knowledge");
    expect(html).toContain('<tr><th scope="row">calls with knowledge</th><td>3 (75.0%)</td></tr>');
    expect(html).toMatch(/<figure class="chart" id="knowledge-sources" data-chart="knowledge-sources" data-points="2">/);
    expect(html).toContain('<tr><th scope="row">kb</th><td class="n">3</td><td class="n">1</td><td class="n">33.3%</td><td class="n">1</td></tr>');
    expect(html).toContain('<tr><th scope="row">support.lookup</th><td class="n">1</td><td class="n">100.0%</td><td class="n">0</td><td class="n">0.0</td><td class="n">40.0 ms</td><td class="n">40.0 ms</td><td class="n">1</td></tr>');
    expect(html).not.toMatch(/<th scope="row">plain/);
  });
});
