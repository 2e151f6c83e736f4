import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider, type AgentOptions, type HistoryRecord, type Tool } from "../../src/index.ts";
import { watchHost } from "./harness.ts";

watchHost();

/** Runs `program` as the method `run` of an agent granted `tools`; returns the outcome and the call's record. */
async function runWith(program: string, tools: AgentOptions["tools"], options: AgentOptions = {}) {
  const provider = new ScriptedProvider({ programs: { run: program } });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const agent = Agent.for("hostile-tools", { provider, tools, executionTimeoutMs: 2_000, ...options }) as any;
  const outcome = await agent.run();
  const record = (Agent.history(agent) as readonly HistoryRecord[]).at(-1)!;
  return { outcome, record, provider };
}

const readOnly = { readOnlyHint: true } as const;
const returning = (value: () => unknown): Tool => ({ description: "Returns a value.", inputSchema: {}, annotations: readOnly, execute: value });
const CATCH = "try { return { ok: true, value: await tools.t({}) } } catch (e) { return { ok: false, name: e.name, message: e.message } }";

describe("hostile tool results: refused with the place named, never a host crash", () => {
  class Point {
    x = 1;
    y = 2;
    norm() {
      return 3;
    }
  }
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  const cases: [string, () => unknown, string | RegExp | undefined, unknown?][] = [
    ["a function", () => () => 1, /result is a function/],
    ["a cycle", () => cyclic, /result.self refers back to a value that contains it/],
    ["a getter that throws", () => ({ get boom() { throw new Error("getter exploded"); } }), /reading result.boom threw \(getter exploded\)/],
    ["a Proxy", () => new Proxy({ a: 1 }, {}), /result is a Proxy/],
    ["a Proxy whose traps throw (even reading then)", () => new Proxy({}, { get: () => { throw new Error("trap"); } }), /tools.t: trap/],
    ["a 200 MB string", () => "x".repeat(200 * 2 ** 20), /larger than the 8000000-character limit/],
    ["a Map", () => new Map([[1, 2]]), /result is a Map/],
    ["a BigInt deep inside", () => ({ list: [1, { n: 10n }] }), /result.list\[1\].n is a BigInt/],
    ["a class instance, copied as its own fields", () => new Point(), undefined, { x: 1, y: 2 }],
    ["a Date, as its ISO text", () => new Date(0), undefined, "1970-01-01T00:00:00.000Z"],
    ["a billion-laughs graph", () => {
      let node: unknown = "lol";
      for (let i = 0; i < 40; i += 1) node = [node, node];
      return node;
    }, /larger than the 8000000-character limit/],
  ];
  test.each(cases)("%s", async (_name, value, refused, copied) => {
    const { outcome } = await runWith(CATCH, { t: returning(value) });
    expect(outcome.ok).toBe(true);
    if (refused === undefined) {
      expect(outcome.value).toEqual({ ok: true, value: copied });
    } else {
      expect(outcome.value).toMatchObject({ ok: false, name: "ToolError" });
      expect((outcome.value as { message: string }).message).toMatch(refused);
    }
  });

  test("a tool that throws a non-Error, or an error whose message holds host paths", async () => {
    const objectThrower: Tool = { description: "", inputSchema: {}, execute: () => Promise.reject({ secret: "token-123" }) };
    const pathThrower: Tool = { description: "", inputSchema: {}, execute: () => { throw new Error("failed at /home/app/node_modules/x/index.js:10:5 and C:\\Users\\me\\app.js"); } };
    const a = await runWith("try { await tools.a({}) } catch (e) { return e.message }", { a: objectThrower });
    expect(a.outcome.value).toBe("tools.a: it failed with a value that is not an Error");
    const b = await runWith("try { await tools.b({}) } catch (e) { return e.message }", { b: pathThrower });
    expect(b.outcome.value).not.toMatch(/home|Users|node_modules/);
    expect(b.outcome.value).toContain("[path]");
  });

  test("a result whose getter throws an error naming host paths: the program and the record see the getter's place, never the paths", async () => {
    const secret = "ENOENT: no such file or directory, open '/home/deploy/app/config/.env' (see file:///srv/app/dist/index.js:10:5 and C:\\Users\\deploy\\app\\secrets.json)";
    const leaky: Tool = { description: "", inputSchema: {}, annotations: readOnly, execute: () => ({ config: { get token() { throw new Error(secret); } } }) };
    const { outcome, record } = await runWith("try { await tools.leaky({}) } catch (e) { return e.message }", { leaky });
    expect(outcome.value).toMatch(/^tools\.leaky returned a value a program cannot receive: reading result\.config\.token threw \(ENOENT: no such file or directory, open '\[path\]'/);
    expect(outcome.value).not.toMatch(/deploy|srv|Users|secrets|\.env/);
    expect(record.tool_calls?.[0]?.error_message).not.toMatch(/deploy|srv|Users|secrets|\.env/);
  });

  test("an error whose message getter throws an error naming a host path: the program is told it could not be read", async () => {
    const error = new Error("x");
    Object.defineProperty(error, "message", { get: () => { throw new Error("at /home/deploy/app/node_modules/lib/index.js:1:1"); } });
    const tricky: Tool = { description: "", inputSchema: {}, annotations: readOnly, execute: () => Promise.reject(error) };
    const { outcome } = await runWith("try { await tools.tricky({}) } catch (e) { return e.message }", { tricky });
    expect(outcome.value).toBe("tools.tricky: it failed with an error that could not be read");
  });

  test("host paths with letters beyond ASCII are taken out whole", async () => {
    const thrower = (message: string): Tool => ({ description: "", inputSchema: {}, annotations: readOnly, execute: () => { throw new Error(message); } });
    const { outcome } = await runWith(
      "const out = []; for (const name of ['a', 'b', 'c']) { try { await tools[name]({}) } catch (e) { out.push(e.message) } } return out",
      { a: thrower("open '/home/jürgen/projekte/app/.env' failed"), b: thrower("C:\\Users\\José García\\app\\keys.json is locked"), c: thrower("see file:///Users/zoë/app/main.js:3:9") },
    );
    expect(outcome.value).toEqual(["tools.a: open '[path]' failed", "tools.b: [path] is locked", "tools.c: see [path]"]);
  });

  test("a tool that never settles and ignores its signal: the call still ends at the tool's timeout", async () => {
    const stuck: Tool = { description: "", inputSchema: {}, annotations: readOnly, timeoutMs: 200, execute: () => new Promise(() => {}) };
    const started = performance.now();
    const { outcome, record } = await runWith("return await tools.stuck({})", { stuck });
    expect(outcome).toMatchObject({ ok: false, errorType: "tool", retriable: true });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(record.tool_calls?.[0]).toMatchObject({ ok: false, error_type: "timeout" });
  });

  test("a tool that never settles is cut at callTimeoutMs when that comes first", async () => {
    const stuck: Tool = { description: "", inputSchema: {}, annotations: readOnly, execute: () => new Promise(() => {}) };
    const started = performance.now();
    const { outcome } = await runWith("return await tools.stuck({})", { stuck }, { callTimeoutMs: 300 });
    expect(outcome.errorType).toBe("timeout");
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

describe("hostile tool calls from programs", () => {
  let calls = 0;
  const counted: Tool = { description: "Counts.", inputSchema: { type: "object" }, annotations: readOnly, execute: () => ++calls };

  test("a tool that is not granted is undefined in the program (a mistake), and a forged request is refused", async () => {
    const { outcome } = await runWith("return await tools.secret({})", { counted });
    expect(outcome.errorMessage).toMatch(/TypeError: tools.secret is not a function/);
  });

  test("input that fails the schema names the problems", async () => {
    const strict: Tool = { description: "", inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }, execute: () => 1 };
    const { outcome } = await runWith("try { await tools.strict({ n: 'x' }) } catch (e) { return [e.name, e.message] }", { strict });
    expect(outcome.value).toEqual(["TypeError", expect.stringMatching(/tools.strict\(input\): the input does not match the tool's schema: n: must be integer/)]);
  });

  test("a huge input is refused before it leaves, and a deeply nested one is read safely", async () => {
    const any: Tool = { description: "", inputSchema: {}, annotations: readOnly, execute: (input) => typeof input };
    const huge = await runWith("try { await tools.any('x'.repeat(3_000_000)) } catch (e) { return [e.name, e.message] }", { any });
    expect(huge.outcome.value).toEqual(["TypeError", expect.stringContaining("larger than the 1000000-character limit")]);
    const deep = await runWith("let v = []; for (let i = 0; i < 100000; i++) v = [v]; try { return await tools.any(v) } catch (e) { return [e.name, e.message] }", { any });
    expect(deep.outcome.ok).toBe(true);
  });

  test("10,000 tool calls: the per-call budget ends the call with budget_exceeded, the record lists 50 and counts them all", async () => {
    calls = 0;
    const { outcome, record } = await runWith("for (let i = 0; i < 10000; i++) await tools.counted({ i }); return 1", { counted });
    expect(outcome.errorType).toBe("budget_exceeded");
    expect(calls).toBe(256);
    expect(record.tool_call_count).toBe(256);
    expect(record.tool_calls).toHaveLength(50);
  });

  test("100 tool calls at once: 16 may be in flight, the rest are refused as over budget", async () => {
    const slow: Tool = { description: "", inputSchema: {}, annotations: readOnly, execute: () => new Promise((resolve) => setTimeout(() => resolve(1), 50)) };
    const { outcome } = await runWith(
      "const settled = await Promise.allSettled(Array.from({ length: 100 }, () => tools.slow({}))); return settled.map((s) => s.status === 'fulfilled' ? 'ok' : s.reason.name)",
      { slow },
    );
    const names = outcome.value as string[];
    expect(names.filter((name) => name === "ok")).toHaveLength(16);
    expect(names.filter((name) => name === "BudgetExceededError")).toHaveLength(84);
  });

  test("a program cannot replace the tools it is given, or reach the host through them", async () => {
    const { outcome } = await runWith(
      `const f = tools.counted;
       const attempts = [];
       try { f.constructor("return process")() } catch (e) { attempts.push(e.name) }
       try { Object.defineProperty(tools, "counted", { value: 1 }) } catch (e) { attempts.push(e.name) }
       return [attempts, typeof globalThis.process, typeof tools.counted]`,
      { counted },
    );
    expect(outcome.value).toEqual([["ReferenceError", "TypeError"], "undefined", "function"]);
  });
});

describe("hostile input against a recursive schema", () => {
  test("an input nested deeper than the host's stack fails the tool call typed, and the next call is served", async () => {
    const tree: Tool = { description: "", inputSchema: { type: "array", items: { $ref: "#" } }, annotations: readOnly, execute: () => "checked" };
    const { outcome, record } = await runWith("let v = []; for (let i = 0; i < 100000; i++) v = [v]; try { return await tools.tree(v) } catch (e) { return e.name }", { tree });
    expect(["ToolError", "TypeError"]).toContain(outcome.value);
    expect(record.tool_calls?.[0]?.ok).toBe(false);
    expect((await runWith("return await tools.tree([[[]]])", { tree })).outcome.value).toBe("checked");
  });
});
