import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, test } from "vitest";
import { Agent, SqliteStore } from "../../src/index.ts";
import { durableAgentContract, provider } from "../../test-support/agents-contract.ts";

const freshPath = () => join(mkdtempSync(join(tmpdir(), "improv-durable-")), "improv.db");

durableAgentContract("SqliteStore", async () => freshPath(), (path) => new SqliteStore(path));

describe("durable agents on SqliteStore only", () => {
  test("Agent.for with a SQLite store (object or path) loads at once and gives the same agent", async () => {
    const path = freshPath();
    const opened = await Agent.open("counter", { store: path, id: "c2", provider: provider() });
    await opened.inc();
    const same = Agent.for("counter", { store: path, id: "c2", provider: provider() });
    expect(same.runtimeContext).toBe(opened.runtimeContext);
    expect(Agent.history(same)).toHaveLength(1);
    expect(() => Agent.for("translator", { store: path, id: "c2" })).toThrow('Agent "c2" is open with role "counter", not "translator".');
  });

  test("a call whose store fails ends with a store outcome and leaves nothing behind", async () => {
    const path = freshPath();
    const store = new SqliteStore(path, { busyTimeoutMs: 20 });
    const counter = await Agent.open("counter", { store, id: "c3", provider: provider() });
    await counter.inc();
    const other = new DatabaseSync(path);
    other.exec("BEGIN EXCLUSIVE");
    try {
      const r = await counter.inc();
      expect(r).toMatchObject({ errorType: "store", retriable: true });
      expect(r.errorMessage).toMatch(/^The store failed, so nothing of this call was kept \(sqlite:.*\)\. Call again\.$/);
      expect(Agent.history(counter)).toHaveLength(1);
      expect(counter.runtimeContext).toEqual({ n: 1 });
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
    await counter.inc();
    expect(Agent.history(counter)).toHaveLength(2);
    expect(counter.runtimeContext).toEqual({ n: 2 });
    await store.close();
  });

  test("a closed store refuses calls without writing anything", async () => {
    const path = freshPath();
    const store = new SqliteStore(path);
    const counter = await Agent.open("counter", { store, id: "c4", provider: provider() });
    await counter.inc();
    await store.close();
    const r = await counter.inc();
    expect(r).toMatchObject({ errorType: "store", retriable: false });
    expect(r.errorMessage).toContain(`The store sqlite:${path} was closed (store.close())`);
    expect(Agent.history(counter)).toHaveLength(1);
    expect(counter.runtimeContext).toEqual({ n: 1 });
  });

  test("IMPROV_STORE gives agents a store when the option is absent", async () => {
    const path = freshPath();
    const saved = process.env.IMPROV_STORE;
    process.env.IMPROV_STORE = path;
    try {
      const counter = await Agent.open("counter", { id: "from-env", provider: provider() });
      await counter.inc();
    } finally {
      if (saved === undefined) delete process.env.IMPROV_STORE;
      else process.env.IMPROV_STORE = saved;
    }
    expect((await new SqliteStore(path).agents()).map((agent) => agent.id)).toEqual(["from-env"]);
  });

  test("Agent.refresh brings an agent up to date with another connection's commits before its next call", async () => {
    const path = freshPath();
    const here = await Agent.open("counter", { store: new SqliteStore(path), id: "r1", provider: provider() });
    const there = await Agent.open("counter", { store: new SqliteStore(path), id: "r1", provider: provider() });
    await there.inc();
    await there.inc();
    expect(Agent.history(here)).toHaveLength(0);
    await Agent.refresh(here);
    expect(Agent.history(here)).toHaveLength(2);
    expect(here.runtimeContext).toEqual({ n: 2 });
  });
});
