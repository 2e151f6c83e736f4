import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider } from "../../../src/index.ts";
import { agentWith, type AnyAgent } from "../../../test-support/agents.ts";

/** An agent running `programs`, and `ping`, which answers with the value it keeps. */
function sandboxed(programs: Record<string, string>): AnyAgent {
  return agentWith({ ...programs, ping: "return 'pong:' + context.kept" }, { role: "sandboxed", executionTimeoutMs: 2_000 }).agent;
}

/** Classic ways out of a JavaScript sandbox; each must end inside the isolate. */
const escapes: [string, string, (outcome: { ok: boolean; value?: unknown; errorMessage?: string }) => void][] = [
  [
    "Function constructor through this.constructor",
    'return this.constructor.constructor("return process")()',
    (r) => expect(r.errorMessage).toBe("ReferenceError: process is not defined"),
  ],
  [
    "Function constructor through an argument's prototype chain",
    'return args.constructor.constructor("return typeof process + typeof require + typeof globalThis.process")()',
    (r) => expect(r.value).toBe("undefinedundefinedundefined"),
  ],
  ["require", "return require('fs')", (r) => expect(r.errorMessage).toBe("ReferenceError: require is not defined")],
  ["dynamic import()", "return await import('node:fs')", (r) => expect(r.ok).toBe(false)],
  [
    "error stack prototype walk with prepareStackTrace",
    "Error.prepareStackTrace = (e, frames) => frames.map(f => typeof f.getThis === 'function' ? f.getThis() : f); const s = new Error('x').stack; return typeof s",
    (r) => expect(r.value).toBe("string"),
  ],
  [
    "stack traces name no host file",
    "try { null.x } catch (e) { return e.stack }",
    (r) => {
      expect(typeof r.value).toBe("string");
      expect(String(r.value)).not.toMatch(/\/work\/|node_modules|src\/sandbox|\.ts:/);
    },
  ],
  [
    "host globals are absent",
    "return ['process', 'require', 'module', 'Buffer', 'setTimeout', 'fetch', 'SharedArrayBuffer', 'Atomics', 'WebAssembly', 'FinalizationRegistry', 'WeakRef'].filter(n => typeof globalThis[n] !== 'undefined')",
    (r) => expect(r.value).toEqual([]),
  ],
  [
    "caller and callee walk up to nothing of the host",
    "function f() { return f.caller } try { return typeof f() } catch (e) { return e.name }",
    (r) => expect(["function", "object", "TypeError"]).toContain(r.value),
  ],
  [
    "Symbol.species on promises does not reach the host",
    "class P extends Promise { static get [Symbol.species]() { return Promise } } const v = await P.resolve(1); return v",
    (r) => expect(r.value).toBe(1),
  ],
];

describe("generated code cannot reach the host", () => {
  test.each(escapes)("%s", async (_name, program, check) => {
    const agent = sandboxed({ attempt: program });
    agent.kept = "intact";
    const r = await agent.attempt();
    check(r);
    expect((globalThis as Record<string, unknown>).escaped).toBeUndefined();
    expect((await agent.ping()).value).toBe("pong:intact");
  });

  test("writing to globalThis inside the sandbox does not touch the host's globalThis", async () => {
    const agent = sandboxed({ mark: "globalThis.hostMarker = 'set'; hostMarker2 = 'implicit'; return typeof hostMarker2" });
    expect((await agent.mark()).value).toBe("string");
    expect((globalThis as Record<string, unknown>).hostMarker).toBeUndefined();
    expect((globalThis as Record<string, unknown>).hostMarker2).toBeUndefined();
  });
});

describe("intrinsics are frozen before generated code runs", () => {
  test("changes to built-ins neither stick nor reach a later program", async () => {
    const agent = sandboxed({
      tamper: [
        "try { Array.prototype.push = function () { return 'hijacked' } } catch {}",
        "try { Object.prototype.polluted = 'yes' } catch {}",
        "try { JSON.stringify = () => 'hijacked' } catch {}",
        "try { Promise.prototype.then = null } catch {}",
        "return Object.isFrozen(Array.prototype) && Object.isFrozen(Object.prototype) && Object.isFrozen(JSON)",
      ].join("\n"),
      check: "const a = []; a.push(1); return [a.length, ({}).polluted, JSON.stringify({ a: 1 })]",
    });
    expect((await agent.tamper()).value).toBe(true);
    expect((await agent.check()).value).toEqual([1, undefined, '{"a":1}']);
  });

  test("globals a program leaves behind are gone for the next program", async () => {
    const agent = sandboxed({ leave: "globalThis.leftover = 42; implicitGlobal = 7; return leftover + implicitGlobal", look: "return [typeof leftover, typeof implicitGlobal]" });
    expect((await agent.leave()).value).toBe(49);
    expect((await agent.look()).value).toEqual(["undefined", "undefined"]);
  });

  test("globals a program's stray continuations add after it returned are gone for the next program; one that cannot be removed costs a fresh isolate, not a call", async () => {
    const agent = sandboxed({
      stray: "Promise.resolve().then(() => null).then(() => null).then(() => { globalThis.late = 1 }); return 'returned'",
      stuck: "Promise.resolve().then(() => null).then(() => { Object.defineProperty(globalThis, 'pinned', { value: 1, configurable: false }) }); return 'returned'",
      look: "return [typeof late, typeof pinned, context.conversation_history.length]",
    });
    expect((await agent.stray()).value).toBe("returned");
    expect((await agent.look()).value).toEqual(["undefined", "undefined", 1]);
    expect((await agent.stuck()).value).toBe("returned");
    expect((await agent.look()).value).toEqual(["undefined", "undefined", 3]);
  });

  test("a global object given another prototype, or made to take no new properties, costs a fresh isolate: the next program finds neither", async () => {
    const agent = sandboxed({
      swap: "Object.setPrototypeOf(globalThis, { inherited: 'left' }); return typeof inherited",
      seal: "Object.preventExtensions(globalThis); return Object.isExtensible(globalThis)",
      look: "globalThis.added = 1; return [typeof inherited, Object.isExtensible(globalThis), added, context.conversation_history.length]",
    });
    expect((await agent.swap()).value).toBe("string");
    expect((await agent.look()).value).toEqual(["undefined", true, 1, 1]);
    expect((await agent.seal()).value).toBe(false);
    expect((await agent.look()).value).toEqual(["undefined", true, 1, 3]);
  });

  test("a continuation a program left waiting on the bridge adds no globals for later programs", async () => {
    const agent = sandboxed({
      viaDelegate: "delegate('helper').ping().then(() => { globalThis.afterDelegate = 1 }); return 'returned'",
      viaContent: "content('no-such-value').then(() => { globalThis.afterContent = 1 }); return 'returned'",
      look: "return [typeof afterDelegate, typeof afterContent]",
    });
    const settle = () => new Promise((resolve) => setTimeout(resolve, 300));
    expect((await agent.viaDelegate()).value).toBe("returned");
    await settle();
    expect((await agent.look()).value).toEqual(["undefined", "undefined"]);
    expect((await agent.viaContent()).value).toBe("returned");
    await settle();
    expect((await agent.look()).value).toEqual(["undefined", "undefined"]);
  });

  test("a program run again keeps nothing on its own function object", async () => {
    const agent = sandboxed({ counted: "const self = arguments.callee; self.count = (self.count || 0) + 1; return [self.count ?? 'none', Object.isFrozen(self)]" });
    const first = await agent.counted();
    const second = await agent.counted();
    expect([first.value, second.value]).toEqual([["none", true], ["none", true]]);
  });

  test("globals a program leaves are removed after its answer left, not on the next call's time", async () => {
    const agent = Agent.for("litterer", {
      provider: new ScriptedProvider({ programs: { litter: "for (let i = 0; i < 4_000_000; i++) globalThis[i] = i; return 'littered'", innocent: "return 'fine'" } }),
      executionTimeoutMs: 2_000,
      memoryLimitMb: 256,
    });
    await agent.litter();
    const innocent = await agent.innocent();
    expect(innocent.ok, `${innocent.errorType}: ${innocent.errorMessage}`).toBe(true);
    expect(innocent.value).toBe("fine");
  }, 60_000);

  test("an Error subclass can set this.name, and objects can define their own toString (override mistake tamed)", async () => {
    const agent = sandboxed({
      custom: "class MyError extends Error { constructor(m) { super(m); this.name = 'MyError' } } throw new MyError('custom failure')",
      own: "const o = {}; o.toString = () => 'mine'; const p = Object.create(null); return [String(o), o.hasOwnProperty('toString'), typeof p]",
      strict: "'use strict'; const o = {}; o.constructor = 'c'; o.valueOf = () => 3; return [o.constructor, o + 1]",
    });
    expect((await agent.custom()).errorMessage).toBe("MyError: custom failure");
    expect((await agent.own()).value).toEqual(["mine", true, "object"]);
    expect((await agent.strict()).value).toEqual(["c", 4]);
  });

  test("a program runs in sloppy mode unless it says 'use strict'", async () => {
    const agent = sandboxed({ sloppy: "undeclared = 1; return typeof undeclared", strict: "'use strict'; undeclared2 = 1; return 1" });
    expect((await agent.sloppy()).value).toBe("number");
    expect((await agent.strict()).errorMessage).toBe("ReferenceError: undeclared2 is not defined");
  });
});
