/**
 * `node scripts/report-screenshot.ts [out.png] [explorer.png]`: the pictures of the HTML report
 * in docs/observability.md. Runs the offline demo twice in a temporary directory (the second run
 * has kept programs to reuse), then photographs, in headless Chromium, the top of the report it
 * writes (the summary, calls over time, what went wrong) and its call explorer with the failed
 * checkout chosen. CHROMIUM names the browser (default /usr/bin/chromium); nothing is downloaded.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const out = process.argv[2] ?? fileURLToPath(new URL("../docs/images/telemetry-report.png", import.meta.url));
const explorerOut = process.argv[3] ?? fileURLToPath(new URL("../docs/images/call-explorer.png", import.meta.url));
const cli = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const directory = mkdtempSync(join(tmpdir(), "improv-report-"));
// A clean environment: the demo runs offline without a provider's key.
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(OPENAI|ANTHROPIC|IMPROV)_/.test(name)));
try {
  for (let run = 0; run < 2; run += 1) execFileSync(process.execPath, [cli, "demo", "--log", join(directory, "demo.jsonl")], { env, stdio: "ignore" });
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-background-networking"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1140, height: 900 } });
    await page.goto(`file://${join(directory, "report.html")}`);
    // The page is not scrolled, so the section's box is where it sits on the page.
    const bottom = await page.$eval("#errors", (section) => section.getBoundingClientRect().bottom);
    await page.screenshot({ path: out, clip: { x: 0, y: 0, width: 1140, height: Math.ceil(bottom) + 16 }, fullPage: true });
    await page.selectOption("#explorer-method", "shopper.checkout");
    await page.click("#explorer-rows button.call-id");
    await page.locator("#calls").screenshot({ path: explorerOut });
  } finally {
    await browser.close();
  }
  console.log(`wrote ${out} and ${explorerOut}`);
} finally {
  rmSync(directory, { recursive: true, force: true });
}
