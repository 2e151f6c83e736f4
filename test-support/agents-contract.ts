import { spawn } from "node:child_process";
import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider, type Store } from "../src/index.ts";
import { checkFleet, runFleet } from "./fleet.ts";
import { checkCounter, turnsProcess } from "./turns.ts";

const COUNTER = new URL("./fixtures/counter.ts", import.meta.url).pathname;
const MIXED = new URL("./fixtures/mixed.ts", import.meta.url).pathname;

const programs = {
  inc: "context.n = (context.n ?? 0) + 1; return context.n",
  reading: "return { city: args[0], at: new Date(Date.UTC(2026, 0, args[1])) }",
  recall: "return content(args[0])",
  count: "return context.conversation_history.length",
  fail: "context.n = 1000; throw new Error('no')",
  ask: "const r = await delegate('helper').note(args[0]); return r.value",
  "helper.note": "context.notes = [...(context.notes ?? []), args[0]]; return context.notes.length",
};
export const provider = () => new ScriptedProvider({ programs });

/** Runs the counter fixture in a process of its own; resolves with its output lines and exit. */
function counterProcess(location: string, id: string, calls: number): { lines: string[]; done: Promise<{ code: number | null; signal: string | null }>; child: ReturnType<typeof spawn> } {
  const child = spawn(process.execPath, [COUNTER, location, id, String(calls)], { stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  let pending = "";
  child.stdout.on("data", (chunk: Buffer) => {
    pending += chunk.toString("utf8");
    const parts = pending.split("\n");
    pending = parts.pop() ?? "";
    lines.push(...parts);
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const done = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on("close", (code, signal) => resolve({ code, signal: signal ?? (stderr.trim() === "" ? null : stderr) })));
  return { lines, done, child };
}

/**
 * What durable agents promise, on any store: `location` makes a fresh, empty store and returns
 * its location string, and `open` opens a Store object on it.
 */
export function durableAgentContract(name: string, location: () => Promise<string>, open: (location: string) => Store): void {
describe(`durable agents on ${name}`, () => {
  test("history, context and the application's values outlive the store connection", async () => {
    const path = await location();
    const first = await Agent.open<{ unit: string }>("counter", { store: open(path), id: "c1", provider: provider() });
    first.unit = "apples";
    await first.inc();
    await first.inc();
    await first.fail();

    await Agent.save(first);
    const store = open(path);
    const again = await Agent.open<{ unit: string }>("counter", { store, id: "c1", provider: provider() });
    expect(Agent.history(again).map((record) => record.method_name)).toEqual(["inc", "inc", "fail"]);
    expect(again.unit).toBe("apples");
    expect(again.runtimeContext).toEqual({ n: 2, unit: "apples" });
    expect((await again.inc()).value).toBe(3);
    expect((await again.count()).value).toBe(4);
    await store.close();
  });

  test("kept values are stored with their records, bounded, and read back in another process's view", async () => {
    const path = await location();
    const writer = await Agent.open("counter", { store: open(path), id: "v1", provider: provider(), keepValues: { count: 2, maxBytes: 1_000_000 } });
    const refs = [];
    for (const day of [1, 2, 3]) refs.push((await writer.reading("Oslo", day)).callId);
    await writer.fail();
    const store = open(path);
    const reader = await Agent.open("counter", { store, id: "v1", provider: provider(), keepValues: { count: 2, maxBytes: 1_000_000 } });
    // The oldest of three went, in the store as in the writer.
    expect(await Agent.value(reader, refs[0]!)).toBeUndefined();
    expect(await Agent.value(reader, refs[2]!)).toEqual({ city: "Oslo", at: new Date(Date.UTC(2026, 0, 3)) });
    expect((await reader.recall(refs[1])).value).toEqual({ city: "Oslo", at: new Date(Date.UTC(2026, 0, 2)) });
    // A value the writer keeps after the reader opened is read from the store.
    const later = (await writer.reading("Bergen", 9)).callId;
    expect(await Agent.value(reader, later)).toEqual({ city: "Bergen", at: new Date(Date.UTC(2026, 0, 9)) });
    expect((await reader.recall(later)).value).toMatchObject({ city: "Bergen" });
    expect(await store.value("v1", refs[1]!)).toBeUndefined(); // evicted by the two newer values ("recall" kept one too)
    await Agent.forget(reader);
    expect(await store.value("v1", later)).toBeUndefined();
    await store.close();
  });

  test("Agent.trace with the store finds a call tree across the agents stored there", async () => {
    const path = await location();
    const boss = await Agent.open("counter", { store: open(path), id: "t1", provider: provider(), traceId: "trace-t1" });
    await boss.ask("first");
    await boss.ask("second");
    const store = open(path);
    const tree = await Agent.trace("trace-t1", { store });
    expect(tree.map((node) => `${node.agent_id}:${node.method_name}`)).toEqual(["t1:ask", "t1/helper:note", "t1:ask", "t1/helper:note"]);
    expect(tree[0]!.children.map((node) => node.role)).toEqual(["helper"]);
    expect(tree[0]!.children[0]!.args).toEqual(["first"]);
    expect(await Agent.trace("no-such-trace", { store })).toEqual([]);
    // What the store itself holds of the trace (this process's agents hold the same records).
    const rows = await store.traceRecords("trace-t1");
    expect(rows.map((row) => [row.agentId, row.role, (JSON.parse(row.record) as { method_name: string }).method_name])).toEqual([
      ["t1", "counter", "ask"],
      ["t1", "counter", "ask"],
      ["t1/helper", "helper", "note"],
      ["t1/helper", "helper", "note"],
    ]);
    await store.close();
  });

  test("a delegated helper is stored under an id derived from its parent's, with its own history", async () => {
    const path = await location();
    const store = open(path);
    const asker = await Agent.open("asker", { store, id: "a1", provider: provider() });
    await asker.ask("first");
    await asker.ask("second");
    const reopened = open(path);
    expect((await reopened.agents()).map(({ id, role, records }) => ({ id, role, records }))).toEqual([
      { id: "a1", role: "asker", records: 2 },
      { id: "a1/helper", role: "helper", records: 2 },
    ]);
    const helper = await Agent.open("helper", { store: reopened, id: "a1/helper", provider: provider() });
    expect(helper.runtimeContext).toEqual({ notes: ["first", "second"] });
  });

  test("a value the application writes while a program runs is kept: the program runs again on it", async () => {
    const path = await location();
    const programs = {
      slow: "context.n = (context.n ?? 0) + 1; await delegate('spinner').spin(args[0]); return context.n",
      warm: "await delegate('spinner').spin(0); return 0",
      "spinner.spin": "const end = Date.now() + args[0]; while (Date.now() < end) {} return 1",
    };
    const agent = await Agent.open<{ x: number }>("writer", { store: path, id: "w1", provider: new ScriptedProvider({ programs }) });
    // Both isolates (and the sandbox process) exist before the timed part, so the write lands mid-run.
    await agent.warm();
    const running = agent.slow(600);
    setTimeout(() => (agent.x = 5), 200);
    expect((await running).value).toBe(1);
    await Agent.save(agent);
    expect(agent.runtimeContext).toEqual({ n: 1, x: 5 });
    expect((await open(path).open("w1", "writer")).context).toEqual({ values: { n: 1, x: 5 }, appKeys: ["x"] });
  });

  test("Agent.forget deletes an agent and its helpers from the store", async () => {
    const path = await location();
    const asker = await Agent.open("asker", { store: path, id: "gone", provider: provider() });
    await asker.ask("x");
    await Agent.forget(asker);
    expect(await open(path).agents()).toEqual([]);
    expect(Agent.history(asker)).toHaveLength(0);
  });

  test("another process's calls are seen at this process's next call", async () => {
    const path = await location();
    const counter = await Agent.open("counter", { store: path, id: "shared", provider: provider() });
    await counter.inc();
    const other = counterProcess(path, "shared", 3);
    expect(await other.done).toEqual({ code: 0, signal: null });
    expect(other.lines).toEqual(["ok 2", "ok 3", "ok 4", "done"]);
    expect((await counter.inc()).value).toBe(5);
    expect(Agent.history(counter)).toHaveLength(5);
  });
});

describe(`many writers and crashes on ${name}`, () => {
  test("processes mixing the application's writes with failing and succeeding calls end with copies equal to the store", async () => {
    const path = await location();
    const writers = [0, 1].map(() => {
      const child = spawn(process.execPath, [MIXED, path, "mixed", "10"], { stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
      return new Promise<{ history: string[]; context: Record<string, unknown> }>((resolve, reject) =>
        child.on("close", (code) => (code === 0 ? resolve(JSON.parse(out) as { history: string[]; context: Record<string, unknown> }) : reject(new Error(`exit ${code}`)))),
      );
    });
    const copies = await Promise.all(writers);
    const state = await open(path).open("mixed", "mixed");
    const stored = state.records.map((text) => (JSON.parse(text) as { call_id: string }).call_id);
    expect(stored).toHaveLength(40);
    expect(new Set(stored).size).toBe(40);
    expect(state.context?.values.n).toBe(20);
    // Each copy, taken when its process finished, is the store's history as far as it went, in the store's order.
    for (const copy of copies) expect(copy.history).toEqual(stored.slice(0, copy.history.length));
    // The process that finished last saw everything, context included.
    const last = copies.find((copy) => copy.history.length === stored.length);
    expect(last?.context).toEqual(state.context?.values);
  }, 120_000);

  test("three processes calling one agent at once lose no update and no record", async () => {
    const path = await location();
    await open(path).open("shared", "counter");
    const writers = [0, 1, 2].map(() => counterProcess(path, "shared", 15));
    const exits = await Promise.all(writers.map((writer) => writer.done));
    expect(exits).toEqual([0, 1, 2].map(() => ({ code: 0, signal: null })));
    expect(writers.flatMap((writer) => writer.lines.filter((line) => !line.startsWith("ok ") && line !== "done"))).toEqual([]);
    const values = writers.flatMap((writer) => writer.lines.filter((line) => line.startsWith("ok ")).map((line) => Number(line.slice(3))));
    expect(values.sort((a, b) => a - b)).toEqual(Array.from({ length: 45 }, (_, index) => index + 1));
    const store = open(path);
    const state = await store.open("shared", "counter");
    expect(state.context?.values).toMatchObject({ n: 45 });
    expect((state.context?.values.log as number[]).length).toBe(45);
    expect(state.records).toHaveLength(45);
  }, 120_000);

  test("eight processes calling one agent at once: every call ok, the context exact, the history contiguous with no duplicate", async () => {
    const path = await location();
    const calls = 40;
    // Half of them ask the provider on every call: a call that paid for a program is never thrown away.
    const writers = Array.from({ length: 8 }, (_, index) => turnsProcess(path, "hammered", calls, "inc", index % 2 === 0 ? {} : { reuse: false }));
    const exits = await Promise.all(writers.map((writer) => writer.done));
    expect(exits.map(({ code, finished, stderr }) => ({ code, finished, stderr }))).toEqual(writers.map(() => ({ code: 0, finished: true, stderr: "" })));
    const lines = writers.flatMap((writer) => writer.calls);
    expect(lines.filter((line) => !line.ok).map((line) => `${line.errorType}: ${line.errorMessage}`)).toEqual([]);
    expect(lines.map((line) => line.value).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(Array.from({ length: 8 * calls }, (_, index) => index + 1));
    expect(writers.filter((_, index) => index % 2 === 1).flatMap((writer) => writer.calls.map((line) => line.asked))).toEqual(Array.from({ length: 4 * calls }, () => 1));
    expect(await checkCounter(open(path), "hammered", 8 * calls)).toEqual([]);
  }, 180_000);

  test("sixteen agents spread over four processes, called at once, lose no record and duplicate none", async () => {
    const path = await location();
    const run = await runFleet(path, 4, 16, 12);
    expect(run.firstErrors).toEqual([]);
    expect(run).toMatchObject({ calls: 16 * 12, errors: 0 });
    expect(await checkFleet(open(path), 16, 12)).toEqual([]);
  }, 120_000);

  test("a process killed at any moment leaves the calls that resolved, at most one more, each whole", async () => {
    const path = await location();
    for (let round = 0; round < 8; round += 1) {
      const writer = counterProcess(path, "crashy", 1_000);
      // Let it get going, then kill it at a moment that differs from round to round.
      await new Promise<void>((resolve) => {
        const check = setInterval(() => {
          if (writer.lines.length >= 3 + round * 2) {
            clearInterval(check);
            resolve();
          }
        }, 2);
      });
      await new Promise((resolve) => setTimeout(resolve, round * 3));
      writer.child.kill("SIGKILL");
      await writer.done;
      const resolved = writer.lines.filter((line) => line.startsWith("ok ")).map((line) => Number(line.slice(3)));
      const store = open(path);
      const state = await store.open("crashy", "counter");
      const n = state.context?.values.n as number;
      const last = resolved.at(-1) as number;
      // Every resolved call is there; at most the one in flight besides; record and context agree.
      expect(n === last || n === last + 1, `round ${round}: n=${n}, last resolved ${last}`).toBe(true);
      expect(state.records).toHaveLength(n);
      expect((state.context?.values.log as number[]).at(-1)).toBe(n);
    }
  }, 120_000);
});
}
