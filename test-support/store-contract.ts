import { describe, expect, test } from "vitest";
import { KeptValues } from "../src/history/kept-values.ts";
import { StoreError, type Store } from "../src/store/store.ts";

/** A JSON record text with a recognisable call id. */
export const record = (n: number) => JSON.stringify({ call_id: `c${n}` });
const ids = (records: readonly string[]) => records.map((text) => (JSON.parse(text) as { call_id: string }).call_id);

/**
 * The contract every Store keeps, run against each implementation (as one suite runs against
 * every adapter). `make` returns a fresh, empty store.
 */
/**
 * What a store migrated from before kept values lay in a ring must still hold: agent `a1`'s
 * three records (trace `t`) and values `c0`…`c2` (`"v0"`…) as the older schema kept them, and
 * the next values held to their count.
 */
export async function expectMigratedValues(store: Store): Promise<void> {
    const opened = await store.open("a1", "r");
    expect(opened.records).toHaveLength(3);
    expect(opened.values).toEqual([["c0", '"v0"'], ["c1", '"v1"'], ["c2", '"v2"']]);
    expect(await store.value("a1", "c1")).toBe('"v1"');
    expect(await store.traceRecords("t")).toHaveLength(3);
    for (let n = 3; n < 5; n += 1) expect(await store.write("a1", { record: JSON.stringify({ call_id: `c${n}` }), value: { ref: `c${n}`, text: `"v${n}"`, count: 3, maxBytes: 1_000 } })).toMatchObject({ ok: true, position: n });
    expect((await store.open("a1", "r")).values).toEqual([["c2", '"v2"'], ["c3", '"v3"'], ["c4", '"v4"']]);
    expect(await store.value("a1", "c1")).toBeUndefined();
}

export function storeContract(name: string, make: () => Promise<Store>): void {
  describe(`${name}: the Store contract`, () => {
    test("open creates an agent once; opening it again finds it; another role is a TypeError naming both", async () => {
      const store = await make();
      const first = await store.open("a1", "calculator");
      expect(first).toMatchObject({ role: "calculator", version: 0, epoch: 0, length: 0, records: [], reset: true, context: { values: {}, appKeys: [] } });
      await store.write("a1", { record: record(1) });
      expect(await store.open("a1", "calculator")).toMatchObject({ length: 1, records: [record(1)] });
      await expect(store.open("a1", "translator")).rejects.toThrow('Agent "a1" is stored with role "calculator", not "translator". Open it with role "calculator", or use another id.');
      await store.close();
    });

    test("records are appended at contiguous positions and come back from where a view stands", async () => {
      const store = await make();
      await store.open("a1", "r");
      for (let n = 0; n < 5; n += 1) expect(await store.write("a1", { record: record(n) })).toMatchObject({ ok: true, position: n, length: n + 1 });
      const changes = await store.changes("a1", { version: 0, epoch: 0, length: 3 });
      expect(changes).toMatchObject({ length: 5, reset: false });
      expect(ids(changes?.records ?? [])).toEqual(["c3", "c4"]);
      expect(changes?.context).toBeUndefined();
      expect(await store.changes("a1", { version: 0, epoch: 0, length: 5 })).toBeUndefined();
      expect(ids(await store.records("a1", 2))).toEqual(["c3", "c4"]);
      expect(ids(await store.records("a1"))).toEqual(["c0", "c1", "c2", "c3", "c4"]);
      await store.close();
    });

    test("a context write based on a stale version is refused as a conflict and changes nothing", async () => {
      const store = await make();
      await store.open("a1", "r");
      const context = { values: { n: 1 }, appKeys: [] };
      expect(await store.write("a1", { record: record(1), context, baseVersion: 0 })).toMatchObject({ ok: true, version: 1 });
      expect(await store.write("a1", { record: record(2), context: { values: { n: 99 }, appKeys: [] }, baseVersion: 0 })).toEqual({ ok: false, conflict: true, version: 1 });
      const changes = await store.changes("a1", { version: 0, epoch: 0, length: 0 });
      expect(changes?.context).toEqual(context);
      expect(ids(changes?.records ?? [])).toEqual(["c1"]);
      await store.close();
    });

    test("the context keeps what structured clone keeps: Date, Map, Set, typed arrays, cycles", async () => {
      const store = await make();
      await store.open("a1", "r");
      const cyclic: Record<string, unknown> = { name: "loop" };
      cyclic.self = cyclic;
      const values = { when: new Date(0), map: new Map([[1, "one"]]), set: new Set(["a"]), bytes: new Uint8Array([1, 2]), cyclic, big: 10n ** 20n };
      await store.write("a1", { context: { values, appKeys: ["when"] }, baseVersion: 0 });
      const back = (await store.open("a1", "r")).context;
      expect(back?.appKeys).toEqual(["when"]);
      expect(back?.values).toEqual(values);
      const loop = back?.values.cyclic as Record<string, unknown>;
      expect(loop.self).toBe(loop);
      await store.close();
    });

    test("kept values: the latest `count` within `maxBytes` remain, as the in-memory rule keeps them, whatever count each write names", async () => {
      const store = await make();
      await store.open("v1", "r");
      const model = new KeptValues();
      const refs: string[] = [];
      let n = 0;
      const keep = async (count: number, maxBytes: number, text: string) => {
        const ref = `v${n}`;
        refs.push(ref);
        await store.write("v1", { record: record(n), value: { ref, text, count, maxBytes } });
        model.keep({ count, maxBytes }, ref, text);
        n += 1;
      };
      const check = async () => {
        const expected = [...model.entries()];
        expect((await store.open("v1", "r")).values).toEqual(expected);
        const held = new Map(expected);
        for (const ref of refs) expect(await store.value("v1", ref)).toBe(held.get(ref));
      };
      for (let i = 0; i < 10; i += 1) await keep(3, 1_000_000, `"small ${i}"`);
      await check();
      // A larger count keeps what is there and more; a smaller one drops down to it at once.
      for (let i = 0; i < 3; i += 1) await keep(5, 1_000_000, `"more ${i}"`);
      await check();
      await keep(2, 1_000_000, '"fewer"');
      await check();
      for (let i = 0; i < 4; i += 1) await keep(2, 1_000_000, `"two ${i}"`);
      await check();
      // Values large for the byte bound are held to it at once.
      for (let i = 0; i < 3; i += 1) await keep(10, 500, `"${"x".repeat(100)}${i}"`);
      await check();
      await store.close();
    });

    test("replacing the history starts a new epoch; a view of the old one is reset", async () => {
      const store = await make();
      await store.open("a1", "r");
      await store.write("a1", { record: record(1) });
      expect(await store.write("a1", { replaceHistory: [record(7), record(8)] })).toMatchObject({ ok: true, epoch: 1, length: 2 });
      const changes = await store.changes("a1", { version: 0, epoch: 0, length: 1 });
      expect(changes).toMatchObject({ epoch: 1, length: 2, reset: true });
      expect(ids(changes?.records ?? [])).toEqual(["c7", "c8"]);
      await store.close();
    });

    test("prune keeps the latest records, and a view is reset to them", async () => {
      const store = await make();
      await store.open("a1", "r");
      for (let n = 0; n < 10; n += 1) await store.write("a1", { record: record(n) });
      expect(await store.prune({ id: "a1", keepLast: 3 })).toBe(7);
      const changes = await store.changes("a1", { version: 0, epoch: 0, length: 10 });
      expect(changes).toMatchObject({ length: 3, reset: true });
      expect(ids(changes?.records ?? [])).toEqual(["c7", "c8", "c9"]);
      await store.write("a1", { record: record(10) });
      expect(ids(await store.records("a1"))).toEqual(["c7", "c8", "c9", "c10"]);
      expect(await store.prune({ id: "a1", keepLast: 10 })).toBe(0);
      await store.close();
    });

    test("forget deletes an agent and the agents delegated from it, and no other", async () => {
      const store = await make();
      for (const id of ["a1", "a1/helper", "a1/helper/deeper", "a10", "a1_x", "A1/other", "a_%", "a_%/child", "ab%/child"]) {
        await store.open(id, "r");
        await store.write(id, { record: record(1) });
      }
      await store.forget("a1");
      await store.forget("a_%");
      expect((await store.agents()).map((agent) => agent.id)).toEqual(["A1/other", "a10", "a1_x", "ab%/child"]);
      await expect(store.changes("a1", { version: 0, epoch: 0, length: 0 })).rejects.toThrow(StoreError);
      // Its records and values went with it: the id starts over.
      expect(await store.open("a1/helper", "r")).toMatchObject({ length: 0, records: [], values: [] });
      expect(await store.write("a1/helper", { record: record(2) })).toMatchObject({ ok: true, position: 0 });
      await store.close();
    });

    test("agents lists every agent with its role, record count and latest write", async () => {
      const store = await make();
      await store.open("b", "translator");
      await store.open("a", "calculator");
      await store.write("a", { record: record(1) });
      const agents = await store.agents();
      expect(agents.map(({ id, role, records }) => ({ id, role, records }))).toEqual([
        { id: "a", role: "calculator", records: 1 },
        { id: "b", role: "translator", records: 0 },
      ]);
      expect(Number.isNaN(Date.parse(agents[0]?.updatedAt ?? ""))).toBe(false);
      await store.close();
    });

    test("kept programs: why each was kept, uses and failures counted, dropped after failures in a row, a count for a replaced program never charged to its successor", async () => {
      const store = await make();
      const program = { key: "calc.add(2)@v1", role: "calc", method: "add", code: "return args[0] + args[1]", why: "it reads the call's input" };
      await store.keepProgram?.(program);
      expect(await store.programRan?.(program.key, program.code, "ok", 2)).toBe(false);
      expect(await store.programRan?.(program.key, program.code, "mistake", 2)).toBe(false);
      expect(await store.program?.(program.key)).toMatchObject({ code: program.code, why: program.why, uses: 1, failures: 1, failuresInRow: 1 });
      // Another process replaced the program meanwhile: a late count for the old one changes nothing.
      const successor = { ...program, code: "return args[0] + args[1] + 0", why: "its repair reads the call's input" };
      await store.keepProgram?.(successor);
      expect(await store.programRan?.(program.key, program.code, "mistake", 1)).toBe(false);
      expect(await store.programRan?.(program.key, program.code, "ok", 1)).toBe(false);
      expect(await store.program?.(program.key)).toMatchObject({ code: successor.code, why: successor.why, uses: 0, failures: 0, failuresInRow: 0 });
      // Its own failures in a row drop it.
      expect(await store.programRan?.(program.key, successor.code, "mistake", 2)).toBe(false);
      expect(await store.programRan?.(program.key, successor.code, "mistake", 2)).toBe(true);
      expect(await store.program?.(program.key)).toBeUndefined();
      expect(await store.programs?.()).toEqual([]);
      await store.close();
    });

    test("a closed store refuses work with a StoreError that names it", async () => {
      const store = await make();
      await store.close();
      const failure = store.open("a1", "r");
      await expect(failure).rejects.toThrow(StoreError);
      await expect(failure).rejects.toThrow(store.label);
    });
  });
}
