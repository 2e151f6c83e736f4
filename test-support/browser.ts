/**
 * A real headless browser for tests: Debian's chromium through playwright-core (nothing is
 * downloaded), and pages opened with what went wrong on them collected.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
/** Whether the browser is on this machine; under CI its absence is an error (`.ci/run` installs it). */
export const chromiumAvailable = existsSync(CHROMIUM);
if (!chromiumAvailable && process.env.CI === "true") throw new Error(`${CHROMIUM} is missing; .ci/run installs Debian's chromium.`);

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-background-networking"] });
}

/** Opens `url` in a new page, collecting console errors, page errors, dialogs (dismissed) and any request that leaves the file. */
export async function openCollecting(browser: Browser, url: string): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(message.text());
  });
  page.on("pageerror", (error) => problems.push(error.message));
  page.on("dialog", (dialog) => {
    problems.push(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  page.on("request", (request) => {
    if (!request.url().startsWith("file:")) problems.push(`network: ${request.url()}`);
  });
  await page.goto(url);
  return { page, problems };
}
