import { Ajv2020 } from "ajv/dist/2020.js";
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { z } from "zod";
import { Agent, type AgentOptions } from "../../src/index.ts";
import { agentWith, type ScriptedAgent, type ScriptedPrograms } from "../../test-support/agents.ts";

const schema = JSON.parse(readFileSync(new URL("../../schema/history-record.schema.json", import.meta.url), "utf8")) as object;
const validateRecord = new Ajv2020({ allErrors: true, strict: false }).compile(schema);

/** An agent of `role` whose methods are scripted programs. */
const scripted = (role: string, programs: ScriptedPrograms, options: AgentOptions = {}): ScriptedAgent => agentWith(programs, { role, ...options });

describe("purpose and method contracts", () => {
  test("are shown to the model: the purpose in the system prompt, the method's description and return type in its user prompt", async () => {
    const { agent, provider } = scripted(
      "calculator",
      { add: "context.total = (context.total ?? 0) + args[0]; return context.total", other: "return 1" },
      {
        purpose: "A calculator that keeps a running total.",
        methods: { add: { description: "Adds args[0] to the total and returns the new total.", returns: z.number() }, report: { returns: { type: "object", properties: { count: { type: "integer" } }, required: ["count"] } } },
      },
    );
    expect((await agent.add(2)).value).toBe(2);
    await agent.other();
    const [add, other] = provider.calls;
    expect(add?.system).toContain("What this object is for: A calculator that keeps a running total.");
    expect(add?.user).toContain("What it does: Adds args[0] to the total and returns the new total.");
    expect(add?.user).toContain("It must return a value of this type (checked; a value that does not match is an error): number");
    // An undeclared method gets no contract lines.
    expect(other?.user).not.toContain("What it does:");
  });

  test("a value that does not match is repaired with the problems as feedback; the caller gets the schema's output", async () => {
    const { agent, provider, history } = scripted(
      "measurer",
      { measure: ['return "twelve"', "return { cm: 12 }"] },
      { methods: { measure: { returns: z.object({ cm: z.number() }).transform((value) => value.cm * 10) } } },
    );
    const outcome = await agent.measure();
    expect(outcome).toMatchObject({ ok: true, value: 120 });
    expect(provider.calls[1]?.user).toContain("It failed with: The value measure returned does not match its returns schema:");
    const record = history().at(-1)!;
    expect(record).toMatchObject({ program_source: "repaired", outcome_summary: { ok: true, value_class: "number" } });
    expect(validateRecord(record)).toBe(true);
  });

  test("when every attempt's value mismatches, the outcome is invalid_output (retriable), naming the problems", async () => {
    const { agent, history } = scripted("reporter", { report: "return { total: 3 }" }, { methods: { report: { returns: { type: "object", required: ["count"] } } } });
    const outcome = await agent.report();
    expect(outcome).toMatchObject({ ok: false, errorType: "invalid_output", retriable: true });
    expect(outcome.errorMessage).toContain("The value report returned does not match its returns schema: must have required property 'count'");
    const record = history().at(-1)!;
    expect(record.error_type).toBe("invalid_output");
    expect(validateRecord(record)).toBe(true);
  });

  test("a kept program whose value stops matching counts as its own failure, and the call is repaired", async () => {
    const { agent, provider } = scripted("echo", { echo: ["return args[0]", "return Number(args[0])"] }, { methods: { echo: { returns: z.number() } } });
    expect((await agent.echo(5)).value).toBe(5);
    // The kept program runs again with no request; its value does not match now.
    const second = await agent.echo("7");
    expect(second).toMatchObject({ ok: true, value: 7 });
    expect(provider.calls).toHaveLength(2);
    expect(provider.calls[1]?.user).toContain("The program kept from an earlier call did not work this time.");
  });

  test("a returns schema that throws, never settles or answers garbage ends the call invalid_output, and is not repaired", async () => {
    const standard = (validate: (value: unknown) => unknown) => ({ "~standard": { version: 1, vendor: "test", validate } });
    const { agent, provider } = scripted(
      "broken",
      { throws: "return 1", hangs: "return 1", garbage: "return 1" },
      {
        callTimeoutMs: 1_000,
        methods: {
          throws: { returns: standard(() => { throw new Error("schema exploded at /srv/app/schema.js:3"); }) },
          hangs: { returns: standard(() => new Promise(() => {})) },
          garbage: { returns: standard(() => 42) },
        },
      },
    );
    const thrown = await agent.throws();
    expect(thrown).toMatchObject({ ok: false, errorType: "invalid_output" });
    expect(thrown.errorMessage).toBe("The returns schema of throws could not check the value: schema exploded at [path].");
    const started = performance.now();
    const hung = await agent.hangs();
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(hung.errorMessage).toMatch(/could not check the value: the call's callTimeoutMs ran out while it checked \(\d+ ms left\)\./);
    expect((await agent.garbage()).errorMessage).toContain("its validate answered with something that is not a result");
    expect(provider.calls).toHaveLength(3);
  });

  test("bad contracts are a TypeError at construction that says what is wrong", () => {
    expect(() => Agent.for("x", { methods: { add: { returns: 42 as never } } })).toThrow('Option "methods.add.returns" must be a Standard Schema');
    expect(() => Agent.for("x", { methods: { then: {} } })).toThrow('"then" is not a method name agents can have');
    expect(() => Agent.for("x", { methods: { add: { describe: "x" } as never } })).toThrow('"methods.add" has "describe", which is not description or returns');
    // A bare schema where { returns } belongs: said so, with what to write.
    const bare = 'Option "methods.add" is a schema, not a method\'s contract: write { returns: <the schema> } (and a description if you like), as in methods: { add: { returns: schema } }.';
    expect(() => Agent.for("x", { methods: { add: z.number() as never } })).toThrow(bare);
    expect(() => Agent.for("x", { methods: { add: { type: "number" } as never } })).toThrow(bare);
    expect(() => Agent.for("x", { purpose: "p".repeat(2_001) })).toThrow('Option "purpose" must be a non-empty string of at most 2000 characters.');
    expect(() => Agent.for("x", { methods: { add: { returns: { type: "nonsense" } } } })).toThrow('Option "methods.add.returns" is not a usable JSON Schema');
    expect(() => Agent.for("x", { methods: { add: { returns: { $async: true, type: "number" } } } })).toThrow('Option "methods.add.returns" is not a usable JSON Schema ($async schemas cannot be checked here; remove $async).');
  });
});

describe("delegation contracts", () => {
  test("a program gives its helper a purpose and method contracts, shown to it and checked; one helper per role and contract, whose memory lasts", async () => {
    const contract = `{ purpose: "Keeps a tally of numbers.", methods: { add: { description: "Adds args[0] to the tally and returns it.", returns: { type: "number" } } } }`;
    const { agent, provider } = scripted("boss", {
      "boss.tally": `const helper = delegate("tallier", ${contract}); const r = await helper.add(args[0]); return r.value`,
      "tallier.add": ['context.tally = (context.tally ?? 0) + args[0]; return String(context.tally)', "context.tally = (context.tally ?? 0) + args[0]; return context.tally"],
    });
    expect((await agent.tally(2)).value).toBe(2);
    expect((await agent.tally(3)).value).toBe(5);
    const helperCalls = provider.calls.filter((call) => call.role === "tallier");
    expect(helperCalls[0]?.system).toContain("What this object is for: Keeps a tally of numbers.");
    expect(helperCalls[0]?.user).toContain("It must return a value of this type (checked; a value that does not match is an error): number");
    // The first program returned a string: repaired, then kept and run again for the second call.
    expect(helperCalls[1]?.user).toContain("does not match its returns schema");
    const helper = agent.delegate("tallier", { purpose: "Keeps a tally of numbers.", methods: { add: { description: "Adds args[0] to the tally and returns it.", returns: { type: "number" } } } });
    expect(Agent.history(helper).map((record) => record.args)).toEqual([[2], [3]]);
  });

  test("kw() passes named arguments to a delegated method", async () => {
    const { agent } = scripted("converter", {
      "converter.run": `const r = await delegate("units").convert(100, kw({ from: "c", to: "f" })); return r.value`,
      "units.convert": "return { value: args[0], ...kwargs }",
    });
    expect((await agent.run()).value).toEqual({ value: 100, from: "c", to: "f" });
    expect(Agent.history(agent.delegate("units")).at(-1)).toMatchObject({ args: [100], kwargs: { from: "c", to: "f" } });
  });

  test("hostile contracts from a program: a 1 MB purpose, a deeply nested schema, a $ref loop, a catastrophic pattern, a schema that is not JSON Schema", async () => {
    const deep = `(() => { let s = { type: "number" }; for (let i = 0; i < 5000; i++) s = { type: "array", items: s }; return s })()`;
    const call = (options: string) => `const r = await delegate("helper", ${options}).work("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"); return r.ok ? { ok: true, value: r.value } : { ok: false, type: r.error_type, message: r.error_message }`;
    const { agent } = scripted("boss", {
      "boss.huge": call(`{ purpose: "x".repeat(1_000_000) }`),
      "boss.long": call(`{ purpose: "x".repeat(3_000) }`),
      "boss.deep": call(`{ methods: { work: { returns: ${deep} } } }`),
      "boss.loop": call(`{ methods: { work: { returns: { $ref: "#" } } } }`),
      "boss.pattern": call(`{ methods: { work: { returns: { type: "string", pattern: "^(a+)+$" } } } }`),
      "boss.standard": call(`{ methods: { work: { returns: { "~standard": { validate: "x" } } } } }`),
      "helper.work": "return args[0]",
    });
    expect((await agent.huge()).value).toMatchObject({ ok: false, type: "invalid_input", message: expect.stringContaining("options") });
    expect((await agent.long()).value).toMatchObject({ ok: false, type: "invalid_input", message: expect.stringContaining('"purpose" must be a non-empty string of at most 2000 characters') });
    // Past the size of delegate options already (the depth limit of a program's schema is tested in program-schemas.test.ts).
    expect((await agent.deep()).value).toMatchObject({ ok: false, type: "invalid_input" });
    // It overflows the stack on the schema thread: the schema could not check, which is not the helper's mistake.
    expect((await agent.loop()).value).toMatchObject({ ok: false, type: "invalid_output", message: expect.stringContaining("The returns schema of work could not check the value") });
    // RE2: linear whatever the input; the value does not match, so the helper's attempts are used up.
    expect((await agent.pattern()).value).toMatchObject({ ok: false, type: "invalid_output", message: expect.stringContaining("must match pattern") });
    expect((await agent.standard()).value).toMatchObject({ ok: false, type: "invalid_input", message: 'delegate option "methods.work.returns" has a ~standard property: a program\'s schema must be a JSON Schema object.' });
  });
});

describe("a program may hand its caller an agent", () => {
  test("the application receives the live child agent, directly or inside an object or an array: the same one the program's calls reached", async () => {
    const { agent } = scripted("explorer", {
      "explorer.cd": `const dir = delegate("folder"); await dir.visit(args[0]); return dir`,
      "explorer.tree": `return { here: delegate("folder"), files: [delegate("file", { purpose: "A file." })], count: 2 }`,
      "folder.visit": "context.visited = [...(context.visited ?? []), args[0]]; return context.visited.length",
      "folder.visited": "return context.visited",
      "file.name": "return 'notes.txt'",
    });
    const cd = await agent.cd("docs");
    expect(cd.ok).toBe(true);
    const folder = cd.value;
    expect(folder).toBeInstanceOf(Agent);
    expect(Agent.role(folder)).toBe("folder");
    expect((await folder.visited()).value).toEqual(["docs"]);
    expect(Agent.history(folder).map((record) => [record.method_name, record.speaker])).toEqual([
      ["visit", "tool"],
      ["visited", "user"],
    ]);
    const tree = (await agent.tree()).value;
    expect(tree.count).toBe(2);
    expect(tree.here).toBe(folder);
    expect(Agent.role(tree.files[0])).toBe("file");
    expect((await tree.files[0].name()).value).toBe("notes.txt");
    expect(Agent.history(agent).at(-1)?.outcome_summary.value_class).toBe("object");
    expect(Agent.history(agent).at(-2)?.outcome_summary.value_class).toBe("Agent");
  });

  test("data that looks like an agent is data; a program receiving an agent from a delegated call gets its text", async () => {
    const { agent } = scripted("forger", {
      "forger.fake": `return [["Agent", "folder", null], { role: "folder", options: null }, "[Agent folder]"]`,
      "forger.relay": `const r = await delegate("middle").hand(); return r.value`,
      "middle.hand": `return delegate("inner")`,
    });
    const fake = await agent.fake();
    expect(fake.value).toEqual([["Agent", "folder", null], { role: "folder", options: null }, "[Agent folder]"]);
    expect(fake.value.some((item: unknown) => item instanceof Agent)).toBe(false);
    expect((await agent.relay()).value).toBe("[Agent inner]");
  });
});

describe("Agent.call: one call with its own limits and cancellation", () => {
  test("named arguments, its own callTimeoutMs and executionTimeoutMs, and a signal that cancels this call only", async () => {
    const { agent } = scripted("worker", {
      convert: "return { value: args[0], ...kwargs }",
      slow: [{ delayMs: 2_000, code: "return 1" }],
      spin: "const end = Date.now() + 2000; while (Date.now() < end) {} return 'spun'",
      quick: "return 'quick'",
    });
    expect((await Agent.call(agent, "convert", [100], { kwargs: { from: "c" } })).value).toEqual({ value: 100, from: "c" });
    const slow = await Agent.call(agent, "slow", [], { callTimeoutMs: 200 });
    expect(slow).toMatchObject({ ok: false, errorType: "timeout", errorMessage: expect.stringContaining("callTimeoutMs (200 ms)") });
    const spin = await Agent.call(agent, "spin", [], { executionTimeoutMs: 100 });
    expect(spin).toMatchObject({ ok: false, errorType: "timeout", errorMessage: expect.stringContaining("executionTimeoutMs (100 ms)") });
    const controller = new AbortController();
    const cancelled = Agent.call(agent, "slow", [], { signal: controller.signal });
    const other = agent.quick();
    controller.abort();
    expect(await cancelled).toMatchObject({ ok: false, errorType: "cancelled" });
    expect((await other).value).toBe("quick");
  });

  test("bad arguments are a TypeError that says what is wrong", () => {
    const { agent } = scripted("worker", { x: "return 1" });
    expect(() => Agent.call(agent, "then", [])).toThrow("needs a method name");
    expect(() => Agent.call(agent, "x", "a" as never)).toThrow("args must be an array");
    expect(() => Agent.call(agent, "x", [], { timeout: 1 } as never)).toThrow('Unknown option "timeout" for Agent.call(). Valid options: kwargs, signal, callTimeoutMs, executionTimeoutMs, onEvent.');
    expect(() => Agent.call(agent, "x", [], { callTimeoutMs: 0 })).toThrow('option "callTimeoutMs" must be a whole number');
    expect(() => Agent.call({}, "x", [])).toThrow("Agent.call() expects an agent made by Agent.for(role).");
  });
});
