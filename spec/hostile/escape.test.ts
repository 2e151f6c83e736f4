import { describe, expect, test } from "vitest";
import { runHostile, watchHost, type HostileCase } from "./harness.ts";

watchHost();

/** Family 1: reaching the host from generated code. */
const ESCAPES: HostileCase[] = [
  {
    name: "Function constructor through this.constructor",
    program: 'return this.constructor.constructor("return process")()',
    expect: ["execution"],
    check: (r) => expect(r.errorMessage).toBe("ReferenceError: process is not defined"),
  },
  {
    name: "AsyncFunction constructor",
    program: 'const AF = (async () => {}).constructor; return await AF("return typeof process + typeof require")()',
    expect: ["ok"],
    check: (r) => expect(r.value).toBe("undefinedundefined"),
  },
  {
    name: "async generator function constructor",
    program: 'const G = Object.getPrototypeOf(async function* () {}).constructor; const it = G("yield typeof globalThis.process")(); return (await it.next()).value',
    expect: ["ok"],
    check: (r) => expect(r.value).toBe("undefined"),
  },
  {
    name: "Function('return this')() is the isolate's own global",
    program: "const g = Function('return this')(); return [typeof g.process, typeof g.require, typeof g.Buffer, g === globalThis]",
    expect: ["ok"],
    check: (r) => expect(r.value).toEqual(["undefined", "undefined", "undefined", true]),
  },
  {
    name: "constructor walk from a caught error",
    program: "try { null.f() } catch (e) { return e.constructor.constructor('return typeof process')() }",
    expect: ["ok"],
    check: (r) => expect(r.value).toBe("undefined"),
  },
  {
    name: "prepareStackTrace for CallSites",
    program: "try { Error.prepareStackTrace = (_, frames) => frames } catch {} const s = new Error('x').stack; return [typeof s, typeof Error.prepareStackTrace]",
    expect: ["ok", "execution"],
    check: (r) => r.ok && expect(r.value).toEqual(["string", "undefined"]),
  },
  {
    name: "captureStackTrace on an object with a getter",
    program: "const o = {}; Error.captureStackTrace(o); return typeof o.stack === 'string' && !/\\/work\\/|node_modules|\\.ts:/.test(o.stack)",
    expect: ["ok"],
    check: (r) => expect(r.value).toBe(true),
  },
  {
    name: "a thrown Proxy whose traps try to escape",
    program: "throw new Proxy(new Error('p'), { get(t, k) { if (k === 'message') return this.constructor.constructor('return typeof process')(); return Reflect.get(t, k) } })",
    expect: ["execution"],
    check: (r) => expect(r.errorMessage).toBe("Error: undefined"),
  },
  {
    name: "an error whose name is a Proxy",
    program: "const e = new Error('n'); Object.defineProperty(e, 'name', { get: () => new Proxy({}, { get: () => () => 'spoofed' }) }); throw e",
    expect: ["execution"],
    check: (r) => expect(r.errorMessage).toBe("spoofed: n"),
  },
  {
    name: "Symbol.species on promises",
    program: "class Evil extends Promise { static get [Symbol.species]() { return Promise } } return await Evil.resolve(5).then((v) => v + 1)",
    expect: ["ok"],
    check: (r) => expect(r.value).toBe(6),
  },
  {
    name: "a returned value with inspect and coercion hooks",
    program: "return { [Symbol.for('nodejs.util.inspect.custom')]() { globalThis.hit = 1; return 'x' }, toJSON() { return 'hooked' }, valueOf() { throw new Error('v') }, [Symbol.toPrimitive]() { throw new Error('p') }, plain: 1 }",
    expect: ["ok"],
    check: (r) => expect(r.value).toEqual({ toJSON: "[Function: toJSON]", valueOf: "[Function: valueOf]", plain: 1 }),
  },
  {
    name: "caller and callee",
    program: "function f() { return f.caller } let c; try { c = f() } catch (e) { c = e.name } return [typeof arguments.callee, typeof c]",
    expect: ["ok"],
    check: (r) => expect(r.value).toEqual(["function", expect.any(String)]),
  },
  { name: "dynamic import()", program: "return await import('node:child_process')", expect: ["execution"] },
  { name: "require", program: "return require('node:fs').readFileSync('/etc/passwd', 'utf8')", expect: ["execution"] },
  { name: "import.meta", program: "return import.meta.url", expect: ["invalid_code"] },
  {
    name: "WebAssembly, SharedArrayBuffer, Atomics, FinalizationRegistry, WeakRef are gone",
    program: "return [typeof WebAssembly, typeof SharedArrayBuffer, typeof Atomics, typeof FinalizationRegistry, typeof WeakRef]",
    expect: ["ok"],
    check: (r) => expect(r.value).toEqual(Array(5).fill("undefined")),
  },
  {
    name: "hunting for isolated-vm Reference handles",
    program: [
      "const seen = new Set(); const found = []; const queue = [globalThis, context, args, kwargs, delegate, console, arguments];",
      "while (queue.length && seen.size < 20000) { const v = queue.shift(); if ((typeof v !== 'object' && typeof v !== 'function') || v === null || seen.has(v)) continue; seen.add(v);",
      "  for (const k of Reflect.ownKeys(v)) { if (['applySync', 'derefInto', 'copyInto', 'deref', 'applyIgnored'].includes(String(k))) found.push(String(k)); let d; try { d = Object.getOwnPropertyDescriptor(v, k) } catch { continue } if (d && 'value' in d) queue.push(d.value); }",
      "  queue.push(Object.getPrototypeOf(v)); }",
      "return { found, walked: seen.size > 100 }",
    ].join("\n"),
    expect: ["ok"],
    check: (r) => expect(r.value).toEqual({ found: [], walked: true }),
  },
  {
    name: "polluting Object.prototype to change bridge options",
    program: "try { Object.prototype.copy = false; Object.prototype.reference = true; Object.defineProperty(Object.prototype, 'promise', { get() { return false } }) } catch {} const r = await delegate('echo').back(1, 2); return [r.value, ({}).copy, ({}).reference]",
    expect: ["ok"],
    check: (r) => expect(r.value).toEqual([[1, 2], undefined, undefined]),
  },
  {
    name: "overriding then on built-ins and on results",
    program: "try { Promise.prototype.then = function () { globalThis.hijacked = true } } catch {} const r = await delegate('echo').ping(); return { then(resolve) { resolve([r.value, typeof globalThis.hijacked]) } }",
    expect: ["ok"],
    check: (r) => expect(r.value).toEqual(["pong", "undefined"]),
  },
];

describe("hostile: escape to host", () => {
  test.each(ESCAPES)("$name", (testCase) => runHostile(testCase));
});

export const ESCAPE_COUNT = ESCAPES.length;
