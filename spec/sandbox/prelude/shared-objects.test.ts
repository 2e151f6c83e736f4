/**
 * What the realm shares from one program to the next (and, in a reused isolate, from one agent
 * to the next) is frozen: every object reachable from the global object but the global object
 * itself, and every object that two separate evaluations of the same expression both reach
 * (engine prototypes no global names, found only through instances).
 */
import { describe, expect, test } from "vitest";
import { agentWith } from "../../../test-support/agents.ts";

const PROBE = String.raw`
const reach = (roots) => {
  const seen = new Set([globalThis]);
  const open = new Set();
  const stack = [...roots];
  while (stack.length > 0) {
    const value = stack.pop();
    if ((typeof value !== "object" && typeof value !== "function") || value === null || seen.has(value)) continue;
    seen.add(value);
    if (!Object.isFrozen(value)) open.add(value);
    stack.push(Object.getPrototypeOf(value));
    for (const key of Reflect.ownKeys(value)) {
      const descriptor = Object.getOwnPropertyDescriptor(value, key);
      if (descriptor === undefined) continue;
      if ("value" in descriptor) stack.push(descriptor.value);
      else stack.push(descriptor.get, descriptor.set);
    }
  }
  return open;
};
const describe = (value) => (typeof value === "function" ? "function " + value.name : "object {" + Reflect.ownKeys(value).map(String).slice(0, 6).join(",") + "}");
const fromGlobals = [Object.getPrototypeOf(globalThis)];
for (const key of Reflect.ownKeys(globalThis)) {
  const descriptor = Object.getOwnPropertyDescriptor(globalThis, key);
  if ("value" in descriptor) fromGlobals.push(descriptor.value);
  else fromGlobals.push(descriptor.get, descriptor.set);
}
const makers = {
  iterators: () => [[][Symbol.iterator](), Iterator.from({ next() { return { done: true }; } }), Iterator.from([1]).map((x) => x), Iterator.from([1]).filter((x) => x), Iterator.from([1]).take(1), Iterator.from([1]).flatMap((x) => [x]), new Map().entries(), new Set().values(), "x"[Symbol.iterator](), "x".matchAll(/x/g)],
  segmenter: () => { const segments = new Intl.Segmenter("en").segment("a b"); return [segments, segments[Symbol.iterator](), segments.containing(0)]; },
  intl: () => [new Intl.DateTimeFormat(), new Intl.DateTimeFormat().format, new Intl.NumberFormat().format, new Intl.Collator().compare, new Intl.PluralRules(), new Intl.RelativeTimeFormat(), new Intl.ListFormat(), new Intl.DisplayNames("en", { type: "region" }), new Intl.Locale("en"), new Intl.DateTimeFormat().resolvedOptions()],
  errors: () => { const list = [new Error("x"), new TypeError("x"), new AggregateError([], "x")]; try { null.x; } catch (error) { list.push(error); } const target = {}; Error.captureStackTrace(target); list.push(target); return list; },
  functions: () => [function () {}, async function () {}, function* () {}, async function* () {}, (function* () {})(), (async function* () {})(), class {}, () => {}, (function () {}).bind(null), new Function("return 1"), (function () { return arguments; })(1)],
  promises: () => [Promise.withResolvers(), Promise.resolve(1), (async () => {})(), Proxy.revocable({}, {})],
  misc: () => [/(?<a>x)/d.exec("x"), Object.groupBy([1], (x) => x), new DisposableStack(), new ArrayBuffer(1, { maxByteLength: 2 }), new DataView(new ArrayBuffer(1)), new Float64Array(1), new WeakMap(), new Date(), String.raw${"`x`"}],
  web: () => [new URLSearchParams("a=1"), new URLSearchParams("a=1").keys(), new TextEncoder(), new TextDecoder(), new URL("https://example.com/a?b=1"), new URL("https://example.com/").searchParams, atob, btoa],
  runtime: () => [kw, kw({ a: 1 }), content, ToolError, EgressError, new ToolError("x"), new EgressError("x")],
};
const shared = {};
for (const [name, make] of Object.entries(makers)) {
  const first = reach(make());
  const second = reach(make());
  const both = [...first].filter((value) => second.has(value));
  if (both.length > 0) shared[name] = both.map(describe);
}
return { fromGlobals: [...reach(fromGlobals)].map(describe), shared };
`;

describe("objects the realm shares", () => {
  test("every object reachable from the global object, and every one two evaluations of an expression both reach, is frozen", async () => {
    const { agent } = agentWith({ probe: PROBE }, { role: "shared-objects", executionTimeoutMs: 5_000 });
    const outcome = await agent.probe();
    expect(outcome.errorMessage).toBeUndefined();
    expect(outcome.value).toEqual({ fromGlobals: [], shared: {} });
  });
});
