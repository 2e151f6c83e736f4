import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider } from "../../src/index.ts";

function agent(programs: Record<string, string>, options: Record<string, unknown> = {}) {
  return Agent.for("analyst", { provider: new ScriptedProvider({ programs }), reuse: false, ...options });
}

describe("kept values", () => {
  test("an ok call's value is kept under its call id; a later program reads it with content(ref)", async () => {
    const analyst = agent({
      load: "return { figures: [3, 4, 5], when: new Date(0), tags: new Set(['q1']) }",
      total: "const last = context.conversation_history.findLast((r) => r.method_name === 'load'); const data = await content(last.outcome_summary.content_ref); data.figures.push(100); return data.figures.reduce((a, b) => a + b, 0) + (data.tags.has('q1') ? 1 : 0)",
      again: "const last = context.conversation_history.findLast((r) => r.method_name === 'load'); return (await content(last.outcome_summary.content_ref)).figures.length",
      missing: "return [await content('no-such-ref'), typeof content]",
    });
    const loaded = await analyst.load();
    const [record] = Agent.history(analyst);
    expect(record!.outcome_summary.content_ref).toBe(loaded.callId);
    expect((await analyst.total()).value).toBe(113);
    // content() gives a copy: the push above changed nothing kept.
    expect((await analyst.again()).value).toBe(3);
    expect((await analyst.missing()).value).toEqual([undefined, "function"]);
    const copy = (await Agent.value(analyst, loaded.callId)) as { figures: number[]; when: Date };
    expect(copy.figures).toEqual([3, 4, 5]);
    expect(copy.when).toBeInstanceOf(Date);
    copy.figures.push(1);
    expect(((await Agent.value(analyst, loaded.callId)) as { figures: number[] }).figures).toEqual([3, 4, 5]);
    expect(await Agent.value(analyst, "nothing")).toBeUndefined();
  });

  test("failed calls keep nothing; the latest values are kept within count and bytes", async () => {
    const analyst = agent({ make: "return 'x'.repeat(args[0])", fail: "throw new Error('no')" }, { keepValues: { count: 3, maxBytes: 10_000 } });
    await analyst.fail();
    for (const size of [10, 20, 30, 40]) await analyst.make(size);
    const records = Agent.history(analyst);
    expect(records[0]!.outcome_summary.content_ref).toBeUndefined();
    const refs = records.slice(1).map((record) => record.outcome_summary.content_ref as string);
    expect(refs.every((ref) => typeof ref === "string")).toBe(true);
    // Count: the oldest of four went.
    expect(await Agent.value(analyst, refs[0]!)).toBeUndefined();
    expect((await Promise.all(refs.slice(1).map((ref) => Agent.value(analyst, ref)))).map((value) => (value as string).length)).toEqual([20, 30, 40]);
    // Bytes: a value too large to keep at all gets no content_ref and evicts nothing.
    const big = await analyst.make(6_000);
    expect(Agent.history(analyst).at(-1)!.outcome_summary.content_ref).toBeUndefined();
    expect(await Agent.value(analyst, big.callId)).toBeUndefined();
    expect(await Agent.value(analyst, refs[3]!)).toHaveLength(40);
    // Two values that fit one at a time but not together: the older goes.
    const first = await analyst.make(3_000);
    const second = await analyst.make(3_000);
    expect(await Agent.value(analyst, first.callId)).toBeUndefined();
    expect(await Agent.value(analyst, second.callId)).toHaveLength(3_000);
  });

  test("keepValues: false keeps nothing and records carry no content_ref; bad options are refused", async () => {
    const analyst = agent({ make: "return 1" }, { keepValues: false });
    const made = await analyst.make();
    expect(Agent.history(analyst)[0]!.outcome_summary.content_ref).toBeUndefined();
    expect(await Agent.value(analyst, made.callId)).toBeUndefined();
    expect(() => agent({}, { keepValues: { count: -1 } })).toThrow('Option "keepValues" must be false or { count?, maxBytes? } with whole numbers ≥ 0. Got count: -1.');
    expect(() => agent({}, { keepValues: { size: 1 } })).toThrow('"size" is not one of them.');
    expect(() => agent({}, { keepValues: true })).toThrow('Option "keepValues" must be false or');
  });

  test("the preview in the prompt names kept values", async () => {
    const provider = new ScriptedProvider({ programs: { make: "return 1", next: "return 2" } });
    const analyst = Agent.for("analyst", { provider, reuse: false });
    const made = await analyst.make();
    await analyst.next();
    expect(provider.calls.at(-1)!.user).toContain(`- ${made.callId} make: ok (value kept: content_ref ${made.callId})`);
    expect(provider.calls.at(-1)!.system).toContain("await content(ref)");
  });

  test("content() refuses what is not a reference, reads only its own agent's values, and counts toward the call budget", async () => {
    const owner = agent({ secret: "return { pin: 1234 }" });
    const secret = await owner.secret();
    const other = agent({
      peek: "return await content(args[0])",
      badType: "return await content(42)",
      huge: "return await content('x'.repeat(100000))",
      flood: "for (let i = 0; i < 300; i += 1) await content('nothing'); return 'done'",
    });
    expect((await other.peek(secret.callId)).value).toBeUndefined();
    expect(await other.badType()).toMatchObject({ errorType: "execution", errorMessage: "TypeError: content(ref) takes a record's content_ref (a string of at most 200 characters)." });
    expect((await other.huge()).errorType).toBe("execution");
    expect(await other.flood()).toMatchObject({ errorType: "budget_exceeded" });
    expect(await Agent.value(owner, secret.callId)).toEqual({ pin: 1234 });
  });
});
