import { spawnSync } from "node:child_process";
import { describe, expect, test } from "vitest";

const root = new URL("../..", import.meta.url).pathname;

// The type tests in this folder (expectTypeOf, @ts-expect-error lines) do nothing at run time;
// the compiler is what checks them, so the suite runs it.
describe("the compiler accepts the type tests, and rejects what they expect it to reject", () => {
  test.each(["tsconfig.json", "tsconfig.spec.json"])("tsc -p %s", (project) => {
    const result = spawnSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, "-p", project], { cwd: root, encoding: "utf8", timeout: 120_000 });
    expect(result.stdout + result.stderr).toBe("");
    expect(result.status).toBe(0);
  }, 130_000);
});
