/**
 * Every code snippet of the README, run as written: each in a process of its own, as a module
 * (a `cjs` block as CommonJS), with `improv` resolved to this checkout's source, the default
 * provider pointed at a local OpenAI-compatible server with scripted replies, and the files a
 * snippet names (an MCP server script) provided. A snippet that throws, or writes an error,
 * fails the test.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { OpenAITestServer } from "../test-support/openai-server.ts";

const root = new URL("..", import.meta.url).pathname;
const readme = readFileSync(join(root, "README.md"), "utf8");
const snippets = [...readme.matchAll(/```(ts|js|mjs|cjs)\n([\s\S]*?)```/g)].map((match, index) => ({ index, kind: match[1]!, code: match[2]!, line: readme.slice(0, match.index).split("\n").length }));

let model: OpenAITestServer;
let work: string;

beforeAll(async () => {
  model = await OpenAITestServer.start({
    "calculator.add": { kind: "structured", code: "context.value = (context.value ?? 0) + args[0]; return context.value" },
    "support.answer": { kind: "structured", code: "return knowledge.find((segment) => segment.name === 'kb').results.map((result) => result.sourceId)" },
    "shopper.price": { kind: "structured", code: "const { items } = await tools.catalogue.search({ query: args[0] }); const p = await tools.convert({ value: items[0].priceUsd, from: 'USD', to: 'EUR' }); return `${items[0].name}: ${p.value.toFixed(2)} ${p.unit}`" },
  });
  // Inside the checkout, so a snippet's own imports (zod) resolve from its node_modules.
  work = mkdtempSync(join(root, ".snippets-"));
});

afterAll(async () => {
  await model.close();
  rmSync(work, { recursive: true, force: true });
});

describe("the README's snippets run as written", () => {
  test("there are snippets to run, each a whole program (its imports included)", () => {
    expect(snippets.length).toBeGreaterThanOrEqual(7);
    for (const snippet of snippets) expect(snippet.code, `README line ${snippet.line}`).toMatch(/from "improv"|require\("improv"\)/);
  });

  test.each(snippets)("the snippet at README line $line", async ({ index, kind, code }) => {
    const source = code.replaceAll('from "improv"', `from ${JSON.stringify(join(root, "src/index.ts"))}`).replaceAll('require("improv")', `require(${JSON.stringify(join(root, "src/index.ts"))})`);
    const file = join(work, `snippet-${index}.${kind === "cjs" ? "cts" : "mts"}`);
    writeFileSync(file, source);
    // The MCP server the tools snippet starts: the demo's catalogue.
    writeFileSync(join(work, "catalogue-server.js"), `import ${JSON.stringify(join(root, "src/cli/demo-catalogue.ts"))};\n`);
    // Not spawnSync: the model's server answers from this process, which must keep running.
    const run = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ["--disable-warning=ExperimentalWarning", file],
        { cwd: work, encoding: "utf8", timeout: 60_000, env: { ...process.env, OPENAI_API_KEY: "test", OPENAI_BASE_URL: model.baseURL, IMPROV_MODEL: "scripted-model", IMPROV_LOG: "", IMPROV_STORE: "", NEWS_TOKEN: "token-for-the-snippet" } },
        (error, stdout, stderr) => resolve({ status: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr }),
      );
    });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    if (kind === "cjs") expect(run.stdout.trim()).toBe("5");
  }, 90_000);
});
