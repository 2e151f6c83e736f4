/**
 * docs/testing.md's examples, run as written: each `ts` block is a whole vitest file, with
 * `improv` resolved to this checkout's source, run by vitest in a process of its own.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";

const root = new URL("..", import.meta.url).pathname;
const doc = readFileSync(join(root, "docs/testing.md"), "utf8");
const examples = [...doc.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => ({ code: match[1]!, line: doc.slice(0, match.index).split("\n").length }));
// Inside the checkout, so the examples' own imports (vitest) resolve from its node_modules.
const work = mkdtempSync(join(root, ".docs-testing-"));

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("docs/testing.md", () => {
  test("its examples pass as written, each a whole vitest file", async () => {
    expect(examples.length).toBeGreaterThanOrEqual(4);
    const files = examples.map(({ code, line }) => {
      const file = join(work, `example-line-${line}.test.ts`);
      writeFileSync(file, code.replaceAll('from "improv"', `from ${JSON.stringify(join(root, "src/index.ts"))}`));
      return file;
    });
    writeFileSync(join(work, "vitest.config.mjs"), `export default { test: { include: [${JSON.stringify(`${work}/*.test.ts`)}], pool: "forks", testTimeout: 30000 } };\n`);
    const run = await new Promise<{ code: number | null; out: string }>((resolve) => {
      execFile(
        process.execPath,
        [join(root, "node_modules/vitest/vitest.mjs"), "run", "--config", join(work, "vitest.config.mjs"), "--root", root, "--reporter", "verbose"],
        { cwd: root, encoding: "utf8", timeout: 120_000, env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0", NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --no-node-snapshot`.trim() } },
        (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, out: `${stdout}\n${stderr}` }),
      );
    });
    expect(run.out).toMatch(new RegExp(`Test Files +${files.length} passed`));
    expect(run.code, run.out).toBe(0);
  }, 150_000);
});
