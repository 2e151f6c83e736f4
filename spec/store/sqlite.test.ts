import { spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, test } from "vitest";
import { EMPTY_CONTEXT, encodeContext } from "../../src/store/context-codec.ts";
import { SQLITE_MIGRATIONS } from "../../src/store/migrations.ts";
import { SqliteStore } from "../../src/store/sqlite-store.ts";
import { StoreError } from "../../src/store/store.ts";
import { expectMigratedValues, storeContract } from "../../test-support/store-contract.ts";

const freshPath = () => join(mkdtempSync(join(tmpdir(), "improv-sqlite-")), "improv.db");

storeContract("SqliteStore", async () => new SqliteStore(freshPath()));

describe("SqliteStore set-up", () => {
  test("WAL, a busy timeout, synchronous=NORMAL (FULL with durability: full) and a bounded WAL", async () => {
    const path = freshPath();
    const store = new SqliteStore(path);
    expect(store.settings).toEqual({ journalMode: "wal", synchronous: "normal", busyTimeoutMs: 5_000, journalSizeLimit: 64 * 1024 * 1024 });
    await store.close();
    const full = new SqliteStore(path, { durability: "full", busyTimeoutMs: 250 });
    expect(full.settings).toMatchObject({ journalMode: "wal", synchronous: "full", busyTimeoutMs: 250 });
    await full.close();
  });

  test("a second writer waits for the first instead of failing at once", async () => {
    const path = freshPath();
    const store = new SqliteStore(path);
    await store.open("a1", "r");
    // Another process takes the write lock for 300 ms.
    const holder = spawn(process.execPath, ["-e", `const { DatabaseSync } = require("node:sqlite"); const db = new DatabaseSync(${JSON.stringify(path)}); db.exec("BEGIN IMMEDIATE"); console.log("locked"); setTimeout(() => { db.exec("COMMIT"); }, 300);`]);
    await new Promise((resolve) => holder.stdout.once("data", resolve));
    expect(await store.write("a1", { record: '{"call_id":"waited"}' })).toMatchObject({ ok: true, position: 0 });
    const impatient = new SqliteStore(path, { busyTimeoutMs: 1 });
    const again = spawn(process.execPath, ["-e", `const { DatabaseSync } = require("node:sqlite"); const db = new DatabaseSync(${JSON.stringify(path)}); db.exec("BEGIN IMMEDIATE"); console.log("locked"); setTimeout(() => { db.exec("COMMIT"); }, 300);`]);
    await new Promise((resolve) => again.stdout.once("data", resolve));
    await expect(impatient.write("a1", { record: "{}" })).rejects.toThrow(/database is locked/);
    await new Promise((resolve) => again.once("exit", resolve));
    await store.close();
    await impatient.close();
  });

  test("sqlite: URLs and file paths name the same file", () => {
    const path = freshPath();
    expect(new SqliteStore(`sqlite:${path}`).path).toBe(path);
    expect(new SqliteStore(`sqlite://${path}`).path).toBe(path);
  });

  test("a database from a newer improv is refused, not rewritten", () => {
    const path = freshPath();
    new SqliteStore(path);
    const db = new DatabaseSync(path);
    db.prepare("UPDATE improv_meta SET value = '99' WHERE key = 'schema_version'").run();
    db.close();
    expect(() => new SqliteStore(path)).toThrow(`sqlite:${path}: the database has schema version 99, made by a newer improv; this one knows up to ${SQLITE_MIGRATIONS.length}. Upgrade improv to use it.`);
  });

  test("a store of schema version 3 is migrated forward: its kept programs stay, with no reason recorded for keeping them", async () => {
    const path = freshPath();
    const db = new DatabaseSync(path);
    db.exec("CREATE TABLE improv_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    for (const migration of SQLITE_MIGRATIONS.slice(0, 3)) db.exec(migration);
    db.exec("INSERT INTO improv_meta VALUES ('schema_version', '3')");
    db.prepare("INSERT INTO improv_programs (key, role, method, code, uses, failures, failures_in_row, kept_at, last_used) VALUES ('calc.add(2)@v', 'calc', 'add', 'return 1', 2, 0, 0, '2026-01-01T00:00:00.000Z', NULL)").run();
    db.close();
    const store = new SqliteStore(path);
    expect(await store.program("calc.add(2)@v")).toMatchObject({ code: "return 1", uses: 2, why: null });
    await store.keepProgram({ key: "calc.add(2)@v", role: "calc", method: "add", code: "return args[0]", why: "a reason" });
    expect(await store.program("calc.add(2)@v")).toMatchObject({ code: "return args[0]", uses: 0, why: "a reason" });
    await store.close();
    expect((new DatabaseSync(path).prepare("SELECT value FROM improv_meta WHERE key = 'schema_version'").get() as { value: string }).value).toBe(String(SQLITE_MIGRATIONS.length));
  });

  test("a store of schema version 4 is migrated forward: its records and kept values stay, and the next values are held to their count", async () => {
    const path = freshPath();
    const db = new DatabaseSync(path);
    db.exec("CREATE TABLE improv_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    for (const migration of SQLITE_MIGRATIONS.slice(0, 4)) db.exec(migration);
    db.exec("INSERT INTO improv_meta VALUES ('schema_version', '4')");
    db.prepare("INSERT INTO improv_agents (id, role, version, epoch, first, length, context, created_at, updated_at) VALUES ('a1', 'r', 0, 0, 0, 3, ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')").run(encodeContext(EMPTY_CONTEXT));
    for (let n = 0; n < 3; n += 1) {
      db.prepare("INSERT INTO improv_records (agent_id, position, record) VALUES ('a1', ?, ?)").run(n, JSON.stringify({ call_id: `c${n}`, trace_id: "t" }));
      db.prepare("INSERT INTO improv_values (agent_id, ref, seq, value, bytes) VALUES ('a1', ?, ?, ?, 8)").run(`c${n}`, n + 1, `"v${n}"`);
    }
    db.close();
    const store = new SqliteStore(path);
    await expectMigratedValues(store);
    await store.close();
  });

  test("a store of schema version 5 is migrated forward: its agents, records, context and values stay, and its agents take leases", async () => {
    const path = freshPath();
    const db = new DatabaseSync(path);
    db.exec("CREATE TABLE improv_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    for (const migration of SQLITE_MIGRATIONS.slice(0, 5)) db.exec(migration);
    db.exec("INSERT INTO improv_meta VALUES ('schema_version', '5')");
    const context = encodeContext({ values: { n: 3 }, appKeys: [] });
    db.prepare("INSERT INTO improv_agents (id, role, version, epoch, first, length, context, created_at, updated_at, value_seq, value_count) VALUES ('a1', 'r', 3, 0, 0, 3, ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 3, 3)").run(context);
    for (let n = 0; n < 3; n += 1) {
      db.prepare("INSERT INTO improv_records (agent_id, position, record) VALUES ('a1', ?, ?)").run(n, JSON.stringify({ call_id: `c${n}`, trace_id: "t" }));
      db.prepare("INSERT INTO improv_values (agent_id, slot, seq, ref, bytes, value) VALUES ('a1', ?, ?, ?, 8, ?)").run((n + 1) % 3, n + 1, `c${n}`, `"v${n}"`);
    }
    db.close();
    const store = new SqliteStore(path);
    expect(await store.open("a1", "r")).toMatchObject({ version: 3, length: 3, context: { values: { n: 3 } }, values: [["c0", '"v0"'], ["c1", '"v1"'], ["c2", '"v2"']] });
    const turn = await store.turn("a1", { waitMs: 0 });
    expect(turn).toMatchObject({ locked: false, stand: { version: 3, epoch: 0, length: 3 } });
    expect(await turn.take?.(0)).toBe(true);
    expect(await turn.commit({ record: JSON.stringify({ call_id: "c3" }), context: { values: { n: 4 }, appKeys: [] }, baseVersion: 3 })).toMatchObject({ ok: true, version: 4, position: 3 });
    await store.close();
    const after = new DatabaseSync(path);
    expect((after.prepare("SELECT value FROM improv_meta WHERE key = 'schema_version'").get() as { value: string }).value).toBe(String(SQLITE_MIGRATIONS.length));
    expect(after.prepare("SELECT lease_owner, lease_expires FROM improv_agents WHERE id = 'a1'").get()).toEqual({ lease_owner: null, lease_expires: expect.any(Number) });
    after.close();
  });

  test("a file that cannot be written is a StoreError naming the store", () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-sqlite-readonly-"));
    mkdirSync(join(directory, "locked"));
    chmodSync(join(directory, "locked"), 0o500);
    const path = join(directory, "locked", "improv.db");
    const opening = () => new SqliteStore(path);
    if (process.getuid?.() === 0) {
      // root writes anywhere; a path below a file stands in for an unwritable one.
      const belowFile = join(freshPath(), "..", "improv.db", "below.db");
      new SqliteStore(join(belowFile, "..", "..", "improv.db")).close();
      expect(() => new SqliteStore(belowFile)).toThrow(StoreError);
      expect(() => new SqliteStore(belowFile)).toThrow(`sqlite:${belowFile}: cannot open the database`);
      return;
    }
    expect(opening).toThrow(StoreError);
    expect(opening).toThrow(`sqlite:${path}: cannot open the database`);
  });
});

describe("SqliteStore turns and leases (two connections stand for two processes)", () => {
  const counted = (n: number) => ({ record: JSON.stringify({ call_id: `c${n}` }), context: { values: { n }, appKeys: [] }, baseVersion: n - 1 });

  test("while a turn holds the agent's lease, another turn's commit that changes the context is refused; the application's own write is not", async () => {
    const path = freshPath();
    const [here, there] = [new SqliteStore(path), new SqliteStore(path)];
    await here.open("a1", "r");
    const holder = await here.turn("a1", { waitMs: 0, leaseMs: 60_000 });
    expect(await holder.take?.(0)).toBe(true);
    expect(holder.locked).toBe(true);
    // Begun while the lease is held, a turn waits for it (here not at all) and goes on without it.
    const other = await there.turn("a1", { waitMs: 0 });
    expect(other.locked).toBe(false);
    // The version is the one it ran on, yet its commit is refused: the lease holder's turn comes first.
    expect(await other.commit(counted(1))).toEqual({ ok: false, conflict: true, version: 0 });
    // A record alone changes no context and is kept; so is the application's write (setters never wait).
    expect(await other.commit({ record: JSON.stringify({ call_id: "failed" }) })).toMatchObject({ ok: true, position: 0 });
    expect(await there.write("a1", { context: { values: { x: 1 }, appKeys: ["x"] }, baseVersion: 0 })).toMatchObject({ ok: true, version: 1 });
    // The holder takes its lease again (renewed), runs on the new context, commits, and releases the lease with it.
    expect(await holder.take?.(0)).toBe(true);
    expect(await holder.commit({ record: JSON.stringify({ call_id: "c1" }), context: { values: { x: 1, n: 1 }, appKeys: ["x"] }, baseVersion: 1 })).toMatchObject({ ok: true, version: 2, position: 1 });
    expect(holder.locked).toBe(false);
    expect(await other.take?.(0)).toBe(true);
    await other.end();
    expect(other.locked).toBe(false);
    await here.close();
    await there.close();
  });

  test("a turn begun while another holds the lease waits for its release, then holds it; a wait that runs out goes on without it", async () => {
    const path = freshPath();
    const [here, there] = [new SqliteStore(path), new SqliteStore(path)];
    await here.open("a1", "r");
    const holder = await here.turn("a1", { waitMs: 0, leaseMs: 60_000 });
    expect(await holder.take?.(0)).toBe(true);
    expect(await there.turn("a1", { waitMs: 30 })).toMatchObject({ locked: false });
    const waiting = there.turn("a1", { waitMs: 60_000 });
    setTimeout(() => void holder.commit(counted(1)), 50);
    const next = await waiting;
    // It holds the lease, and stands where the holder's commit left the agent.
    expect(next).toMatchObject({ locked: true, stand: { version: 1, length: 1 } });
    expect(await next.commit(counted(2))).toMatchObject({ ok: true, version: 2 });
    await here.close();
    await there.close();
  });

  test("a lease whose holder stops renewing it lapses, and another turn takes it; the old holder's commit is then refused", async () => {
    const path = freshPath();
    const [here, there] = [new SqliteStore(path), new SqliteStore(path)];
    await here.open("a1", "r");
    const holder = await here.turn("a1", { waitMs: 0, leaseMs: 60_000 });
    expect(await holder.take?.(0)).toBe(true);
    // The holder's process stops (its renewals with it): its lease lapses when it expires.
    const db = new DatabaseSync(path);
    db.prepare("UPDATE improv_agents SET lease_expires = ? WHERE id = 'a1'").run(Date.now() - 1);
    db.close();
    const next = await there.turn("a1", { waitMs: 0, leaseMs: 60_000 });
    expect(await next.take?.(0)).toBe(true);
    expect(await holder.commit(counted(1))).toEqual({ ok: false, conflict: true, version: 0 });
    expect(await next.commit(counted(1))).toMatchObject({ ok: true, version: 1 });
    // Once released, the old holder takes it again and commits on the new context.
    expect(await holder.take?.(0)).toBe(true);
    expect(await holder.commit(counted(2))).toMatchObject({ ok: true, version: 2 });
    await here.close();
    await there.close();
  });
});

describe("SqliteStore hygiene", () => {
  test("prune gives the space back to the file system", async () => {
    const path = freshPath();
    const store = new SqliteStore(path);
    await store.open("big", "r");
    const padding = "x".repeat(2_000);
    for (let n = 0; n < 2_000; n += 1) await store.write("big", { record: JSON.stringify({ call_id: `c${n}`, padding }) });
    await store.close();
    const { statSync } = await import("node:fs");
    const before = statSync(path).size;
    const again = new SqliteStore(path);
    expect(await again.prune({ id: "big", keepLast: 10 })).toBe(1_990);
    await again.close();
    const after = statSync(path).size;
    expect(after).toBeLessThan(before / 5);
  });

  test("prune checks its options: an unknown name, a missing id or a bad keepLast is refused and deletes nothing", async () => {
    const store = new SqliteStore(freshPath());
    await store.open("a1", "r");
    for (let n = 0; n < 3; n += 1) await store.write("a1", { record: JSON.stringify({ call_id: `c${n}` }) });
    await expect(store.prune({ id: "a1", keepLast: 0, dryRun: true } as never)).rejects.toThrow(new TypeError('Unknown option "dryRun" for store.prune(). Valid options: id, keepLast.'));
    await expect(store.prune({ id: "a1", keepLst: 1 } as never)).rejects.toThrow(new TypeError('Unknown option "keepLst" for store.prune(). Did you mean "keepLast"? Valid options: id, keepLast.'));
    await expect(store.prune({ keepLast: 1 } as never)).rejects.toThrow(new TypeError('store.prune() option "id" must be the agent\'s id, a string; got undefined.'));
    await expect(store.prune({ id: 7, keepLast: 1 } as never)).rejects.toThrow(new TypeError('store.prune() option "id" must be the agent\'s id, a string; got the number 7.'));
    await expect(store.prune({ id: "a1" } as never)).rejects.toThrow(new RangeError('store.prune() option "keepLast" must be a whole number of records, 0 or more; got undefined.'));
    await expect(store.prune({ id: "a1", keepLast: 1.5 })).rejects.toThrow(new RangeError('store.prune() option "keepLast" must be a whole number of records, 0 or more; got the number 1.5.'));
    await expect(store.prune("a1" as never)).rejects.toThrow(new TypeError('The options of store.prune() must be an object, got the string "a1".'));
    expect(await store.records("a1")).toHaveLength(3);
    expect(await store.prune({ id: "a1", keepLast: 0 })).toBe(3);
    await store.close();
  });

  test("using a store prints no warning", () => {
    const script = `
      import { Agent, ScriptedProvider } from ${JSON.stringify(new URL("../../src/index.ts", import.meta.url).href)};
      const provider = new ScriptedProvider({ programs: { add: "return args[0] + args[1]" } });
      const calc = await Agent.open("calculator", { store: ${JSON.stringify(freshPath())}, provider });
      console.log((await calc.add(2, 3)).value);
    `;
    const result = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 30_000 });
    expect(result.stdout.trim()).toBe("5");
    expect(result.stderr).toBe("");
  });
});
