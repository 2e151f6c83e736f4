/**
 * The HTML report's call explorer (DESIGN 20), in a real browser (Debian's chromium): every call in
 * order, filters and a search by call id, one call's attempts with their programs, its call tree;
 * hostile text in arguments, programs and messages shown as text, never run; lines from older
 * versions and malformed ones; 10,000 calls from interleaved processes, paged.
 */
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runTelemetry } from "../../src/cli/telemetry-command.ts";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { storeLines } from "../../src/cli/record-lines.ts";
import { Agent, ScriptedProvider, SqliteStore } from "../../src/index.ts";
import { chromiumAvailable, launchChromium, openCollecting } from "../../test-support/browser.ts";


function sink(): Writable & { text: string } {
  const stream = new Writable({ write: (chunk, _encoding, done) => ((stream.text += String(chunk)), done()) }) as Writable & { text: string };
  stream.text = "";
  return stream;
}

const HOSTILE = `</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">`;

/** A log made by real calls: a repaired one, a 20-deep call tree, hostile text everywhere, a 64 KiB program; then an older line and a malformed one. */
async function realLog(directory: string): Promise<string> {
  const log = join(directory, "calls.jsonl");
  const solver = Agent.for("solver", { provider: new ScriptedProvider({ programs: { solve: ["return nope", "return args[0] * 2"] } }), log });
  await solver.solve(21);
  const programs: Record<string, string> = {};
  for (let depth = 0; depth < 20; depth += 1) programs[`d${depth}.go`] = depth === 19 ? "return 'bottom'" : `return (await delegate('d${depth + 1}').go()).value`;
  await Agent.for("d0", { provider: new ScriptedProvider({ programs }), log, maxDelegationDepth: 25 }).go();
  const big = `// ${"x".repeat(64 * 1024)}\nthrow new Error(${JSON.stringify(HOSTILE)})`;
  await Agent.for("hostile", { provider: new ScriptedProvider({ programs: { [`hostile.${"echo"}`]: big } }), log }).echo(HOSTILE, { [HOSTILE]: HOSTILE });
  writeFileSync(log, `${readFileSync(log, "utf8")}${JSON.stringify({ timestamp: "2024-01-01T00:00:00.000Z", call_id: "old-line-1", outcome_status: "ok", role: "legacy", method: "before", code: "return 1", duration_ms: 1 })}\nnot json at all\n`);
  return log;
}

describe.skipIf(!chromiumAvailable)("the call explorer", () => {
  let browser: Browser;
  let directory: string;
  let log: string;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), "improv-explorer-"));
    log = await realLog(directory);
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  async function report(inputs: string[], name: string): Promise<string> {
    const file = join(directory, name);
    await runTelemetry({ inputs, json: false, html: file, stdout: sink(), stderr: sink() });
    return file;
  }

  async function open(file: string): Promise<{ page: Page; problems: string[]; loadMs: number }> {
    const began = performance.now();
    const { page, problems } = await openCollecting(browser, `file://${file}`);
    await page.waitForSelector("#explorer-rows tr");
    return { page, problems, loadMs: performance.now() - began };
  }

  const rowTexts = (page: Page) => page.$$eval("#explorer-rows tr", (rows) => rows.map((row) => [...row.querySelectorAll("th, td")].map((cell) => cell.textContent ?? "")));

  test("every call in the order it ended; choosing the repaired call shows both attempts with their programs and errors", async () => {
    const { page, problems } = await open(await report([log], "real.html"));
    try {
      const lines = readFileSync(log, "utf8").trim().split("\n").filter((line) => line.startsWith("{"));
      const rows = await rowTexts(page);
      expect(rows).toHaveLength(lines.length);
      // The older line (2024) comes first; the others follow in the order they ended.
      expect(rows[0]?.[2]).toBe("legacy.before");
      expect(await page.textContent("#explorer-count")).toBe(`${lines.length} of ${lines.length} calls, page 1 of 1`);
      await page.selectOption("#explorer-method", "solver.solve");
      expect(await rowTexts(page)).toHaveLength(1);
      await page.click("#explorer-rows button.call-id");
      const attempts = await page.$$eval("#call-detail ol.attempts > li", (items) => items.map((item) => ({ n: item.getAttribute("data-attempt"), text: item.querySelector("p")?.textContent, program: item.querySelector("pre")?.textContent })));
      expect(attempts).toEqual([
        { n: "1", text: expect.stringMatching(/^attempt 1 · generated by scripted · 0 tool calls · execution: ReferenceError: nope is not defined/), program: "return nope" },
        { n: "2", text: "attempt 2 · repaired by scripted · 0 tool calls · ok", program: "return args[0] * 2" },
      ]);
      expect(await page.textContent("#call-detail dl")).toContain("args[21]");
      // The page's address names the call: opened again, it shows the same call.
      const address = page.url();
      expect(address).toMatch(/#call=[0-9a-f-]{36}$/);
      const again = await browser.newPage();
      await again.goto(address);
      expect(await again.getAttribute("#call-detail", "data-call")).toBe(address.split("#call=")[1]);
      await again.close();
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  test("filters by role, outcome and time, and a search by call id", async () => {
    const { page } = await open(await report([log], "filters.html"));
    try {
      await page.selectOption("#explorer-role", "hostile");
      expect((await rowTexts(page)).map((row) => row[4])).toEqual(["error execution"]);
      await page.selectOption("#explorer-role", "");
      await page.selectOption("#explorer-outcome", "error");
      expect((await rowTexts(page)).map((row) => row[2])).toEqual(["hostile.echo"]);
      await page.selectOption("#explorer-outcome", "");
      await page.fill("#explorer-to", "2025-01-01T00:00:00");
      expect((await rowTexts(page)).map((row) => row[2])).toEqual(["legacy.before"]);
      await page.fill("#explorer-to", "");
      await page.fill("#explorer-search", "old-line");
      expect((await rowTexts(page)).map((row) => row[0])).toEqual(["old-line"]);
      await page.fill("#explorer-search", "no-such-call");
      expect(await rowTexts(page)).toEqual([]);
      expect(await page.textContent("#explorer-count")).toMatch(/^0 of \d+ calls/);
    } finally {
      await page.close();
    }
  });

  test("a call 20 deep shows its whole call tree, itself marked; an older line without attempts shows its program", async () => {
    const { page } = await open(await report([log], "tree.html"));
    try {
      await page.selectOption("#explorer-method", "d19.go");
      await page.click("#explorer-rows button.call-id");
      const tree = await page.$$eval("#call-detail ul.tree button", (buttons) => buttons.map((button) => ({ text: button.textContent, current: button.classList.contains("current") })));
      expect(tree).toHaveLength(20);
      expect(tree[0]?.text).toMatch(/^d0\.go ok/);
      expect(tree.filter((node) => node.current).map((node) => node.text)).toEqual([expect.stringMatching(/^d19\.go ok/)]);
      expect(await page.$$eval("#call-detail ul.tree ul", (lists) => lists.length)).toBe(19);
      await page.selectOption("#explorer-method", "legacy.before");
      await page.click("#explorer-rows button.call-id");
      expect(await page.textContent("#call-detail pre.program")).toBe("return 1");
    } finally {
      await page.close();
    }
  });

  test("HTML and script in arguments, programs and messages are shown as text and never run; the 64 KiB program is cut with a marker", async () => {
    const file = await report([log], "hostile.html");
    const html = readFileSync(file, "utf8");
    expect(html.split("</script>").length).toBe(3);
    const { page, problems } = await open(file);
    try {
      await page.selectOption("#explorer-role", "hostile");
      await page.click("#explorer-rows button.call-id");
      const detail = (await page.textContent("#call-detail")) ?? "";
      expect(detail).toContain(HOSTILE);
      expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
      expect(await page.$$eval("#call-detail img, #call-detail script", (found) => found.length)).toBe(0);
      const program = (await page.textContent("#call-detail pre.program")) ?? "";
      // Cut already in the log line (as the record cuts it), or by the report.
      expect(program).toMatch(/…\[(?:cut: the program is \d+ characters|truncated \d+ chars)\]$/);
      expect(program.length).toBeLessThan(21_000);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  test("built from a store: each record as its call's line, with its tool calls whole; the CLI's --store and --agent", async () => {
    const path = join(directory, "agents.db");
    const store = new SqliteStore(path);
    const order = { description: "Orders.", inputSchema: { type: "object" }, execute: () => "o-1", revert: () => undefined };
    const provider = new ScriptedProvider({ programs: { buy: "await tools.order({ item: 'kettle' }); throw new Error('card declined')", look: "return 1" } });
    const shop = await Agent.open("shop", { provider, store, id: "shop-1", tools: { order }, onFailure: "revert" });
    await shop.buy();
    await shop.look();
    await store.close();
    const reading = new SqliteStore(path);
    const file = join(directory, "store.html");
    const stdout = sink();
    await runTelemetry({ inputs: [], json: false, html: file, stdout, stderr: sink(), lines: { read: () => storeLines(reading) } });
    await reading.close();
    expect(stdout.text).toMatch(/ calls {17}2\n/);
    const { page, problems } = await open(file);
    try {
      await page.selectOption("#explorer-method", "shop.buy");
      await page.click("#explorer-rows button.call-id");
      expect(await page.$$eval("#call-detail ol.tool-calls li", (items) => items.map((item) => item.textContent))).toEqual(['order ok · reverted · {"item":"kettle"}']);
      expect(await page.textContent("#call-detail dl")).toContain("1 reverted");
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
    const cli = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
    const improv = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 60_000 });
    expect(improv("telemetry", "--store", path, "--agent", "shop-1").stdout).toMatch(/ calls {17}2\n/);
    expect(improv("telemetry", "--store", path, "--agent", "nobody").stdout).toMatch(/ calls {17}0\n/);
    expect(improv("telemetry", "--agent", "shop-1")).toMatchObject({ status: 2, stderr: "improv telemetry: --agent names an agent of the store given with --store.\n" });
    expect(improv("telemetry")).toMatchObject({ status: 2, stderr: "improv telemetry: Name at least one log file or directory, or - for standard input (or a store with --store).\n" });
  });

  test("10,000 calls from four processes, interleaved: in time order, 100 a page; the page's size and load time", async () => {
    const logs = join(directory, "fleet");
    mkdirSync(logs);
    const start = Date.parse("2026-01-01T00:00:00.000Z");
    for (let process = 0; process < 4; process += 1) {
      const lines: string[] = [];
      for (let i = process; i < 10_000; i += 4) {
        lines.push(JSON.stringify({ timestamp: new Date(start + i * 1000).toISOString(), call_id: `call-${String(i).padStart(5, "0")}`, outcome_status: i % 10 === 0 ? "error" : "ok", error_type: i % 10 === 0 ? "execution" : null, role: `user${i % 50}`, method: "answer", args: [i], kwargs: {}, code: `return ${i % 20}`, duration_ms: 1 + (i % 7), attempts: [{ n: 1, program_source: "generated", started_at: "x", completed_at: "x", tool_call_count: 0 }] }));
      }
      writeFileSync(join(logs, `process-${process}.jsonl`), `${lines.join("\n")}\n`);
    }
    const file = await report([logs], "fleet.html");
    const { page, problems, loadMs } = await open(file);
    try {
      const bytes = statSync(file).size;
      console.log(`call explorer, 10,000 calls: page ${(bytes / 1024 / 1024).toFixed(2)} MiB, loaded and first page drawn in ${Math.round(loadMs)} ms`);
      expect(await page.textContent("#explorer-count")).toBe("10000 of 10000 calls, page 1 of 100");
      expect((await rowTexts(page)).map((row) => row[0]).slice(0, 3)).toEqual(["call-000", "call-000", "call-000"]);
      expect(await page.$$eval("#explorer-rows button.call-id", (buttons) => buttons.slice(0, 3).map((button) => button.getAttribute("title")))).toEqual(["call-00000", "call-00001", "call-00002"]);
      await page.click("#explorer-next");
      expect(await page.$eval("#explorer-rows button.call-id", (button) => button.getAttribute("title"))).toBe("call-00100");
      await page.selectOption("#explorer-outcome", "error");
      expect(await page.textContent("#explorer-count")).toBe("1000 of 10000 calls, page 1 of 10");
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
