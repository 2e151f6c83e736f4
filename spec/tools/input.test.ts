import { describe, expect, test } from "vitest";
import { z } from "zod";
import { Agent, ScriptedProvider, type AgentOptions, type HistoryRecord, type Tool } from "../../src/index.ts";

/** Runs `program` as the method `run` of an agent granted `tools`; returns the outcome and the call's record. */
async function runWith(program: string, tools: AgentOptions["tools"]) {
  const provider = new ScriptedProvider({ programs: { run: program, "helper.noop": "return 1" } });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const agent = Agent.for("inputs", { provider, tools }) as any;
  const outcome = await agent.run();
  return { outcome, record: (Agent.history(agent) as readonly HistoryRecord[]).at(-1)! };
}

/** A tool that keeps what `execute` was given. */
function keeper(inputSchema: unknown = {}) {
  const received: unknown[] = [];
  const tool: Tool = { description: "Keeps its input.", inputSchema, annotations: { readOnlyHint: true }, execute: (input) => (received.push(input), "kept") };
  return { tool, received };
}

const CALL = (input: string) => `${input.includes(";") ? input.slice(0, input.lastIndexOf(";") + 1) : ""} try { return { ok: true, value: await tools.t(${input.includes(";") ? input.slice(input.lastIndexOf(";") + 1) : input}) } } catch (e) { return { ok: false, name: e.name, message: e.message } }`;

describe("a tool's input is copied as JSON data before its schema check and execute", () => {
  // What JSON cannot hold without losing or changing it: the program's mistake, a TypeError naming the place.
  const refused: [string, string, RegExp][] = [
    ["a Map", "{ m: new Map([[1, 2]]) }", /^tools\.t\(input\): input\.m is a Map, which JSON cannot hold; send Object\.fromEntries\(map\) or an array of pairs\.$/],
    ["a Set", "{ list: [1, new Set([1])] }", /input\.list\[1\] is a Set, which JSON cannot hold; send an array/],
    ["a BigInt", "{ n: 10n }", /input\.n is a BigInt, which JSON cannot hold; send it as a string/],
    ["a RegExp", "{ r: /a+/g }", /input\.r is a RegExp, which JSON cannot hold; send its source as a string/],
    ["an Error", "{ e: new TypeError('bad') }", /input\.e is a TypeError, which JSON cannot hold; send its message as a string/],
    ["a Uint8Array", "{ bytes: new Uint8Array([1, 2]) }", /input\.bytes is a Uint8Array, which JSON cannot hold; send an array of numbers or a base64 string/],
    ["an ArrayBuffer", "{ buffer: new ArrayBuffer(4) }", /input\.buffer is an ArrayBuffer, which JSON cannot hold/],
    ["a DataView", "{ view: new DataView(new ArrayBuffer(4)) }", /input\.view is a DataView, which JSON cannot hold/],
    ["a cycle", "const a = { n: 1 }; a.self = a; a", /input\.self refers back to a value that contains it \(a cycle\), which JSON cannot hold/],
    ["NaN", "{ avg: 0 / 0 }", /input\.avg is NaN, which JSON cannot hold; send a number or null/],
    ["Infinity", "[1, 1 / 0]", /input\[1\] is Infinity, which JSON cannot hold/],
    ["-Infinity at the top", "-1 / 0", /input is -Infinity, which JSON cannot hold/],
    ["nesting past 200 levels", "let v = {}; for (let i = 0; i < 300; i++) v = { v }; v", /input(\.v)+ is nested deeper than 200 levels/],
    // What the sandbox can only write as text, never given to a tool as if the program had written that text.
    ["a function", "{ f() {} }", /^tools\.t\(input\): input\.f is a function \(\[Function: f\]\), which JSON cannot hold; send data, not code\.$/],
    ["a toJSON method", "{ a: 1, toJSON() { return 2 } }", /input\.toJSON is a function \(\[Function: toJSON\]\), which JSON cannot hold/],
    ["a symbol", "{ s: Symbol('x') }", /input\.s is a symbol \(\[Symbol\(x\)\]\), which JSON cannot hold/],
    ["a getter that throws", "{ get x() { throw new Error('no') } }", /input\.x is a getter that threw, which JSON cannot hold; send the value itself/],
    ["a promise", "{ p: Promise.resolve(1) }", /input\.p is a Promise, which JSON cannot hold; await it and send its value/],
    ["a proxy whose keys cannot be read", "new Proxy({}, { ownKeys() { throw new Error('no') } })", /^tools\.t\(input\): input is an object whose properties could not be read, which JSON cannot hold/],
  ];
  test.each(refused)("%s is refused in the program, and the tool never runs", async (_name, input, message) => {
    const { tool, received } = keeper();
    const { outcome, record } = await runWith(CALL(input), { t: tool });
    expect(outcome.value).toEqual({ ok: false, name: "TypeError", message: expect.stringMatching(message) });
    expect(received).toEqual([]);
    expect(record.tool_calls?.[0]).toMatchObject({ tool: "t", ok: false, error_type: "invalid_input" });
    // The record's input stays JSON-safe (stand-ins for what JSON cannot hold), within its bound.
    expect(JSON.stringify(record.tool_calls?.[0]?.input).length).toBeLessThanOrEqual(1_000);
  });

  // What JSON writes in a fixed way: converted as JSON.stringify would.
  const converted: [string, string, unknown][] = [
    ["a Date, as its ISO text", "{ when: new Date(0) }", { when: "1970-01-01T00:00:00.000Z" }],
    ["an invalid Date, as null", "{ when: new Date('no') }", { when: null }],
    ["undefined in an object, left out", "{ a: undefined, b: 1 }", { b: 1 }],
    ["undefined and holes in an array, as null", "[undefined, , 3]", [null, null, 3]],
    ["-0, as 0", "{ z: -0 }", { z: 0 }],
    ["a class instance, as its own fields", "class P { constructor() { this.x = 1 } get y() { return 2 } }; new P()", { x: 1 }],
    ["a part shared twice, copied twice", "const s = { a: 1 }; ({ x: s, y: [s] })", { x: { a: 1 }, y: [{ a: 1 }] }],
  ];
  test.each(converted)("%s", async (_name, input, expected) => {
    const { tool, received } = keeper();
    const { outcome, record } = await runWith(CALL(input), { t: tool });
    expect(outcome.value).toEqual({ ok: true, value: "kept" });
    expect(received).toHaveLength(1);
    expect(received[0]).toStrictEqual(expected);
    expect(record.tool_calls?.[0]?.input).toStrictEqual(expected);
  });

  test("what execute is given is plain data of its own: no part of it is shared with another", async () => {
    const { tool, received } = keeper();
    await runWith(CALL("const s = { a: 1 }; ({ x: s, y: s })"), { t: tool });
    const [input] = received as [{ x: object; y: object }];
    expect(input.x).not.toBe(input.y);
    expect(Object.getPrototypeOf(input)).toBe(Object.prototype);
  });

  test("the schema checks the copy: a Date passes a JSON Schema or zod string field, and execute is given the text", async () => {
    const json = keeper({ type: "object", properties: { when: { type: "string" } }, required: ["when"], additionalProperties: false });
    const zod = keeper(z.object({ when: z.string() }).strict());
    const { outcome } = await runWith("return [await tools.json({ when: new Date(0), gone: undefined }), await tools.zod({ when: new Date(0) })]", { json: json.tool, zod: zod.tool });
    expect(outcome.value).toEqual(["kept", "kept"]);
    expect(json.received).toEqual([{ when: "1970-01-01T00:00:00.000Z" }]);
    expect(zod.received).toEqual([{ when: "1970-01-01T00:00:00.000Z" }]);
  });

  test("a Map the schema would accept as an object is still refused: the schema never sees what JSON cannot hold", async () => {
    const { tool, received } = keeper({ type: "object" });
    const { outcome } = await runWith(CALL("{ m: new Map() }"), { t: tool });
    expect(outcome.value).toMatchObject({ ok: false, name: "TypeError", message: expect.stringContaining("input.m is a Map") });
    expect(received).toEqual([]);
  });

  test("a delegated agent's handle in the input reaches the tool as JSON data only", async () => {
    const { tool, received } = keeper();
    const { outcome } = await runWith(CALL("{ helper: delegate('helper') }"), { t: tool });
    expect(outcome.value).toEqual({ ok: true, value: "kept" });
    expect(JSON.parse(JSON.stringify(received[0]))).toStrictEqual(received[0]);
  });

  test("an input just within the 1,000,000-character limit for a tool's input is copied whole", async () => {
    const { tool, received } = keeper();
    const program = `const items = []; let size = 2;
      for (let i = 0; size < 999_000; i++) { const item = { k: i, ok: i % 2 === 0, at: null, s: "x" }; size += JSON.stringify(item).length + 1; items.push(item); }
      return [JSON.stringify(items).length, await tools.t(items)]`;
    const { outcome } = await runWith(program, { t: tool });
    const [size, answer] = outcome.value as [number, string];
    expect(size).toBeGreaterThan(999_000);
    expect(size).toBeLessThanOrEqual(1_000_000);
    expect(answer).toBe("kept");
    expect(JSON.stringify(received[0]).length).toBe(size);
  });

  test("no input at all stays undefined (the schema decides)", async () => {
    const { tool, received } = keeper();
    const { outcome } = await runWith("return await tools.t()", { t: tool });
    expect(outcome.value).toBe("kept");
    expect(received).toEqual([undefined]);
  });
});
