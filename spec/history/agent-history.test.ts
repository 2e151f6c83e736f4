import { describe, expect, test } from "vitest";
import { Agent, type HistoryRecord, ScriptedProvider } from "../../src/index.ts";
import { normalizeHistory } from "../../src/history/normalize.ts";
import { AgentHistory } from "../../src/history/agent-history.ts";
import { TextArena } from "../../src/history/text-arena.ts";

function record(index: number, extra: Partial<HistoryRecord> = {}): HistoryRecord {
  return {
    call_id: `call-${index}`,
    timestamp: new Date(1_700_000_000_000 + index).toISOString(),
    speaker: "user",
    method_name: "add",
    args: [index],
    kwargs: {},
    outcome_summary: { status: "ok", ok: true, error_type: null, retriable: false, value_class: "number" },
    ...extra,
  };
}

describe("TextArena", () => {
  test("gives back every text exactly, across block boundaries, multi-byte characters and oversized texts", () => {
    const arena = new TextArena();
    const texts: string[] = [];
    for (let index = 0; index < 5_000; index += 1) {
      const kind = index % 5;
      if (kind === 0) texts.push(`ascii ${index}`);
      else if (kind === 1) texts.push(`é ü 漢字 ${index} 🎉`.repeat((index % 40) + 1));
      else if (kind === 2) texts.push("");
      else if (kind === 3) texts.push("x".repeat(index * 7));
      else texts.push(index === 4_999 ? "🎉".repeat(200_000) : `${index}`);
    }
    for (const text of texts) arena.push(text);

    expect(arena.count).toBe(texts.length);
    expect(arena.bytes).toBe(texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0));
    texts.forEach((text, index) => {
      if (arena.at(index) !== text) throw new Error(`text ${index} came back changed`);
    });
    expect(arena.slice(4_990)).toEqual(texts.slice(4_990));
  });

  test("slice clamps to what is held", () => {
    const arena = new TextArena();
    for (const text of ["a", "b", "c"]) arena.push(text);
    expect(arena.slice(-5)).toEqual(["a", "b", "c"]);
    expect(arena.slice(1, 99)).toEqual(["b", "c"]);
    expect(arena.slice(3)).toEqual([]);
  });
});

describe("AgentHistory", () => {
  test("replace takes records one at a time from the normaliser and starts a new epoch", () => {
    const store = new AgentHistory();
    store.append({ record: record(0), json: JSON.stringify(record(0)) });
    store.mirrored = 1;
    const before = store.epoch;

    store.replace(normalizeHistory([record(1), { bad: true }, record(2)], false));

    expect(store.length).toBe(2);
    expect(store.epoch).toBe(before + 1);
    expect(store.mirrored).toBe(0);
    expect(store.snapshot().map((entry) => entry.call_id)).toEqual(["call-1", "call-2"]);
    expect(store.latest(1).map((entry) => entry.call_id)).toEqual(["call-2"]);
    expect(store.latest(10)).toHaveLength(2);
    expect(store.since(1).map((json) => JSON.parse(json).call_id)).toEqual(["call-2"]);
  });

  test("since() gives the texts as stored, the newest too, after appends and replacements alike", () => {
    const store = new AgentHistory();
    const texts = (start: number, end?: number) => store.since(start, end).map((json) => JSON.parse(json).call_id);
    expect(store.since(0)).toEqual([]);
    const multiByte = record(0, { args: ["ünïcode ✓ 𝄞"] });
    store.append({ record: multiByte, json: JSON.stringify(multiByte) });
    expect(store.since(0)).toEqual([JSON.stringify(multiByte)]);
    for (let index = 1; index < 3; index += 1) store.append({ record: record(index), json: JSON.stringify(record(index)) });
    expect(texts(2)).toEqual(["call-2"]);
    expect(texts(1)).toEqual(["call-1", "call-2"]);
    expect(texts(1, 2)).toEqual(["call-1"]);
    store.replace(normalizeHistory([record(7), record(8)], false));
    expect(texts(1)).toEqual(["call-8"]);
    store.replace([]);
    expect(store.since(0)).toEqual([]);
    store.appendJson(JSON.stringify(record(9)));
    expect(texts(0)).toEqual(["call-9"]);
  });

  test("latest() follows appends and replacements, never a stale record", () => {
    const store = new AgentHistory();
    const ids = (count: number) => store.latest(count).map((entry) => entry.call_id);
    expect(ids(3)).toEqual([]);
    for (let index = 0; index < 4; index += 1) store.append({ record: record(index), json: JSON.stringify(record(index)) });
    expect(ids(3)).toEqual(["call-1", "call-2", "call-3"]);
    store.append({ record: record(4), json: JSON.stringify(record(4)) });
    expect(ids(3)).toEqual(["call-2", "call-3", "call-4"]);
    expect(ids(0)).toEqual([]);
    expect(ids(5)).toEqual(["call-0", "call-1", "call-2", "call-3", "call-4"]);
    store.replace([5, 6, 7, 8, 9].map((index) => JSON.stringify(record(index))));
    expect(ids(3)).toEqual(["call-7", "call-8", "call-9"]);
    expect(Object.isFrozen(store.latest(1)[0]?.outcome_summary)).toBe(true);
  });

  test("a normaliser that throws part-way leaves the history as it was", () => {
    const store = new AgentHistory();
    store.append({ record: record(0), json: JSON.stringify(record(0)) });
    function* failing(): Generator<string> {
      yield JSON.stringify(record(1));
      throw new Error("boom");
    }
    expect(() => store.replace(failing())).toThrow("boom");
    expect(store.snapshot().map((entry) => entry.call_id)).toEqual(["call-0"]);
  });
});

describe("history text survives storage unchanged", () => {
  test("lone surrogates, emoji and long non-ASCII strings read back as they were given", async () => {
    const agent = Agent.for("storage", {
      provider: new ScriptedProvider({ programs: { read: "return context.conversation_history.map((r) => r.args[0])" } }),
    });
    const values = ["\ud800 lone high", "lone low \udfff", "🎉 party", "漢字".repeat(2_000), "plain"];
    agent.remember({ conversation_history: values.map((value, index) => record(index, { args: [value] })) });

    expect(Agent.history(agent).map((entry) => entry.args[0])).toEqual(values);
    const outcome = await agent.read();
    expect(outcome.errorMessage).toBeUndefined();
    expect(outcome.value).toEqual(values);
  });
});
