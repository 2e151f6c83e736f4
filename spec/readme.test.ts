import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "vitest";
import { Agent, kw, ScriptedProvider, SqliteStore } from "../src/index.ts";
import { tempLogPath } from "../test-support/logs.ts";

test("the README quick start does what it says", async () => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const log = tempLogPath("improv-readme-");
  // The same programs as the README's example.
  const provider = new ScriptedProvider({
    programs: {
      add: "context.value = (context.value ?? 0) + args[0]; return context.value",
      convert: "return kwargs.to === 'f' ? args[0] * 9 / 5 + 32 : args[0]",
      summary: "return context.conversation_history.map((r) => r.method_name)",
    },
  });
  for (const program of ["context.value = (context.value ?? 0) + args[0]; return context.value", "return context.conversation_history.map((r) => r.method_name)"]) {
    expect(readme).toContain(program);
  }
  const calc = Agent.for<{ value: number }>("calculator", { provider, log });
  calc.value = 5;
  const r = await calc.add(3);
  expect(r.value).toBe(8);
  expect((await calc.convert(100, kw({ from: "c", to: "f" }))).value).toBe(212);
  expect((await calc.summary()).unwrap()).toEqual(["add", "convert"]);
  expect(Agent.history(calc)).toHaveLength(3);
});

test("the README's durable example carries on where an earlier run left off", async () => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  expect(readme).toContain('const calc = await Agent.open<{ value: number }, "add">("calculator", { provider, store, id: "calc-1" });');
  const path = join(mkdtempSync(join(tmpdir(), "improv-readme-")), "improv.db");
  const provider = new ScriptedProvider({ programs: { add: "context.value = (context.value ?? 0) + args[0]; return context.value" } });
  for (const run of [1, 2]) {
    const store = new SqliteStore(path);
    const calc = await Agent.open<{ value: number }, "add">("calculator", { provider, store, id: "calc-1" });
    expect((await calc.add(3)).value).toBe(3 * run);
    expect(Agent.history(calc)).toHaveLength(run);
    await store.close();
  }
});
