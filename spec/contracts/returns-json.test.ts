/**
 * A JSON Schema `returns` checks JSON data: the value the caller gets is the value checked, and
 * a value JSON cannot hold (a Map, a Set, a Date…) never passes as the object it is not.
 */
import { describe, expect, test } from "vitest";
import { z } from "zod";
import { scriptedAgent } from "../../test-support/agents.ts";

const NOT_JSON = "Return JSON data: plain objects, arrays, strings, finite numbers, booleans and null.";

describe("a JSON Schema returns checks JSON data", () => {
  test("a returned Map passes neither { type: 'object', required } nor { type: 'object' }", async () => {
    const { agent } = scriptedAgent(
      "reporter",
      { report: "return new Map([['count', 1]])", anything: "return new Map([['count', 1]])" },
      { maxGenerationAttempts: 1, methods: { report: { returns: { type: "object", required: ["count"] } }, anything: { returns: { type: "object" } } } },
    );
    for (const outcome of [await agent.report(), await agent.anything()]) {
      expect(outcome).toMatchObject({ ok: false, errorType: "invalid_output" });
      expect(outcome.errorMessage).toMatch(new RegExp(`returned does not match its returns schema: it is a Map, which JSON cannot hold\\. ${NOT_JSON.replaceAll(".", "\\.")}$`));
    }
  });

  test("a value JSON cannot hold anywhere inside is named by its path, and the program is repaired with it", async () => {
    const { agent, provider } = scriptedAgent(
      "reporter",
      { report: ["return { count: 1, seen: new Set([1]) }", "return { count: 1, when: [new Date(0)] }", "return { count: 1, ratio: NaN }", "return { count: 1, seen: [1] }"] },
      { maxGenerationAttempts: 4, methods: { report: { returns: { type: "object", required: ["count"] } } } },
    );
    const outcome = await agent.report();
    expect(outcome.value).toEqual({ count: 1, seen: [1] });
    const feedback = provider.calls.slice(1).map((call) => /does not match its returns schema: ([^\n]*?)\. Return JSON data/.exec(call.user)?.[1]);
    expect(feedback).toEqual(["seen: it is a Set, which JSON cannot hold", "when.0: it is a Date, which JSON cannot hold", "ratio: it is NaN, which JSON cannot hold"]);
  });

  test("a program's delegate contract checks JSON data too", async () => {
    const { agent } = scriptedAgent("boss", {
      "boss.run": `const r = await delegate("helper", { maxGenerationAttempts: 1, methods: { work: { returns: { type: "object" } } } }).work(); return r.ok ? r.value : r.error_message`,
      "helper.work": "return new Map()",
    });
    expect((await agent.run()).value).toBe(`The value work returned does not match its returns schema: it is a Map, which JSON cannot hold. ${NOT_JSON}`);
  });

  test("a Standard Schema gets the value as it was returned, Map and all", async () => {
    const { agent } = scriptedAgent("counter", { count: "return new Map([['a', 1]])" }, { methods: { count: { returns: z.map(z.string(), z.number()) } } });
    expect((await agent.count()).value).toEqual(new Map([["a", 1]]));
  });
});
