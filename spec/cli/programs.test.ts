import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";
import { Agent, ScriptedProvider, SqliteStore } from "../../src/index.ts";

const cli = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 60_000 });

test("improv programs lists, shows and forgets a store's kept programs", async () => {
  const path = join(mkdtempSync(join(tmpdir(), "improv-programs-")), "improv.db");
  const store = new SqliteStore(path);
  const provider = new ScriptedProvider({ programs: { add: "return args[0] + args[1]", "translator.shout": "return args[0].toUpperCase()" } });
  const calc = await Agent.open("calculator", { store, provider });
  await calc.add(1, 2);
  await calc.add(3, 4);
  await (await Agent.open("translator", { store, provider })).shout("hi");
  await store.close();

  const listed = run("programs", path);
  expect(listed.status).toBe(0);
  expect(listed.stdout).toMatch(/^key +uses +failures +last used\n/);
  const key = /calculator\.add\(2\)@[0-9a-f]{12}/.exec(listed.stdout)?.[0] as string;
  expect(listed.stdout).toMatch(new RegExp(`${key.replace(/[.()]/g, "\\$&")} +1 +0 +\\d{4}-`));
  expect(listed.stdout).toMatch(/translator\.shout\(1\)@[0-9a-f]{12} +0 +0 +never/);
  expect(run("programs", path, "--role", "translator").stdout).not.toContain("calculator");
  expect(run("programs", path, "--show", key).stdout).toBe("return args[0] + args[1]\n");
  expect((JSON.parse(run("programs", path, "--json").stdout) as { key: string }[]).map((program) => program.key)).toContain(key);
  expect(run("programs", path, "--show", key, "--forget", key)).toMatchObject({ status: 2, stderr: "improv: Give --show or --forget, not both.\n" });
  expect(run("programs", path, "--forget", key, "--role", "translator")).toMatchObject({ status: 2, stderr: `improv: No program kept under ${key} for role translator.\n` });
  expect(run("programs", path, "--show", key, "--role", "translator").status).toBe(2);
  expect(run("programs", path, "--forget", key).stdout).toBe(`Forgot ${key}.\n`);
  expect(run("programs", path, "--show", key)).toMatchObject({ status: 2, stderr: `improv: No program kept under ${key}.\n` });
});
