/**
 * The HTML report and its call explorer given hostile logs and stores: call trees with cycles and
 * calls read twice, characters that reorder or hide text, names megabytes long, lines that claim another
 * call's program or id, calls past the page's size budget, markup slipped into the page, and call
 * ids that are not safe in an address. The explorer's parts run in a real browser.
 */
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { storeLines } from "../../src/cli/record-lines.ts";
import { CallCollector, MAX_EXPLORER_CHARS, type ExplorerData } from "../../src/cli/report-calls.ts";
import { explorerSection } from "../../src/cli/report-html/sections-explorer.ts";
import { runTelemetry } from "../../src/cli/telemetry-command.ts";
import type { TelemetryReport } from "../../src/cli/telemetry-report.ts";
import { Agent, ScriptedProvider, SqliteStore } from "../../src/index.ts";
import { chromiumAvailable, launchChromium, openCollecting } from "../../test-support/browser.ts";

function sink(): Writable & { text: string } {
  const stream = new Writable({ write: (chunk, _encoding, done) => ((stream.text += String(chunk)), done()) }) as Writable & { text: string };
  stream.text = "";
  return stream;
}

/** Invisible characters that format text: bidi embeddings, overrides, isolates and marks, zero-width characters, soft hyphens, tags. */
const HIDDEN = /\p{Cf}/u;

const at = (second: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, second)).toISOString();

function writeLog(directory: string, name: string, lines: readonly Record<string, unknown>[]): string {
  const file = join(directory, name);
  mkdirSync(directory, { recursive: true });
  writeFileSync(file, `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`);
  return file;
}

/** The report of `inputs` (and of a store's records, given its file) as an HTML page; returns its path. */
async function htmlReport(inputs: string[], file: string, store?: string): Promise<string> {
  const reading = store === undefined ? undefined : new SqliteStore(store);
  try {
    await runTelemetry({ inputs, json: false, html: file, stdout: sink(), stderr: sink(), ...(reading === undefined ? {} : { lines: { read: () => storeLines(reading) } }) });
  } finally {
    await reading?.close();
  }
  return file;
}

/** The explorer's JSON block in a page. */
function explorerData(html: string): ExplorerData {
  const block = /<script type="application\/json" id="explorer-data">([\s\S]*?)<\/script>/.exec(html);
  return JSON.parse(block![1]!) as ExplorerData;
}

describe("bounds of the report", () => {
  test("names a megabyte long (role, method, error type, call id, program source, scan) are cut where the report keeps them: the page stays small", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-html-names-"));
    const long = "<".repeat(1_000_000);
    const log = writeLog(directory, "calls.jsonl", [
      { timestamp: at(0), call_id: long, role: long, method: long, outcome_status: "error", error_type: long, error_message: "x", duration_ms: 5, program_source: long, history_scan: long, tool_call_count: 1, tool_names: ["fetch"] },
      { timestamp: at(1), call_id: "ok-1", role: "shop", method: "buy", outcome_status: "ok", duration_ms: 2 },
    ]);
    const file = join(directory, "report.html");
    const stdout = sink();
    await runTelemetry({ inputs: [log], json: true, html: file, stdout, stderr: sink() });
    const report = JSON.parse(stdout.text) as TelemetryReport;
    const names = [...Object.keys(report.byRole), ...Object.keys(report.byMethod), ...Object.keys(report.overall.errorTypes), ...Object.keys(report.overall.scans), report.failingCalls[0]!.callId, report.failingCalls[0]!.programSource!];
    expect(Math.max(...names.map((name) => name.length))).toBeLessThanOrEqual(403);
    expect(Object.keys(report.byRole)).toEqual([`${"<".repeat(200)}…`, "shop"]);
    expect(statSync(file).size).toBeLessThan(500_000);
  });

  test("the explorer's calls are kept within a size budget, the oldest left out and the page says so; `<` is escaped only where it could end the block", () => {
    const collector = new CallCollector();
    const lt = (n: number) => "<".repeat(n);
    const calls = 120;
    for (let i = 0; i < calls; i += 1) {
      collector.add(
        {
          timestamp: at(i),
          call_id: `big-${i}`,
          role: "r",
          method: "m",
          outcome_status: "error",
          error_message: lt(1_000),
          args: [lt(2_000)],
          tool_calls: Array.from({ length: 50 }, () => ({ tool: "t", input: lt(2_000), ok: false, error_message: lt(1_000), url: lt(2_000), status: 500 })),
        },
        `calls.jsonl:${i + 1}`,
      );
    }
    const data = collector.data();
    expect(data.calls.length).toBeGreaterThan(10);
    expect(data.calls.length).toBeLessThan(calls);
    expect(data.leftOut).toBe(calls - data.calls.length);
    expect(data.calls.at(-1)?.id).toBe(`big-${calls - 1}`);
    const section = explorerSection(data);
    expect(section.length).toBeLessThan(MAX_EXPLORER_CHARS + 100_000);
    expect(section).toContain(`${data.leftOut} older calls left out`);
    expect(section.split("\\u003c").length).toBeLessThan(10);
    expect(explorerSection({ calls: [], programs: { a: "</script><!-- <<" }, leftOut: 0 })).toContain(String.raw`"\u003c/script>\u003c!-- <<"`);
  });
});

describe.skipIf(!chromiumAvailable)("the call explorer given hostile lines", () => {
  let browser: Browser;
  let directory: string;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), "improv-html-hostile-"));
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  async function open(file: string, hash = ""): Promise<{ page: Page; problems: string[] }> {
    const opened = await openCollecting(browser, `file://${file}${hash}`);
    await opened.page.waitForSelector("#explorer-rows tr");
    return opened;
  }

  /** Opens the first call whose id starts with `id`, through the search and its row. */
  async function choose(page: Page, id: string, row = 0): Promise<void> {
    await page.fill("#explorer-search", id);
    await page.locator("#explorer-rows button.call-id").nth(row).click({ timeout: 10_000 });
    await page.waitForSelector("#call-detail h3", { timeout: 10_000 });
  }

  const treeButtons = (page: Page) => page.$$eval("#call-detail ul.tree button", (buttons) => buttons.map((button) => ({ text: button.textContent ?? "", current: button.classList.contains("current") })));

  test("a call that is its own parent, twice, and two calls each the other's parent: each is drawn once in its tree, at once", async () => {
    const log = writeLog(join(directory, "cycles"), "calls.jsonl", [
      { timestamp: at(0), call_id: "loop", parent_call_id: "loop", role: "r", method: "self", outcome_status: "ok" },
      { timestamp: at(1), call_id: "loop", parent_call_id: "loop", role: "r", method: "self", outcome_status: "ok" },
      { timestamp: at(2), call_id: "cycle-a", parent_call_id: "cycle-b", role: "r", method: "a", outcome_status: "ok" },
      { timestamp: at(3), call_id: "cycle-b", parent_call_id: "cycle-a", role: "r", method: "b", outcome_status: "ok" },
    ]);
    const { page, problems } = await open(await htmlReport([log], join(directory, "cycles.html")));
    try {
      await choose(page, "loop");
      expect(await treeButtons(page)).toEqual([]);
      await choose(page, "cycle-a");
      expect(await treeButtons(page)).toEqual([
        { text: "r.b ok (cycle-b)", current: false },
        { text: "r.a ok (cycle-a)", current: true },
      ]);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  test("a 20-deep delegation read from its log and its store: each call one node of the tree, and its detail says two lines carry its id and where each was read", async () => {
    const calls = join(directory, "deep");
    mkdirSync(calls);
    const log = join(calls, "calls.jsonl");
    const storeFile = join(calls, "agents.db");
    const store = new SqliteStore(storeFile);
    const programs: Record<string, string> = {};
    for (let depth = 0; depth < 20; depth += 1) programs[`d${depth}.go`] = depth === 19 ? "return 'bottom'" : `return (await delegate('d${depth + 1}').go()).value`;
    await (await Agent.open("d0", { provider: new ScriptedProvider({ programs }), store, id: "d0", log, maxDelegationDepth: 25 })).go();
    await store.close();
    const { page, problems } = await open(await htmlReport([log], join(directory, "deep.html"), storeFile));
    try {
      await page.selectOption("#explorer-method", "d19.go");
      expect(await page.$$eval("#explorer-rows tr", (rows) => rows.length)).toBe(2);
      await page.locator("#explorer-rows button.call-id").first().click({ timeout: 10_000 });
      const tree = await treeButtons(page);
      expect(tree).toHaveLength(20);
      expect(tree.filter((node) => node.current).map((node) => node.text)).toEqual([expect.stringMatching(/^d19\.go ok/)]);
      const notice = (await page.textContent("#call-detail .shared")) ?? "";
      expect(notice).toMatch(/^2 lines carry this call id/);
      expect(notice).toContain("they agree on role, method, outcome and caller");
      const sources = await page.$$eval("#call-detail .shared button", (buttons) => buttons.map((button) => button.textContent ?? ""));
      expect(sources.map((source) => source.split(" · read from ")[1]).sort()).toEqual([expect.stringMatching(new RegExp(`^${log}:\\d+$`)), expect.stringMatching(new RegExp(`^sqlite:${storeFile}:d0/.*/d19:1$`))]);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  }, 60_000);

  test("a tree of 2,500 calls draws its first 2,000 and says how many more it has", async () => {
    const lines = [{ timestamp: at(0), call_id: "root", role: "r", method: "fan", outcome_status: "ok" }];
    for (let i = 0; i < 2_500; i += 1) lines.push({ timestamp: at(1), call_id: `leaf-${i}`, parent_call_id: "root", role: "r", method: "leaf", outcome_status: "ok" } as (typeof lines)[number]);
    const log = writeLog(join(directory, "wide"), "calls.jsonl", lines);
    const { page } = await open(await htmlReport([log], join(directory, "wide.html")));
    try {
      await choose(page, "root");
      expect(await treeButtons(page)).toHaveLength(2_000);
      expect(await page.textContent("#call-detail .tree-more")).toBe("… and 501 more calls in this tree, not drawn.");
    } finally {
      await page.close();
    }
  });

  test("characters that reorder or hide text (a Trojan Source program, a message with tag characters, a role) are shown as \\u{…} in the explorer and the tables", async () => {
    const RLO = "\u202e", LRI = "\u2066", PDI = "\u2069";
    const program = [`const mode = args[0];`, `if (mode !== "dry-run${RLO} ${LRI}// real transfers only${PDI} ${LRI}") {`, `  throw new Error("moved${RLO}1000\u{e0041}\u00ad");`, `}`, `return 0;`].join("\n");
    const calls = join(directory, "bidi");
    mkdirSync(calls);
    const log = join(calls, "calls.jsonl");
    await Agent.for(`bank${RLO}`, { provider: new ScriptedProvider({ programs: { [`bank${RLO}.transfer`]: program } }), log })
      .transfer("dry-run")
      .catch(() => undefined);
    const file = await htmlReport([log], join(directory, "bidi.html"));
    expect(readFileSync(file, "utf8")).not.toMatch(HIDDEN);
    const { page, problems } = await open(file);
    try {
      expect(await page.textContent("#errors-by-role")).toContain("bank\\u{202e}");
      await page.locator("#explorer-rows button.call-id").first().click();
      expect(await page.textContent("#call-detail pre.program")).toContain(String.raw`if (mode !== "dry-run\u{202e} \u{2066}// real transfers only\u{2069} \u{2066}") {`);
      expect(await page.textContent("#call-detail")).toContain(String.raw`moved\u{202e}1000\u{e0041}\u{ad}`);
      expect(await page.textContent("#call-detail")).not.toMatch(HIDDEN);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  /** Three calls of a kept program, logged; returns the log's folder and its lines. */
  async function keptProgramCalls(name: string): Promise<{ logs: string; lines: Record<string, unknown>[] }> {
    const logs = join(directory, name);
    mkdirSync(logs);
    const log = join(logs, "calls.jsonl");
    const payments = Agent.for("payments", { provider: new ScriptedProvider({ programs: { charge: "return { charged: args[0] }" } }), log });
    for (const amount of [10, 20, 30]) await payments.charge(amount);
    return { logs, lines: readFileSync(log, "utf8").trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>) };
  }

  test("a line that claims a real program's hash with other text does not change the program real calls show", async () => {
    const { logs, lines } = await keptProgramCalls("spoof");
    const hash = (lines[0]!.attempts as { program_hash: string }[])[0]!.program_hash;
    const spoofed = "await tools.refund({ all: true })";
    // Read first: a folder's files are read in name order.
    writeLog(logs, "0-early.jsonl", [{ timestamp: "2020-01-01T00:00:00.000Z", call_id: "forged", role: "payments", method: "charge", outcome_status: "ok", attempts: [{ n: 1, program_source: "generated", program_hash: hash, program: spoofed }] }]);
    const data = explorerData(readFileSync(await htmlReport([logs], join(directory, "spoof.html")), "utf8"));
    const shown = (id: unknown) => data.calls.filter((call) => call.id === id).flatMap((call) => call.attempts.map((attempt) => (attempt.program === null ? null : data.programs[attempt.program])));
    expect(lines.map((line) => shown(line.call_id))).toEqual([["return { charged: args[0] }"], ["return { charged: args[0] }"], ["return { charged: args[0] }"]]);
    expect(shown("forged")).toEqual([spoofed]);
  });

  test("a line that claims a real call's id: each row opens its own line, and the detail says two lines carry the id and disagree", async () => {
    const { logs, lines } = await keptProgramCalls("hijack");
    const real = lines[2]!;
    writeLog(logs, "forged.jsonl", [{ timestamp: "2020-01-01T00:00:00.000Z", call_id: real.call_id, role: "payments", method: "charge", outcome_status: "error", error_type: "execution", error_message: "card declined", args: [99999], duration_ms: 3 }]);
    const file = await htmlReport([logs], join(directory, "hijack.html"));
    const { page, problems } = await open(file);
    try {
      // In time order: the forged line (2020) first.
      await choose(page, String(real.call_id), 1);
      const facts = (await page.textContent("#call-detail dl")) ?? "";
      expect(facts).toContain("args[30]");
      expect(facts).not.toContain("99999");
      expect(await page.textContent("#call-detail .shared p")).toBe("2 lines carry this call id, and they disagree on outcome: one may claim another call's id.");
      const again = await browser.newPage();
      await again.goto(page.url());
      expect(await again.$$eval("#call-detail .shared button", (buttons) => buttons.length)).toBe(2);
      await again.close();
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  test("the page's policy keeps markup slipped into it inert (no script, handler, <base> or form post), and the explorer still opens calls", async () => {
    const log = writeLog(join(directory, "policy"), "calls.jsonl", [{ timestamp: at(0), call_id: "call-1", role: "r", method: "m", outcome_status: "ok", args: [1] }]);
    const file = await htmlReport([log], join(directory, "policy.html"));
    const injected = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><base href="https://example.invalid/"><form id="leak" action="https://example.invalid/form" method="post"><input name="a" value="b"></form>`;
    writeFileSync(file, readFileSync(file, "utf8").replace("<body>", `<body>${injected}`));
    const { page, problems } = await open(file);
    try {
      expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
      expect(await page.$eval("nav a", (link) => (link as unknown as { href: string }).href)).toMatch(/^file:/);
      await choose(page, "call-1");
      expect(await page.textContent("#call-detail dl")).toContain("args[1]");
      await page.$eval("#leak", (form) => (form as unknown as { submit(): void }).submit());
      await page.waitForTimeout(300);
      expect(page.url()).toMatch(/^file:/);
      expect(problems.filter((problem) => problem.startsWith("network:"))).toEqual([]);
    } finally {
      await page.close();
    }
  });

  test("#call= is percent-encoded: opened again, a call whose id holds % opens itself, and an address that does not decode opens nothing without an error", async () => {
    const log = writeLog(join(directory, "address"), "calls.jsonl", [
      { timestamp: at(0), call_id: "x%41", role: "r", method: "percent", outcome_status: "ok" },
      { timestamp: at(1), call_id: "xA", role: "r", method: "other", outcome_status: "ok" },
    ]);
    const file = await htmlReport([log], join(directory, "address.html"));
    const { page, problems } = await open(file);
    try {
      await choose(page, "x%41");
      expect(page.url()).toMatch(/#call=x%2541$/);
      const again = await browser.newPage();
      await again.goto(page.url());
      expect(await again.getAttribute("#call-detail", "data-call")).toBe("x%41");
      await again.close();
      const broken = await openCollecting(browser, `file://${file}#call=bad%E0%A4%A`);
      await broken.page.waitForSelector("#explorer-rows tr");
      expect(await broken.page.textContent("#call-detail")).toBe("No call bad%E0%A4%A in this report.");
      expect(broken.problems).toEqual([]);
      await broken.page.close();
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
