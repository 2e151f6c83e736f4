import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Agent, type HistoryRecord, PostgresStore, ScriptedProvider } from "../../src/index.ts";
import { EMPTY_CONTEXT, encodeContext } from "../../src/store/context-codec.ts";
import { POSTGRES_MIGRATIONS } from "../../src/store/migrations.ts";
import { leanStatements, postgresTimings } from "../../src/store/postgres-store.ts";
import { postgresUnavailable, startPostgres, type PostgresServer } from "../../test-support/postgres.ts";
import { durableAgentContract, provider } from "../../test-support/agents-contract.ts";
import { expectMigratedValues, storeContract } from "../../test-support/store-contract.ts";

const unavailable = postgresUnavailable();
if (unavailable !== undefined && process.env.CI === "true") {
  throw new Error(`PostgreSQL tests must run under CI=true, but ${unavailable}`);
}
if (unavailable !== undefined) process.stderr.write(`Skipping the PostgreSQL tests: ${unavailable}\n`);

let server: PostgresServer | undefined;
const stores: PostgresStore[] = [];
/** A fresh database on the test server, as a URL. */
const freshDatabase = async () => (server as PostgresServer).database(`improv_${randomUUID().replace(/-/g, "")}`);
const openStore = (url: string) => {
  const store = new PostgresStore(url);
  stores.push(store);
  return store;
};

describe.skipIf(unavailable !== undefined)("PostgreSQL", () => {
  beforeAll(async () => {
    server = await startPostgres();
  }, 60_000);

  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close().catch(() => undefined)));
    server?.stop();
  });

  storeContract("PostgresStore", async () => openStore(await freshDatabase()));
  durableAgentContract("PostgresStore", freshDatabase, openStore);

  /** The turn's answer read right, whichever path its statement takes: the lock, where the agent stands, the kept program. */
  const turnReadsItsAnswer = () =>
    test("a turn on an agent nobody holds takes its lock and says where the agent stands and what program is kept", async () => {
      const store = openStore(await freshDatabase());
      await store.open("a1", "r");
      await store.write("a1", { record: JSON.stringify({ call_id: "c0" }) });
      await store.keepProgram({ key: "r.m(0)@v", role: "r", method: "m", code: "return 1", why: "kept" });
      const turn = await store.turn!("a1", { waitMs: 1_000, programKey: "r.m(0)@v" });
      try {
        expect(turn.locked).toBe(true);
        expect(turn.stand).toMatchObject({ length: 1 });
        expect(turn.program).toBe("return 1");
      } finally {
        await turn.end();
      }
    });
  turnReadsItsAnswer();

  // A call's two statements bypass pg's general query path through its connection internals;
  // where those are not what improv expects, the general path answers instead, the same.
  describe("through pg's general query path", () => {
    beforeAll(() => {
      leanStatements.enabled = false;
    });
    afterAll(() => {
      leanStatements.enabled = true;
    });
    storeContract("PostgresStore (general query path)", async () => openStore(await freshDatabase()));
    turnReadsItsAnswer();
  });

  describe("PostgresStore only", () => {
    test("Agent.for cannot load from PostgreSQL synchronously and says to use Agent.open", async () => {
      const store = openStore(await freshDatabase());
      expect(() => Agent.for("calculator", { store })).toThrow(`Agent.for() cannot load an agent from ${store.label} synchronously. Use await Agent.open(role, options) with this store.`);
    });

    test("a reused call on an agent that is up to date takes two statements, its turn and its commit; each kept-value and program count in the commit", async () => {
      const store = openStore(await freshDatabase());
      const counter = await Agent.open("counter", { store, id: "s1", provider: provider() });
      await counter.inc();
      await counter.inc(); // reads the kept program once
      const sent: string[] = [];
      const query = pg.Client.prototype.query;
      pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
        const [config] = args as [string | { name?: string; text?: string }];
        sent.push(typeof config === "string" ? config : (config.name ?? config.text ?? ""));
        return (query as (...a: unknown[]) => unknown).apply(this, args);
      } as typeof query;
      try {
        for (let call = 0; call < 5; call += 1) expect((await counter.inc()).value).toBe(call + 3);
      } finally {
        pg.Client.prototype.query = query;
      }
      expect(sent).toEqual(Array.from({ length: 5 }, () => ["improv_turn", "improv_commit"]).flat());
      const kept = (await store.programs("counter"))[0];
      expect(kept?.uses).toBe(6);
      expect((await store.records("s1")).map((record) => JSON.parse(record).program_source)).toEqual(["generated", ...Array.from({ length: 6 }, () => "reused")]);
      expect(await store.value("s1", Agent.history(counter).at(-1)!.call_id)).toBeDefined();
    });

    test("a store of schema version 5 is migrated forward: its records and kept values stay, the next values are held to their count, and forgetting still deletes records", async () => {
      const url = await freshDatabase();
      const setup = new pg.Client({ connectionString: url });
      await setup.connect();
      try {
        await setup.query("BEGIN");
        await setup.query("CREATE TABLE improv_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
        for (const migration of POSTGRES_MIGRATIONS.slice(0, 5)) await setup.query(migration);
        await setup.query("INSERT INTO improv_meta VALUES ('schema_version', '5')");
        await setup.query("INSERT INTO improv_agents (id, role, version, epoch, first, length, context, created_at, updated_at) VALUES ('a1', 'r', 0, 0, 0, 3, $1, now(), now())", [Buffer.from(encodeContext(EMPTY_CONTEXT))]);
        for (let n = 0; n < 3; n += 1) {
          await setup.query("INSERT INTO improv_records (agent_id, position, record) VALUES ('a1', $1, $2)", [n, JSON.stringify({ call_id: `c${n}`, trace_id: "t" })]);
          await setup.query("INSERT INTO improv_values (agent_id, ref, seq, value, bytes) VALUES ('a1', $1, $2, $3, 8)", [`c${n}`, n + 1, `"v${n}"`]);
        }
        await setup.query("COMMIT");
      } finally {
        await setup.end();
      }
      const store = openStore(url);
      await expectMigratedValues(store);
      await store.forget("a1");
      expect(await store.open("a1", "r")).toMatchObject({ length: 0, records: [], values: [] });
      expect(await store.write("a1", { record: JSON.stringify({ call_id: "again" }) })).toMatchObject({ ok: true, position: 0 });
    });

    test("turn connections the server ends are made again; calls go on", async () => {
      const url = await freshDatabase();
      const store = openStore(url);
      const counter = await Agent.open("counter", { store, id: "s2", provider: provider() });
      await counter.inc();
      const database = url.split("/").at(-1) as string;
      const admin = new pg.Client({ connectionString: (server as PostgresServer).url });
      await admin.connect();
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", [database]);
      await admin.end();
      const outcomes = [];
      for (let call = 0; call < 4; call += 1) outcomes.push(await counter.inc());
      // A call may meet the ended connection: it ends typed; the calls after it succeed.
      expect(outcomes.every((outcome) => outcome.ok || outcome.errorType === "store")).toBe(true);
      expect(outcomes.slice(-2).every((outcome) => outcome.ok)).toBe(true);
      expect(outcomes.at(-1)?.value).toBe(1 + outcomes.filter((outcome) => outcome.ok).length);
      // Each call's record is kept when its write went through, a failed call's too (one that
      // could not be brought up to date may still write its record); the copy holds the same.
      const stored = (await store.records("s2")).map((text) => (JSON.parse(text) as { call_id: string }).call_id);
      expect(stored).toEqual(Agent.history(counter).map((record) => record.call_id));
      for (const outcome of outcomes) {
        if (outcome.ok) expect(stored).toContain(outcome.callId);
        else if (!stored.includes(outcome.callId)) expect(outcome.errorType).toBe("store");
      }
    });

    test("prune checks its options: an unknown name, a missing id or a bad keepLast is refused and deletes nothing", async () => {
      const store = openStore(await freshDatabase());
      await store.open("a1", "r");
      for (let n = 0; n < 3; n += 1) await store.write("a1", { record: JSON.stringify({ call_id: `c${n}` }) });
      await expect(store.prune({ id: "a1", keepLast: 0, dryRun: true } as never)).rejects.toThrow(new TypeError('Unknown option "dryRun" for store.prune(). Valid options: id, keepLast.'));
      await expect(store.prune({ id: "a1", keepLst: 1 } as never)).rejects.toThrow(new TypeError('Unknown option "keepLst" for store.prune(). Did you mean "keepLast"? Valid options: id, keepLast.'));
      await expect(store.prune({ keepLast: 1 } as never)).rejects.toThrow(new TypeError('store.prune() option "id" must be the agent\'s id, a string; got undefined.'));
      await expect(store.prune({ id: "a1", keepLast: -1 })).rejects.toThrow(new RangeError('store.prune() option "keepLast" must be a whole number of records, 0 or more; got the number -1.'));
      expect(await store.records("a1")).toHaveLength(3);
      expect(await store.prune({ id: "a1", keepLast: 0 })).toBe(3);
    });

    test("the store's label carries no password", () => {
      const store = new PostgresStore("postgres://app:secret@127.0.0.1:5432/app?sslmode=disable");
      expect(store.label).toBe("postgres://app@127.0.0.1:5432/app");
      void store.close();
    });

    test("a server that goes away turns a call into a store outcome; nothing of it is kept", async () => {
      const url = await freshDatabase();
      const store = openStore(url);
      const counter = await Agent.open("counter", { store, id: "c1", provider: provider() });
      await counter.inc();
      // The database stops taking connections and ends those it has, as when its server goes down.
      const database = url.split("/").at(-1) as string;
      const admin = new pg.Client({ connectionString: (server as PostgresServer).url });
      await admin.connect();
      await admin.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS false`);
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", [database]);
      await admin.end();
      const r = await counter.inc();
      expect(r).toMatchObject({ errorType: "store", retriable: true });
      expect(r.errorMessage).toContain(store.label);
      expect(Agent.history(counter)).toHaveLength(1);
      expect(counter.runtimeContext).toEqual({ n: 1 });
    });

    test("a commit held up past the statement timeout is ended by the server: its call says nothing of it was kept, and nothing of it ever is", async () => {
      const saved = { ...postgresTimings };
      Object.assign(postgresTimings, { queryMs: 3_000, statementMs: 1_500 });
      try {
        const url = await freshDatabase();
        const store = openStore(url);
        const counter = await Agent.open("counter", { store, id: "held", provider: provider(), reuse: false });
        await counter.inc();
        // Another session holds the agent's row, as a long transaction of another program would.
        const blocker = new pg.Client({ connectionString: url });
        await blocker.connect();
        await blocker.query("BEGIN");
        await blocker.query("SELECT 1 FROM improv_agents WHERE id = 'held' FOR UPDATE");
        const held = await counter.inc();
        expect(held).toMatchObject({ errorType: "store", retriable: true });
        await blocker.query("COMMIT");
        await blocker.end();
        // Had the server gone on with the commit, it would land now that the row is free.
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        const check = new pg.Client({ connectionString: url });
        await check.connect();
        const { rows } = await check.query("SELECT count(*)::int AS records FROM improv_records WHERE agent_id = 'held'");
        await check.end();
        expect(rows[0]).toEqual({ records: 1 });
        expect((await counter.inc()).value).toBe(2);
      } finally {
        Object.assign(postgresTimings, saved);
      }
    }, 30_000);

    test("a call whose argument, value or context holds U+0000 is recorded (PostgreSQL's json cannot hold it: kept as U+FFFD); an escaped backslash before u0000 stays as it is", async () => {
      const store = openStore(await freshDatabase());
      const echo = await Agent.open("echo", { store, id: "nul", provider: new ScriptedProvider({ programs: { say: "context.last = args[0]; return args[0] + '!'" } }), reuse: false });
      const said = await echo.say("a\u0000b \\u0000 c");
      expect(said).toMatchObject({ ok: true, value: "a\u0000b \\u0000 c!" });
      const records = await store.records("nul");
      expect(records).toHaveLength(1);
      const record = JSON.parse(records[0] as string) as HistoryRecord;
      expect(record.args).toEqual(["a\ufffdb \\u0000 c"]);
      expect((await store.traceRecords(record.trace_id as string)).map((entry) => entry.agentId)).toEqual(["nul"]);
    });

    test("connections the server ends while calls use them end those calls typed, never the host", async () => {
      const url = await freshDatabase();
      const store = openStore(url);
      const counters = await Promise.all(["a", "b", "c"].map((id) => Agent.open("counter", { store, id, provider: provider() })));
      const database = url.split("/").at(-1) as string;
      const admin = new pg.Client({ connectionString: (server as PostgresServer).url });
      await admin.connect();
      try {
        for (let round = 0; round < 15; round += 1) {
          const calls = counters.map((counter) => counter.inc());
          await new Promise((resolve) => setTimeout(resolve, round % 4));
          await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [database]);
          for (const outcome of await Promise.all(calls)) {
            if (!outcome.ok) expect(outcome).toMatchObject({ errorType: "store", retriable: true });
          }
        }
      } finally {
        await admin.end();
      }
      // Each agent's context still equals what its ok records committed.
      for (const counter of counters) {
        const oks = Agent.history(counter).filter((record) => record.outcome_summary.ok).length;
        expect(counter.runtimeContext.n ?? 0).toBe(oks);
      }
    });
  });
});
