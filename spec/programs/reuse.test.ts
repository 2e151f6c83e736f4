import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Node, Program } from "acorn";
import { describe, expect, test } from "vitest";
import { Agent, kw, ScriptedProvider, SqliteStore } from "../../src/index.ts";
import { decideReuse } from "../../src/programs/keep-decision.ts";
import { MemoryShelf } from "../../src/programs/kept.ts";
import { scriptedAgent } from "../../test-support/agents.ts";
import { readLogLines, tempLogPath } from "../../test-support/logs.ts";

const requests = (provider: ScriptedProvider) => provider.calls.map((call) => call.method);

describe("program reuse", () => {
  test("a program that worked runs again for a call of the same shape, with no provider request, and the record says so", async () => {
    const log = tempLogPath("improv-reuse-");
    const { agent, provider } = scriptedAgent("calculator", { add: "return args[0] + args[1]" }, { log });
    expect((await agent.add(2, 3)).value).toBe(5);
    expect((await agent.add(10, 20)).value).toBe(30);
    expect((await agent.add(1, 1)).value).toBe(2);
    expect(requests(provider)).toEqual(["add"]);
    expect(Agent.history(agent).map((record) => [record.program_source, record.artifact_hit, record.program])).toEqual([
      ["generated", false, "return args[0] + args[1]"],
      ["reused", true, "return args[0] + args[1]"],
      ["reused", true, "return args[0] + args[1]"],
    ]);
    const lines = readLogLines(log);
    expect(lines.map((line) => [line.program_source, line.artifact_hit])).toEqual([["generated", false], ["reused", true], ["reused", true]]);
  });

  test("another call shape (more arguments, other named ones) asks the provider", async () => {
    const { agent, provider } = scriptedAgent("calculator", { add: "return args.reduce((a, b) => a + b, 0) + (kwargs.plus ?? 0)" });
    await agent.add(1, 2);
    await agent.add(1, 2, 3);
    await agent.add(1, 2, kw({ plus: 1 }));
    await agent.add(4, 5, kw({ plus: 2 }));
    expect(requests(provider)).toEqual(["add", "add", "add"]);
  });

  test("agents of the role that share a provider share its kept programs; another provider does not", async () => {
    const shared = new ScriptedProvider({ programs: { add: "return args[0] + args[1]" } });
    await Agent.for("calculator", { provider: shared }).add(1, 2);
    expect((await Agent.for("calculator", { provider: shared }).add(3, 4)).value).toBe(7);
    expect(shared.calls).toHaveLength(1);
    const other = new ScriptedProvider({ programs: { add: "return args[0] * args[1]" } });
    expect((await Agent.for("calculator", { provider: other }).add(3, 4)).value).toBe(12);
    expect((await Agent.for("accountant", { provider: shared }).add(3, 4)).value).toBe(7);
    expect(shared.calls).toHaveLength(2);
  });

  test.each([
    ["reads neither args nor kwargs", "add", [2, 3], "return 5"],
    ["holds a string argument as a literal", "greet", ["Alice"], "return args[0] === 'Alice' ? 'Hello, Alice!' : 'Hello'"],
    ["repeats three words of a string argument", "title", ["the quick brown fox jumps"], "return args[0] && 'Quick: the quick brown fox'"],
    ["names args only as a property key", "weather", ["Oslo"], "return { args: 1, city: 'somewhere', note: 'fine' }.note"],
    ["names kwargs only as a property after a dot", "weather", ["Oslo"], "const o = { kwargs: 2 }; return o.kwargs"],
    ["holds a string argument in other letter case", "weather", ["Oslo"], "return args.length && 'OSLO: 12 degrees'"],
    ["holds a string argument as an object key", "weather", ["Bergen"], "const table = { Bergen: 9 }; return args.length && table.Bergen"],
  ])("a program that %s bakes the call's input in and is not kept", async (_name, method, args, program) => {
    const { agent, provider } = scriptedAgent("baker", { [method]: program });
    const call = agent[method] as (...values: unknown[]) => Promise<unknown>;
    await call(...args);
    await call(...args);
    expect(provider.calls).toHaveLength(2);
  });

  test.each([
    ["an arrow function without parameters", "() => 14"],
    ["a declared function without parameters", "function double() { return 14 }"],
    ["a function whose parameters it never reads", "function double(n) { return 14 }"],
    ["a class method without parameters", "class Doubler { double() { return 14 } }"],
    ["a function that passes a constant to a helper", "const helper = (x) => x; function double() { return helper(14) }"],
  ])("%s ignores the call's input and is not kept", async (_name, program) => {
    const { agent, provider } = scriptedAgent("doubler", { double: program });
    expect((await agent.double(7)).value).toBe(14);
    await agent.double(10);
    expect(provider.calls).toHaveLength(2);
  });

  test.each([
    ["an arrow function reading its parameter", "(n) => n * 2"],
    ["a function reading a rest parameter", "function double(...values) { return values[0] * 2 }"],
    ["an arrow function reading a parameter with a default", "(n = 0) => n * 2"],
    ["a function reading a destructured rest parameter", "function double(...[n]) { return n * 2 }"],
    ["a function reading arguments", "function double() { return arguments[0] * 2 }"],
    ["a class method reading its parameter", "class Doubler { double(n) { return n * 2 } }"],
  ])("%s reads the call's input and is kept", async (_name, program) => {
    const { agent, provider } = scriptedAgent("doubler", { double: program });
    expect((await agent.double(7)).value).toBe(14);
    expect((await agent.double(10)).value).toBe(20);
    expect(provider.calls).toHaveLength(1);
  });

  test("a failure counted for a program the shelf no longer keeps is not charged to the one that replaced it", () => {
    const shelf = new MemoryShelf();
    const old = { key: "calc.add(2)@v1", role: "calc", method: "add", code: "return 1", why: "a test" };
    shelf.keep(old);
    shelf.keep({ ...old, code: "return args[0] + args[1]" });
    expect(shelf.ran(old.key, old.code, "mistake", 1)).toBe(false);
    expect(shelf.get(old.key)).toMatchObject({ code: "return args[0] + args[1]", failures: 0, uses: 0 });
    expect(shelf.ran(old.key, "return args[0] + args[1]", "mistake", 1)).toBe(true);
    expect(shelf.get(old.key)).toBeUndefined();
  });

  test("a kept program that failed and whose repair the provider could not give: the record and log line show no artifact hit", async () => {
    const log = tempLogPath("improv-reuse-");
    const { agent, provider } = scriptedAgent("formatter", { format: ["return args[0].toFixed(2)", { error: "model unavailable" }] }, { log, maxGenerationAttempts: 1 });
    await agent.format(1.5);
    const failed = await agent.format("text");
    expect(failed.errorType).toBe("provider");
    expect(provider.calls).toHaveLength(2);
    expect(Agent.history(agent).map((record) => [record.program_source, record.artifact_hit])).toEqual([
      ["generated", false],
      ["reused", false],
    ]);
    const lines = readLogLines(log);
    expect(lines.map((line) => [line.program_source, line.artifact_hit])).toEqual([["generated", false], ["reused", false]]);
  });

  test("a program that reads its arguments through a called function is kept", async () => {
    const { agent, provider } = scriptedAgent("calculator", { add: "function add(a, b) { return a + b }" });
    await agent.add(1, 2);
    expect((await agent.add(5, 5)).value).toBe(10);
    expect(provider.calls).toHaveLength(1);
  });

  test("free-form methods are not kept unless named in reuse: { only }; reuse: false and { except } turn it off", async () => {
    const programs = { ask: "return 'answer to ' + args[0].length", add: "return args[0] + args[1]" };
    const plain = scriptedAgent("assistant", programs);
    await plain.agent.ask("hello there");
    await plain.agent.ask("hello there");
    expect(plain.provider.calls).toHaveLength(2);
    const only = scriptedAgent("assistant", programs, { reuse: { only: ["ask"] } });
    await only.agent.ask("a");
    await only.agent.ask("b");
    await only.agent.add(1, 2);
    await only.agent.add(1, 2);
    expect(requests(only.provider)).toEqual(["ask", "add", "add"]);
    const off = scriptedAgent("calculator", programs, { reuse: false });
    await off.agent.add(1, 2);
    await off.agent.add(1, 2);
    expect(off.provider.calls).toHaveLength(2);
    const except = scriptedAgent("calculator", programs, { reuse: { except: ["add"] } });
    await except.agent.add(1, 2);
    await except.agent.add(1, 2);
    expect(except.provider.calls).toHaveLength(2);
    expect(() => Agent.for("x", { reuse: { sometimes: true } as never })).toThrow('Option "reuse" must be true, false, or an object with any of { except: [methods], only: [methods], scope: "role" | "agent" }. "sometimes" is not one of them.');
  });

  test("a kept program that fails by its own mistake is repaired in the same call, with its failure as feedback, and replaced", async () => {
    const { agent, provider } = scriptedAgent("formatter", { format: ["return args[0].toFixed(2)", "return String(args[0])"] });
    expect((await agent.format(1.5)).value).toBe("1.50");
    const repaired = await agent.format("text");
    expect(repaired.value).toBe("text");
    expect(provider.calls).toHaveLength(2);
    expect(provider.calls[1]?.user).toContain("The program kept from an earlier call did not work this time. It was:\n```js\nreturn args[0].toFixed(2)\n```");
    expect(provider.calls[1]?.user).toContain("It failed with: TypeError: args[0].toFixed is not a function");
    expect(Agent.history(agent).map((record) => record.program_source)).toEqual(["generated", "repaired"]);
    // The repaired program is the kept one now.
    expect((await agent.format(7)).value).toBe("7");
    expect(provider.calls).toHaveLength(2);
  });

  test("a kept program that fails by its own mistake maxReuseFailures calls in a row is dropped, and the log line says so", async () => {
    const log = tempLogPath("improv-reuse-");
    const { agent, provider } = scriptedAgent("shouter", { shout: ["return args[0].toUpperCase()", "return args[0].nope()"] }, { maxGenerationAttempts: 1, maxReuseFailures: 2, log });
    await agent.shout("hi");
    await agent.shout(42); // the kept program fails (1), and so does its repair
    await agent.shout(42); // fails again (2): dropped
    await agent.shout("again"); // nothing kept: the provider is asked
    expect(provider.calls.map((call) => call.user.includes("The program kept from an earlier call"))).toEqual([false, true, true, false]);
    const lines = readLogLines(log);
    expect(lines.map((line) => [line.kept_program_dropped, (line.attempt_errors as { attempt: number }[]).map((error) => error.attempt), line.error_message])).toEqual([
      [false, [], null],
      [false, [0, 1], "TypeError: args[0].nope is not a function"],
      [true, [0, 1], "TypeError: args[0].nope is not a function"],
      // A new program from the provider, which fails on its own first run.
      [false, [1], "TypeError: args[0].nope is not a function"],
    ]);
  });

  test("a program whose reuse check cannot be made (its tree too deep for the walk) is not kept, and says why", () => {
    // Built by hand: deeper than any parse, so the check's walk runs out of stack.
    let statement: Node = { type: "ReturnStatement", start: 0, end: 8, argument: { type: "Identifier", start: 7, end: 8, name: "x" } } as Node;
    for (let level = 0; level < 100_000; level += 1) statement = { type: "BlockStatement", start: 0, end: 8, body: [statement] } as Node;
    const ast = { type: "Program", start: 0, end: 8, sourceType: "script", body: [statement] } as unknown as Program;
    const prepared = { ok: true, source: "return x", shape: "body", stripped: false, parsed: { ok: true, ast }, toOriginal: (offset: number) => offset } as const;
    const rule = { enabled: true, except: new Set<string>(), only: undefined, scope: "role" } as const;
    expect(decideReuse("add", rule, prepared, [1], {})).toEqual({ kept: false, reason: "its reuse check could not be made (Maximum call stack size exceeded), so it is not kept" });
  });

  test("a time-out is not charged to a kept program", async () => {
    const { agent, provider } = scriptedAgent("waiter", { wait: "if (args[0] > 0) { const end = Date.now() + args[0]; while (Date.now() < end) {} } return 'done'" }, { executionTimeoutMs: 150, maxReuseFailures: 1 });
    await agent.wait(0);
    expect((await agent.wait(5_000)).errorType).toBe("timeout");
    expect((await agent.wait(5_000)).errorType).toBe("timeout");
    expect((await agent.wait(0)).value).toBe("done");
    expect(provider.calls).toHaveLength(1);
  });
});

describe("program keys", () => {
  test("roles, methods and named arguments with dots, commas or parentheses never share a key", async () => {
    const provider = new ScriptedProvider({
      programs: (request) => (request.method === "pick" ? "return Object.keys(kwargs).join('|')" : request.role === "a.b" ? "return 'one'" : "return 'two'"),
    });
    const dotted = Agent.for("a.b", { provider });
    const plain = Agent.for("a", { provider });
    expect((await (dotted as unknown as Record<string, () => Promise<{ value: unknown }>>)["c"]!()).value).toBe("one");
    // Same "a.b.c" spelled the other way round: its own program, not the one kept above.
    expect((await (plain as unknown as Record<string, () => Promise<{ value: unknown }>>)["b.c"]!()).value).toBe("two");
    const picker = Agent.for("picker", { provider });
    await picker.pick(kw({ "x,y": 1 }));
    await picker.pick(kw({ x: 1, y: 2 }));
    expect(provider.calls.filter((call) => call.method === "pick")).toHaveLength(2);
  });
});

describe("whose kept programs an agent runs", () => {
  test("a delegated call's program is kept for helpers of its parent's role: a program cannot plant one that the application's agents of that role run", async () => {
    const provider = new ScriptedProvider({ programs: { "guest.visit": "return (await delegate('bank').deposit(args[0])).value", deposit: "return args[0] * 2" } });
    const guest = Agent.for("guest", { provider });
    expect((await guest.visit(5)).value).toBe(10);
    expect((await guest.visit(6)).value).toBe(12);
    // The guest's helper reused its own program, and the guest its own.
    expect(requests(provider)).toEqual(["visit", "deposit"]);
    const bank = Agent.for("bank", { provider });
    expect((await bank.deposit(7)).value).toBe(14);
    expect(requests(provider)).toEqual(["visit", "deposit", "deposit"]);
    expect(Agent.history(bank).at(-1)?.program_source).toBe("generated");
    // Another guest's helper of the same role shares the first guest's helper's program.
    expect((await Agent.for("guest", { provider }).visit(1)).value).toBe(2);
    expect(requests(provider)).toHaveLength(3);
  });

  test('reuse: { scope: "agent" }: each agent runs only the programs it kept, its helpers theirs; in a store, across reopening', async () => {
    const provider = new ScriptedProvider({ programs: { add: "return args[0] + args[1]", "host.visit": "return (await delegate('helper').add(args[0], 1)).value" } });
    const scoped = { provider, reuse: { scope: "agent" } } as const;
    const first = Agent.for("calculator", scoped);
    const second = Agent.for("calculator", scoped);
    expect((await first.add(1, 2)).value).toBe(3);
    expect((await first.add(3, 4)).value).toBe(7);
    expect((await second.add(5, 6)).value).toBe(11);
    expect((await second.add(7, 8)).value).toBe(15);
    expect(requests(provider)).toEqual(["add", "add"]);
    // An agent of the role shared by role neither runs nor is run by the scoped ones.
    await Agent.for("calculator", { provider }).add(1, 1);
    expect(requests(provider)).toEqual(["add", "add", "add"]);
    // Helpers are under their parent's scope.
    const hosts = [Agent.for("host", scoped), Agent.for("host", scoped)];
    for (const host of hosts) for (const n of [1, 2]) expect((await host.visit(n)).value).toBe(n + 1);
    expect(requests(provider).slice(3)).toEqual(["visit", "add", "visit", "add"]);

    const store = new SqliteStore(join(mkdtempSync(join(tmpdir(), "improv-reuse-scope-")), "improv.db"));
    const opened = (id: string) => Agent.open("calculator", { ...scoped, store, id });
    await (await opened("user-1")).add(1, 2);
    await (await opened("user-2")).add(1, 2);
    const before = provider.calls.length;
    const again = await opened("user-1");
    expect((await again.add(2, 2)).value).toBe(4);
    expect(provider.calls.length).toBe(before);
    expect(Agent.history(again).at(-1)?.program_source).toBe("reused");
    expect((await store.programs()).map((program) => program.key).sort()).toEqual([expect.stringMatching(/^calculator\.add\(2\)@.* agent:user-1$/), expect.stringMatching(/^calculator\.add\(2\)@.* agent:user-2$/)]);
    await store.close();
    expect(() => Agent.for("x", { reuse: { scope: "tenant" } as never })).toThrow('Option "reuse": "scope" must be "role" or "agent".');
  });
});

describe("program reuse through a store", () => {
  test("a program kept by one process is run by another, with no provider request there", () => {
    const path = join(mkdtempSync(join(tmpdir(), "improv-reuse-store-")), "improv.db");
    const script = (programs: string) => `
      import { Agent, ScriptedProvider } from ${JSON.stringify(new URL("../../src/index.ts", import.meta.url).href)};
      const provider = new ScriptedProvider({ programs: ${programs} });
      const calc = await Agent.open("calculator", { store: ${JSON.stringify(path)}, id: "calc-" + process.pid, provider });
      const r = await calc.add(20, 22);
      console.log(JSON.stringify({ value: r.value, errorType: r.errorType ?? null, requests: provider.calls.length, source: Agent.history(calc).at(-1)?.program_source }));
    `;
    const run = (programs: string) => {
      const result = spawnSync(process.execPath, ["--input-type=module", "-e", script(programs)], { encoding: "utf8", timeout: 60_000 });
      return JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "null") as Record<string, unknown>;
    };
    expect(run('{ add: "return args[0] + args[1]" }')).toEqual({ value: 42, errorType: null, requests: 1, source: "generated" });
    // A provider that would fail: the kept program answers instead.
    expect(run('{ add: { error: "no model here" } }')).toEqual({ value: 42, errorType: null, requests: 0, source: "reused" });
  });

  test("with no provider, a kept program that fails by its own mistake ends the call with its own failure", async () => {
    const store = new SqliteStore(join(mkdtempSync(join(tmpdir(), "improv-reuse-store-")), "improv.db"));
    const provider = new ScriptedProvider({ programs: { shout: "return args[0].toUpperCase()" } });
    await (await Agent.open("shouter", { store, provider, id: "with-model" })).shout("a");
    const alone = await Agent.open("shouter", { store, id: "no-model" });
    expect((await alone.shout("b")).value).toBe("B");
    const failed = await alone.shout(1);
    expect(failed.errorType).toBe("execution");
    expect(failed.errorMessage).toContain("toUpperCase is not a function");
    expect(Agent.history(alone).map((record) => [record.program_source, record.artifact_hit, record.error_type ?? null])).toEqual([
      ["reused", true, null],
      ["reused", true, "execution"],
    ]);
    await store.close();
  });

  test("a reused call on a durable agent that is up to date reads no changes; one another connection wrote to reads them once", async () => {
    class CountingStore extends SqliteStore {
      pulls = 0;
      override changes(...args: Parameters<SqliteStore["changes"]>): ReturnType<SqliteStore["changes"]> {
        this.pulls += 1;
        return super.changes(...args);
      }
    }
    const path = join(mkdtempSync(join(tmpdir(), "improv-reuse-store-")), "improv.db");
    const store = new CountingStore(path);
    const { provider } = scriptedAgent("calculator", { add: "return args[0] + args[1]" });
    const calc = await Agent.open("calculator", { store, provider });
    await calc.add(1, 2);
    const before = store.pulls;
    expect((await calc.add(3, 4)).value).toBe(7);
    expect(Agent.history(calc).at(-1)?.program_source).toBe("reused");
    expect(store.pulls - before).toBe(0);
    // Another connection's commit: the next call's turn sees it, and reads it once.
    const other = new SqliteStore(path);
    const elsewhere = await Agent.open("calculator", { store: other, provider });
    await elsewhere.add(5, 6);
    expect((await calc.add(7, 8)).value).toBe(15);
    expect(store.pulls - before).toBe(1);
    expect(Agent.history(calc)).toHaveLength(4);
    await other.close();
    await store.close();
  });

  test("the store counts a kept program's uses and failures", async () => {
    const store = new SqliteStore(join(mkdtempSync(join(tmpdir(), "improv-reuse-store-")), "improv.db"));
    const provider = new ScriptedProvider({ programs: { shout: ["return args[0].toUpperCase()", "return String(args[0]).toUpperCase()"] } });
    const agent = await Agent.open("shouter", { store, provider, maxGenerationAttempts: 1 });
    await agent.shout("a");
    await agent.shout("b");
    await agent.shout("c");
    const [kept] = await store.programs("shouter");
    expect(kept).toMatchObject({ role: "shouter", method: "shout", code: "return args[0].toUpperCase()", uses: 2, failures: 0, failuresInRow: 0 });
    expect(kept?.key).toMatch(/^shouter\.shout\(1\)@[0-9a-f]{12}$/);
    await agent.shout(1); // fails; its repair is kept in its place, counts starting over
    expect(await store.programs("shouter")).toMatchObject([{ code: "return String(args[0]).toUpperCase()", uses: 0, failures: 0 }]);
    expect(await store.forgetProgram(kept?.key as string)).toBe(true);
    expect(await store.programs()).toEqual([]);
    await store.close();
  });
});
