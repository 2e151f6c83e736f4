import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

// Keeps the benchmark code from rotting: the quick mode runs every figure on small inputs.
// It asserts that each figure is produced, not how fast anything is.
test("npm run bench -- --quick prints every figure with its baseline and writes its JSON", async () => {
  const root = fileURLToPath(new URL("../", import.meta.url));
  const out = join(mkdtempSync(join(tmpdir(), "improv-bench-")), "quick.json");
  const child = spawn(process.execPath, ["bench/run.ts", "--quick", "--out", out], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  expect(code, output).toBe(0);
  for (const heading of ["1. One dynamic call", "2. Growth with history", "3. Prompt growth", "4. Memory", "5. Agent creation", "6. Telemetry", "7. Stores", "8. Program reuse", "9. Sandbox pool", "10. Follow-ups", "11. Tracing", "12. Tool calls", "13. fetch", "14. stable prompt prefix", "15. Many agents", "16. Knowledge", "Targets"]) {
    expect(output).toContain(heading);
  }
  expect(output).toMatch(/\(a\) isolated-vm evalClosure, persistent context +p50 +\d+ µs/);
  expect(output).toMatch(/\(b\) node:vm, same program +p50 +\d+ µs/);
  expect(output).toMatch(/\(c\) child-process round trip, same transport +p50 +\d+ µs/);
  const results = JSON.parse(readFileSync(out, "utf8")) as Record<string, any>;
  expect(results.mode).toBe("quick");
  expect(results.call.logOff.count).toBeGreaterThan(0);
  expect(results.growth.map((g: { records: number }) => g.records)).toEqual([1, 10_000]);
  expect(results.targets).toHaveLength(results.stores.postgresStatements === undefined ? 27 : 29);
  expect(output).toMatch(/with knowledge, memory retriever, exact +p50 +\d+ µs/);
  expect(output).toMatch(/with knowledge, SQLite retriever, HNSW +p50 +\d+ µs/);
  expect(output).toMatch(/HNSW recall of the exact top 5: \d+\.\d% \(these passages\), dense 384-d vectors in 200 topics \d+\.\d% asked on a topic/);
  expect(output).toMatch(/SQLite retriever, +1,000 passages: search p50 +\d+ µs exact, +\d+ µs HNSW/);
  expect(output).toMatch(/pgvector retriever \(PGlite: WASM, one thread\), +200 passages: search p50 +\d+ µs/);
  expect(results.knowledge.calls.without.count).toBeGreaterThan(0);
  expect(output).toMatch(/with knowledge, SQLite retriever, HNSW +p50 +\d+ µs[^\n]*\n +its search, inside those calls +p50 +\d+ µs/);
  expect(results.knowledge.searchInCalls.memoryHnsw.count).toBe(results.knowledge.calls.memoryHnsw.count);
  expect(output).toMatch(/right after a bare search of a graph like the retriever.s \(usearch alone\) +p50 +\d+ µs[^\n]*\n +with knowledge, a retriever that answers at once +p50 +\d+ µs/);
  expect(results.knowledge.floor.afterBareSearch.count).toBe(results.knowledge.floor.without.count);
  expect(output).toMatch(/≤ 1\.5 × without \(×[\d.]+, its search ×[\d.]+ of it; exact ×[\d.]+; after a bare graph search ×[\d.]+, with a retriever that answers at once ×[\d.]+\)/);
  expect(output).toMatch(/a new agent.s first call \(with Agent.for and Agent.close\), isolates reused as by default, ≤ 2 × a bare isolate and context \(×[\d.]+\)/);
  expect(results.manyAgents.cold.bareIsolateBesideReused.count).toBeGreaterThan(0);
  expect(output).toMatch(/sqlite: 64 agents × 3 calls at once: one process \d+ calls\/s, p99 [\d.]+ ms; four processes \d+ calls\/s, p99 [\d.]+ ms \(×[\d.]+\); no record lost or duplicated/);
  expect(output).toMatch(/sqlite: 8 processes on one agent × 5 calls at once: \d+ calls\/s, p50 [\d.]+ ms, p99 [\d.]+ ms, 0 failed; no record lost or duplicated/);
  expect(results.reuse.generatedCall.count).toBeGreaterThan(0);
  for (const figure of results.promptPrefix.agents) expect(figure.medianShare).toBeGreaterThan(0);
  expect(results.reuse.slowProvider.withReuse.requests).toBe(1);
  expect(results.reuse.slowProvider.withoutReuse.requests).toBe(results.reuse.slowProvider.calls);
  expect(output).toMatch(/\(d\) sandbox round trip: IPC \+ isolated-vm body +p50 +\d+ µs/);
  expect(Object.keys(results.stores.calls)).toEqual(expect.arrayContaining(["memory", "sqlite", "sqlite-full"]));
  expect(output).toMatch(/sqlite +p50 +\d+ µs +p95 +\d+ µs +×\d+\.\d+ of memory-only/);
  expect(output).toMatch(/sqlite: Agent\.open of an agent holding 10,000 records \d+ ms/);
  const { records } = results.memory;
  expect(records.runs).toEqual([records.bytesPerRecord]);
  expect(records.hostBytesPerRecord + records.sandboxBytesPerRecord).toBeCloseTo(records.bytesPerRecord, -1);
  expect(output).toMatch(/records: \d+ bytes per record = host -?\d+ \+ sandbox mirror -?\d+/);
  expect(results.telemetry.lines).toBe(100_000);
  expect(results.followUps.sizes.map((size: { records: number }) => size.records)).toEqual([1_000, 10_000]);
  for (const size of results.followUps.sizes) expect(size.keptValues.count).toBe(100);
  const { pool } = results;
  expect(pool.fairness.without.calls).toBe(32 * 50);
  expect(pool.fairness.withSpinners.calls).toBe(32 * 50);
  expect(pool.fairness.withSpinners.spins).toBeGreaterThan(0);
  expect(pool.scaling.oneProcess.processes).toBe(1);
  expect(pool.soak.checkpoints).toHaveLength(10);
  const { tools } = results;
  expect(tools.toolCall.withTool.count).toBeGreaterThan(0);
  expect(tools.toolCall.withoutTool.count).toBeGreaterThan(0);
  expect(tools.overlap.overlapped.count).toBeGreaterThan(0);
  // One request per method: every timed call ran a kept program.
  expect(tools.providerRequests).toBe(4);
  const { egress } = results;
  expect(egress.withFetch.count).toBeGreaterThan(0);
  expect(egress.hostFetch.count).toBe(egress.withFetch.count);
  const { manyAgents } = results;
  expect(manyAgents.roundRobin.map((figure: { agents: number; failed: number }) => [figure.agents, figure.failed])).toEqual([
    [20, 0],
    [100, 0],
  ]);
  expect(manyAgents.cold.coldCall.count).toBe(10);
  expect(manyAgents.cold.perRequest.count).toBe(10);
  expect(manyAgents.cold.perRequestNewIsolate.count).toBe(10);
  expect(manyAgents.idle.agents).toBe(50);
  expect(manyAgents.idle.sandboxBytesPerIsolate).toBeGreaterThan(0);
  expect(output).toMatch(/ {5}100 agents +[\d.]+ ms per call +×[\d.]+ of 20/);
  expect(egress.providerRequests).toBe(2);
  expect(Number.isFinite(egress.overheadP50)).toBe(true);
  expect(output).toMatch(/a tool call adds -?\d+ µs \(p50 difference\) = ×-?\d+\.\d+ of \(d\) sandbox round trip/);
  expect(output).toMatch(/10 of them under Promise\.all \(wall time\) +p50 +[\d.]+ ms/);
  expect(output).toMatch(/the same, two agents computing 2 s loops +\d+ calls\/s +p50 +[\d.]+ ms +p99 +[\d.]+ ms/);
}, 240_000);
