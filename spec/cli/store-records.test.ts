/** Store records read back by `improv history`, `improv telemetry --store` and `improv programs --refused`: a record of the wrong shape is skipped and said where it is. */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";
import { Agent, ScriptedProvider, SqliteStore } from "../../src/index.ts";
import type { TelemetryReport } from "../../src/cli/telemetry-report.ts";

const cli = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
const improv = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 60_000 });
const improvAsync = (...args: string[]) =>
  new Promise<{ status: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("close", (status) => resolve({ status, stderr }));
  });

/** Replaces an agent's `index`th record (from 0) in the SQLite file with what `change` makes of it. */
function corrupt(path: string, agent: string, index: number, change: (record: Record<string, unknown>) => unknown): void {
  const db = new DatabaseSync(path);
  try {
    const rows = db.prepare("SELECT position, record FROM improv_records WHERE agent_id = ? ORDER BY position").all(agent) as { position: number; record: string }[];
    const row = rows[index]!;
    db.prepare("UPDATE improv_records SET record = ? WHERE agent_id = ? AND position = ?").run(JSON.stringify(change(JSON.parse(row.record) as Record<string, unknown>)), agent, row.position);
  } finally {
    db.close();
  }
}

test("a record of the wrong shape is skipped and counted where it is; the rest of the report and the history come out", async () => {
  const path = join(mkdtempSync(join(tmpdir(), "improv-records-")), "improv.db");
  const store = new SqliteStore(path);
  const provider = new ScriptedProvider({ programs: { add: "return args[0] + args[1]", "translator.shout": "return args[0].toUpperCase()" } });
  const calc = await Agent.open("calculator", { store, provider, id: "calc-1" });
  await calc.add(1, 2);
  await calc.add(3, 4);
  await calc.add(5, 6);
  await (await Agent.open("translator", { store, provider, id: "tr-1" })).shout("hi");
  await store.close();
  corrupt(path, "calc-1", 0, () => ({}));
  corrupt(path, "calc-1", 1, (record) => ({ ...record, attempts: { n: 1 } }));
  const where = (position: number) => `sqlite:${path}:calc-1:${position} (not a history record)`;

  const telemetry = improv("telemetry", "--store", path, "--json");
  expect(telemetry.stderr).toBe("");
  expect(telemetry.status).toBe(0);
  const report = JSON.parse(telemetry.stdout) as TelemetryReport;
  expect(report.calls).toBe(2);
  expect(report.malformed).toEqual({ count: 2, examples: [where(1), where(2)] });
  expect(improv("telemetry", "--store", path).stdout).toContain(`  malformed lines       2\n    ${where(1)}\n    ${where(2)}\n`);

  const history = improv("history", path, "--agent", "calc-1");
  expect(history.status).toBe(0);
  expect(history.stdout.trim().split("\n")).toHaveLength(3);
  expect(history.stdout).toMatch(/\n[0-9a-f]{8} +user +d0 +add +\[5,6\] +ok \(number\)/);
  expect(history.stderr).toBe(`improv history: skipped ${where(1)}\nimprov history: skipped ${where(2)}\n`);
  const json = improv("history", path, "--agent", "calc-1", "--json");
  expect(json.stdout.trim().split("\n").map((line) => (JSON.parse(line) as { args: unknown }).args)).toEqual([[5, 6]]);
  expect(json.stderr).toBe(history.stderr);

  expect(improv("programs", path, "--refused")).toMatchObject({ status: 0, stderr: `improv programs: skipped sqlite:${path}:calc-1:1 (not a history record)\nimprov programs: skipped sqlite:${path}:calc-1:2 (not a history record)\n` });
});

test("a missing log file is a usage mistake: exit code 2", () => {
  expect(improv("telemetry", "/nonexistent/improv.jsonl")).toMatchObject({ status: 2, stderr: 'improv telemetry: Cannot read "/nonexistent/improv.jsonl": no such file or directory.\n' });
});

test("a usage mistake is exit code 2 for every command: an unknown flag, a missing argument, a flag without its value", async () => {
  const cases = [["history", "--bogus"], ["agents"], ["programs", "x.db", "--show"], ["demo", "--nope"], ["telemetry", "--nope"], ["nonsense"], ["--version"], ["history", "--help"]];
  const results = await Promise.all(cases.map((args) => improvAsync(...args)));
  expect(results.map((result, index) => [cases[index], result.status])).toEqual(cases.map((args) => [args, args.some((arg) => arg.startsWith("--v") || arg === "--help") ? 0 : 2]));
  for (const result of results.slice(0, -2)) expect(result.stderr).toMatch(/^error: /);
}, 120_000);

test("a record whose duration no call could take (1e300 ms, negative) counts as a call of unknown duration; the report and its page come out", async () => {
  const directory = mkdtempSync(join(tmpdir(), "improv-records-"));
  const path = join(directory, "improv.db");
  const store = new SqliteStore(path);
  const calc = await Agent.open("calculator", { store, provider: new ScriptedProvider({ programs: { add: "return args[0] + args[1]" } }), id: "calc-1" });
  await calc.add(1, 2);
  await calc.add(3, 4);
  await calc.add(5, 6);
  await store.close();
  corrupt(path, "calc-1", 0, (record) => ({ ...record, duration_ms: 1e300 }));
  corrupt(path, "calc-1", 1, (record) => ({ ...record, duration_ms: -1e300 }));
  const html = join(directory, "report.html");

  const telemetry = improv("telemetry", "--store", path, "--json", "--html", html);
  expect(telemetry.status).toBe(0);
  const report = JSON.parse(telemetry.stdout) as TelemetryReport;
  expect(report.calls).toBe(3);
  expect(report.slowestCalls).toHaveLength(1);
  expect(report.latency.reduce((sum, bin) => sum + bin.calls, 0)).toBe(1);
  expect(statSync(html).size).toBeGreaterThan(0);
});
