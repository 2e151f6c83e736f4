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
  const shown = run("programs", path, "--show", key).stdout;
  expect(shown).toMatch(
    new RegExp(
      `^// key: ${key.replace(/[.()]/g, "\\$&")}\n// kept: \\d{4}-\\S+, because it reads the call's input, holds none of it in its text, and its result is computed, not prose it wrote\n// uses: 1, failures: 0, last used: \\d{4}-\\S+\nreturn args\\[0\\] \\+ args\\[1\\]\n$`,
    ),
  );
  expect((JSON.parse(run("programs", path, "--json").stdout) as { key: string }[]).map((program) => program.key)).toContain(key);
  expect(run("programs", path, "--show", key, "--forget", key)).toMatchObject({ status: 2, stderr: "improv: Give one of --show, --forget and --refused.\n" });
  expect(run("programs", path, "--forget", key, "--role", "translator")).toMatchObject({ status: 2, stderr: `improv: No program kept under ${key} for role translator.\n` });
  expect(run("programs", path, "--show", key, "--role", "translator").status).toBe(2);
  expect(run("programs", path, "--forget", key).stdout).toBe(`Forgot ${key}.\n`);
  expect(run("programs", path, "--show", key)).toMatchObject({ status: 2, stderr: `improv: No program kept under ${key}.\n` });
}, 120_000);

test("improv programs --refused lists the programs the latest calls did not keep, and why", async () => {
  const path = join(mkdtempSync(join(tmpdir(), "improv-programs-")), "improv.db");
  const store = new SqliteStore(path);
  const provider = new ScriptedProvider({
    programs: {
      argue: "const topic = args[0];\nreturn `Plato would argue that ${topic} is best understood as a harmony of the soul.`;",
      add: "return args[0] + args[1]",
      ask: "return args[0].length",
    },
  });
  const philosopher = await Agent.open("philosopher", { store, provider });
  await philosopher.argue("justice");
  await philosopher.ask("what now?");
  const calc = await Agent.open("calculator", { store, provider });
  await calc.add(1, 2);
  await calc.add(3, 4);
  await store.close();

  const refused = run("programs", path, "--refused");
  expect(refused.status).toBe(0);
  const lines = refused.stdout.trim().split("\n");
  expect(lines[0]).toMatch(/^time +agent +method +call +why not kept$/);
  // Newest first: the free-form ask, then the argument written as prose; the kept add is not listed.
  expect(lines.slice(2)).toEqual([
    expect.stringMatching(/^\d{4}-\S+ +philosopher +philosopher\.ask +[0-9a-f]{8} +ask by convention takes free-form requests \(name it in reuse: \{ only \} to keep its programs\)$/),
    expect.stringMatching(/^\d{4}-\S+ +philosopher +philosopher\.argue +[0-9a-f]{8} +its result is prose it wrote itself \("is best understood as a harmony of the soul"\): an answer, not a method$/),
  ]);
  // Only the latest two calls (the two adds): nothing refused among them.
  expect(run("programs", path, "--refused", "--last", "2").stdout).toBe("No program was refused keeping in the latest 2 calls.\n");
  const json = JSON.parse(run("programs", path, "--refused", "--role", "philosopher", "--json").stdout) as { method: string; program: string }[];
  expect(json.map((entry) => entry.method)).toEqual(["ask", "argue"]);
  expect(json[1]?.program).toContain("Plato would argue");
  expect(run("programs", path, "--refused", "--last", "0")).toMatchObject({ status: 2, stderr: 'improv: --last must be a whole number of calls, 1 or more (not "0").\n' });
}, 120_000);
