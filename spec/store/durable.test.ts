import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider, SqliteStore } from "../../src/index.ts";

const freshPath = () => join(mkdtempSync(join(tmpdir(), "improv-durable-")), "improv.db");
const COUNTER = new URL("./fixtures/counter.ts", import.meta.url).pathname;

const programs = {
  inc: "context.n = (context.n ?? 0) + 1; return context.n",
  count: "return context.conversation_history.length",
  fail: "context.n = 1000; throw new Error('no')",
  ask: "const r = await delegate('helper').note(args[0]); return r.value",
  "helper.note": "context.notes = [...(context.notes ?? []), args[0]]; return context.notes.length",
};
const provider = () => new ScriptedProvider({ programs });

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

describe("durable agents on SqliteStore", () => {
  test("history, context and the application's values outlive the store connection", async () => {
    const path = freshPath();
    const first = await Agent.open<{ unit: string }>("counter", { store: new SqliteStore(path), id: "c1", provider: provider() });
    first.unit = "apples";
    await first.inc();
    await first.inc();
    await first.fail();

    const store = new SqliteStore(path);
    const again = await Agent.open<{ unit: string }>("counter", { store, id: "c1", provider: provider() });
    expect(Agent.history(again).map((record) => record.method_name)).toEqual(["inc", "inc", "fail"]);
    expect(again.unit).toBe("apples");
    expect(again.runtimeContext).toEqual({ n: 2, unit: "apples" });
    expect((await again.inc()).value).toBe(3);
    expect((await again.count()).value).toBe(4);
    await store.close();
  });

  test("Agent.for with a SQLite store (object or path) loads at once and gives the same agent", async () => {
    const path = freshPath();
    const opened = await Agent.open("counter", { store: path, id: "c2", provider: provider() });
    await opened.inc();
    const same = Agent.for("counter", { store: path, id: "c2", provider: provider() });
    expect(same.runtimeContext).toBe(opened.runtimeContext);
    expect(Agent.history(same)).toHaveLength(1);
    expect(() => Agent.for("translator", { store: path, id: "c2" })).toThrow('Agent "c2" is open with role "counter", not "translator".');
  });

  test("a delegated helper is stored under an id derived from its parent's, with its own history", async () => {
    const path = freshPath();
    const store = new SqliteStore(path);
    const asker = await Agent.open("asker", { store, id: "a1", provider: provider() });
    await asker.ask("first");
    await asker.ask("second");
    const reopened = new SqliteStore(path);
    expect((await reopened.agents()).map(({ id, role, records }) => ({ id, role, records }))).toEqual([
      { id: "a1", role: "asker", records: 2 },
      { id: "a1/helper", role: "helper", records: 2 },
    ]);
    const helper = await Agent.open("helper", { store: reopened, id: "a1/helper", provider: provider() });
    expect(helper.runtimeContext).toEqual({ notes: ["first", "second"] });
  });

  test("a call whose store fails ends with a store outcome and leaves nothing behind", async () => {
    const store = new SqliteStore(freshPath());
    const counter = await Agent.open("counter", { store, id: "c3", provider: provider() });
    await counter.inc();
    await store.close();
    const r = await counter.inc();
    expect(r).toMatchObject({ errorType: "store", retriable: true });
    expect(r.errorMessage).toMatch(/^The store failed, so nothing of this call was kept \(sqlite:.*: cannot (read|write) .*: the store was closed\.\)\. Call again\.$/);
    expect(Agent.history(counter)).toHaveLength(1);
    expect(counter.runtimeContext).toEqual({ n: 1 });
  });

  test("Agent.forget deletes an agent and its helpers from the store", async () => {
    const path = freshPath();
    const asker = await Agent.open("asker", { store: path, id: "gone", provider: provider() });
    await asker.ask("x");
    await Agent.forget(asker);
    expect(await new SqliteStore(path).agents()).toEqual([]);
    expect(Agent.history(asker)).toHaveLength(0);
  });

  test("another process's calls are seen at this process's next call", async () => {
    const path = freshPath();
    const counter = await Agent.open("counter", { store: path, id: "shared", provider: provider() });
    await counter.inc();
    const other = counterProcess(path, "shared", 3);
    expect(await other.done).toEqual({ code: 0, signal: null });
    expect(other.lines).toEqual(["ok 2", "ok 3", "ok 4", "done"]);
    expect((await counter.inc()).value).toBe(5);
    expect(Agent.history(counter)).toHaveLength(5);
  });
});

describe("many writers and crashes", () => {
  test("three processes calling one agent at once lose no update and no record", async () => {
    const path = freshPath();
    await new SqliteStore(path).open("shared", "counter");
    const writers = [0, 1, 2].map(() => counterProcess(path, "shared", 15));
    const exits = await Promise.all(writers.map((writer) => writer.done));
    expect(exits).toEqual([0, 1, 2].map(() => ({ code: 0, signal: null })));
    const values = writers.flatMap((writer) => writer.lines.filter((line) => line.startsWith("ok ")).map((line) => Number(line.slice(3))));
    expect(values.sort((a, b) => a - b)).toEqual(Array.from({ length: 45 }, (_, index) => index + 1));
    const store = new SqliteStore(path);
    const state = await store.open("shared", "counter");
    expect(state.context?.values).toMatchObject({ n: 45 });
    expect((state.context?.values.log as number[]).length).toBe(45);
    expect(state.records).toHaveLength(45);
  }, 120_000);

  test("a process killed at any moment leaves the calls that resolved, at most one more, each whole", async () => {
    const path = freshPath();
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
      const store = new SqliteStore(path);
      const state = await store.open("crashy", "counter");
      await store.close();
      const n = state.context?.values.n as number;
      const last = resolved.at(-1) as number;
      // Every resolved call is there; at most the one in flight besides; record and context agree.
      expect(n === last || n === last + 1, `round ${round}: n=${n}, last resolved ${last}`).toBe(true);
      expect(state.records).toHaveLength(n);
      expect((state.context?.values.log as number[]).at(-1)).toBe(n);
    }
  }, 120_000);
});
