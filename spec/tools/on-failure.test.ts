/**
 * Effects that can be undone (DESIGN 19): each write's state in the record and the log line, and
 * what `onFailure` does with a failed call's effects. A revert that throws, hangs, ignores its
 * signal or returns garbage; a tool without one; a write that answers late; a call cancelled
 * while its effects are undone; a shutdown during reverts; an `onFailure` that throws.
 */
import { tool } from "ai";
import { Ajv2020 } from "ajv/dist/2020.js";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { z } from "zod";
import { Agent, type CallFailure, type HistoryRecord, ScriptedProvider, SqliteStore, type AgentOptions, type Tool, type ToolCallRecord } from "../../src/index.ts";
import { agentWith } from "../../test-support/agents.ts";
import { tempLogPath } from "../../test-support/logs.ts";
import { waitFor } from "../../test-support/wait-for.ts";

const schema = JSON.parse(readFileSync(new URL("../../schema/history-record.schema.json", import.meta.url), "utf8")) as object;
const validateRecord = new Ajv2020({ allErrors: true, strict: false }).compile(schema);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Undo {
  readonly input: unknown;
  readonly result: unknown;
  readonly key: string;
  readonly callId: string;
}

/** A shop: `order` places an order (its result the order's number) and `revert` cancels it; the order book says what stands. */
function shop(overrides: Partial<Tool<{ item: string }, string>> = {}) {
  const book = new Map<string, { item: string; key: string | undefined }>();
  const undone: Undo[] = [];
  const keys: (string | undefined)[] = [];
  let next = 0;
  const order: Tool<{ item: string }, string> = {
    description: "Places an order; returns its number.",
    inputSchema: { type: "object", properties: { item: { type: "string" } }, required: ["item"] },
    execute: (input, { idempotencyKey }) => {
      keys.push(idempotencyKey);
      const number = `o-${++next}`;
      book.set(number, { item: input.item, key: idempotencyKey });
      return number;
    },
    revert: (input, result, { idempotencyKey, callId }) => {
      undone.push({ input, result, key: idempotencyKey, callId });
      const number = typeof result === "string" ? result : [...book].find(([, entry]) => entry.key === idempotencyKey)?.[0];
      if (number !== undefined) book.delete(number);
    },
    ...overrides,
  };
  return { order, book, undone, keys };
}

function agentOf(programs: Record<string, string>, tools: Record<string, Tool>, options: AgentOptions = {}) {
  return agentWith(programs, { role: "shop", log: tempLogPath("improv-undo-"), tools, ...options });
}

const PLACE_THREE_THEN_FAIL = "await tools.order({ item: 'a' }); await tools.order({ item: 'b' }); await tools.order({ item: 'c' }); throw new Error('the payment was declined')";

function lastRecord(history: () => readonly HistoryRecord[]): HistoryRecord {
  const record = history().at(-1) as HistoryRecord;
  expect(validateRecord(record), JSON.stringify(validateRecord.errors)).toBe(true);
  return record;
}

const states = (record: HistoryRecord) => (record.tool_calls ?? []).map((call: ToolCallRecord) => call.state);

describe("onFailure: \"revert\"", () => {
  test("a failed call's applied effects are undone newest first, each once, with what execute returned and its idempotency key; the record and the log line say reverted", async () => {
    const { order, book, undone, keys } = shop();
    const { agent, history, logLines } = agentOf({ buy: PLACE_THREE_THEN_FAIL }, { order }, { onFailure: "revert" });
    const outcome = await agent.buy();
    expect(outcome).toMatchObject({ ok: false, errorType: "execution" });
    expect(outcome.errorMessage).toContain("the payment was declined");
    expect(book.size).toBe(0);
    expect(undone.map((entry) => [entry.input, entry.result])).toEqual([
      [{ item: "c" }, "o-3"],
      [{ item: "b" }, "o-2"],
      [{ item: "a" }, "o-1"],
    ]);
    expect(keys).toEqual([1, 2, 3].map((n) => `${outcome.callId}:${n}`));
    expect(undone.map((entry) => entry.key)).toEqual([3, 2, 1].map((n) => `${outcome.callId}:${n}`));
    expect(undone.every((entry) => entry.callId === outcome.callId)).toBe(true);
    const record = lastRecord(history);
    expect(states(record)).toEqual(["reverted", "reverted", "reverted"]);
    expect(record.tool_calls!.every((call) => call.undoable === true && call.revert_error === undefined)).toBe(true);
    const line = logLines().at(-1)!;
    expect(line.effects).toEqual({ applied: 0, failed: 0, unknown: 0, reverted: 3, revert_failed: 0 });
    expect(line.on_failure).toBe("revert");
    expect(line.on_failure_error).toBeNull();
  });

  test("a call that ends ok keeps its effects, and so does a failed call under the default \"keep\"", async () => {
    const { order, book, undone } = shop();
    const kept = agentOf({ buy: PLACE_THREE_THEN_FAIL, fine: "return await tools.order({ item: 'x' })" }, { order });
    expect((await kept.agent.buy()).ok).toBe(false);
    expect(states(lastRecord(kept.history))).toEqual(["applied", "applied", "applied"]);
    expect(kept.logLines().at(-1)).toMatchObject({ effects: { applied: 3, reverted: 0 }, on_failure: "keep" });
    const reverting = agentOf({ fine: "return await tools.order({ item: 'x' })" }, { order }, { onFailure: "revert" });
    expect((await reverting.agent.fine()).ok).toBe(true);
    expect(states(lastRecord(reverting.history))).toEqual(["applied"]);
    expect(reverting.logLines().at(-1)).toMatchObject({ effects: { applied: 1, reverted: 0 }, on_failure: null });
    expect(undone).toEqual([]);
    expect(book.size).toBe(4);
  });

  test("a call that made no write keeps nothing to undo: the log line says no rule was applied", async () => {
    const { order, undone } = shop();
    const { agent, logLines } = agentOf({ fail: "throw new Error('no')" }, { order }, { onFailure: "revert" });
    expect((await agent.fail()).ok).toBe(false);
    expect(undone).toEqual([]);
    expect(logLines().at(-1)).toMatchObject({ effects: { applied: 0, failed: 0, unknown: 0, reverted: 0, revert_failed: 0 }, on_failure: null });
  });

  test("a revert that throws is revert_failed with why (host paths taken out); the others are still undone", async () => {
    let calls = 0;
    const { order, book } = shop({
      revert: (_input, result) => {
        calls += 1;
        if (result === "o-2") throw new Error("the warehouse at /srv/app/secret/wh.ts refused");
        book.delete(result as string);
      },
    });
    const { agent, history, logLines } = agentOf({ buy: PLACE_THREE_THEN_FAIL }, { order }, { onFailure: "revert" });
    expect((await agent.buy()).ok).toBe(false);
    expect(calls).toBe(3);
    expect([...book.keys()]).toEqual(["o-2"]);
    const record = lastRecord(history);
    expect(states(record)).toEqual(["reverted", "revert_failed", "reverted"]);
    expect(record.tool_calls![1]!.revert_error).toBe("its revert threw: the warehouse at [path] refused");
    expect(logLines().at(-1)!.effects).toEqual({ applied: 0, failed: 0, unknown: 0, reverted: 2, revert_failed: 1 });
  });

  test("a revert that hangs, ignoring its signal, is revert_failed at the tool's timeoutMs; its signal aborted; the call resolves", async () => {
    let signalled: AbortSignal | undefined;
    const { order } = shop({
      timeoutMs: 150,
      revert: (_input, _result, { signal }) => {
        signalled = signal;
        return new Promise(() => undefined);
      },
    });
    const { agent, history } = agentOf({ buy: "await tools.order({ item: 'a' }); throw new Error('no')" }, { order }, { onFailure: "revert" });
    const began = performance.now();
    expect((await agent.buy()).ok).toBe(false);
    expect(performance.now() - began).toBeLessThan(10_000);
    expect(signalled?.aborted).toBe(true);
    const record = lastRecord(history);
    expect(states(record)).toEqual(["revert_failed"]);
    expect(record.tool_calls![0]!.revert_error).toBe("its revert did not answer within the tool's timeoutMs (150 ms)");
  });

  test("a revert that returns garbage: a plain odd value is ignored (reverted); a thenable whose then throws, or that rejects with a non-Error, is revert_failed", async () => {
    const answers: unknown[] = [Symbol("odd"), { then: 5, huge: "x".repeat(100_000) }, Object.defineProperty({}, "then", { get: () => { throw new Error("then getter"); } }), { then: (_ok: unknown, fail: (why: unknown) => void) => fail(42) }];
    let n = 0;
    const { order } = shop({ revert: () => answers[n++] });
    const { agent, history } = agentOf({ buy: "for (const item of ['a', 'b', 'c', 'd']) await tools.order({ item }); throw new Error('no')" }, { order }, { onFailure: "revert" });
    expect((await agent.buy()).ok).toBe(false);
    const record = lastRecord(history);
    // Newest first: d got the symbol, c the odd object, b the throwing getter, a the non-Error rejection.
    expect(states(record)).toEqual(["revert_failed", "revert_failed", "reverted", "reverted"]);
    expect(record.tool_calls![0]!.revert_error).toBe("its revert threw: it failed with a value that is not an Error");
    expect(record.tool_calls![1]!.revert_error).toBe("its revert threw: then getter");
  });

  test("every write is listed in the record, however many calls came before it, with its input's keys kept when its strings are cut", async () => {
    const transfers: unknown[] = [];
    const balance: Tool = { description: "Reads the balance.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: () => 100 };
    const transfer: Tool<{ to: string; amount: number; memo?: string }> = {
      description: "Moves money.",
      inputSchema: { type: "object", properties: { to: { type: "string" }, amount: { type: "number" }, memo: { type: "string" } }, required: ["to", "amount"] },
      execute: (input) => transfers.push(input),
      revert: () => {
        throw new Error("the bank refused to undo it");
      },
    };
    const { agent, history } = agentOf(
      { move: "for (let i = 0; i < 50; i++) await tools.balance({}); await tools.transfer({ memo: 'x'.repeat(1200), to: 'mallory', amount: 2e6 }); throw new Error('declined')" },
      { balance, transfer },
      { onFailure: "revert" },
    );
    expect((await agent.move()).ok).toBe(false);
    expect(transfers).toHaveLength(1);
    const record = lastRecord(history);
    expect(record.tool_call_count).toBe(51);
    const listed = record.tool_calls?.filter((call) => call.tool === "transfer");
    expect(listed).toHaveLength(1);
    expect(listed?.[0]).toMatchObject({ state: "revert_failed", revert_error: expect.stringContaining("the bank refused to undo it"), input: { to: "mallory", amount: 2e6, memo: expect.stringMatching(/^x+…/) } });
    expect(JSON.stringify(listed?.[0]?.input).length).toBeLessThanOrEqual(1_000);
  });

  test("a tool without a revert is recorded as not undoable and left applied; a writing fetch never is undoable", async () => {
    const { order, book } = shop();
    const note: Tool = { description: "Sends a note.", inputSchema: { type: "object" }, execute: () => "sent" };
    const { agent, history, logLines } = agentOf({ buy: "await tools.order({ item: 'a' }); await tools.note({}); throw new Error('no')" }, { order, note }, { onFailure: "revert" });
    expect((await agent.buy()).ok).toBe(false);
    const record = lastRecord(history);
    expect(record.tool_calls!.map((call) => [call.tool, call.state, call.undoable])).toEqual([
      ["order", "reverted", true],
      ["note", "applied", false],
    ]);
    expect(book.size).toBe(0);
    expect(logLines().at(-1)!.effects).toMatchObject({ applied: 1, reverted: 1 });
  });

  test("a write that times out is unknown; when it answers late, its undo waits for it and gets what it returned", async () => {
    const { order, book, undone } = shop({
      timeoutMs: 100,
      execute: async (input: { item: string }, { idempotencyKey }) => {
        // Past its timeoutMs, within the time its undo waits for a late answer (the timeoutMs again).
        await sleep(160);
        book.set("late-1", { item: input.item, key: idempotencyKey });
        return "late-1";
      },
    });
    const { agent, history } = agentOf({ buy: "await tools.order({ item: 'a' })" }, { order }, { onFailure: "revert" });
    const outcome = await agent.buy();
    expect(outcome.ok).toBe(false);
    expect(outcome.errorMessage).toContain("did not answer within its timeoutMs (100 ms)");
    expect(undone).toEqual([{ input: { item: "a" }, result: "late-1", key: `${outcome.callId}:1`, callId: outcome.callId }]);
    expect(book.size).toBe(0);
    expect(states(lastRecord(history))).toEqual(["reverted"]);
  });

  test("a write that times out and never answers is undone by its idempotency key, with no result; under \"keep\" it stays unknown", async () => {
    const { order, undone } = shop({ timeoutMs: 80, execute: () => new Promise(() => undefined) });
    const reverting = agentOf({ buy: "await tools.order({ item: 'a' })" }, { order }, { onFailure: "revert" });
    const outcome = await reverting.agent.buy();
    expect(undone).toEqual([{ input: { item: "a" }, result: undefined, key: `${outcome.callId}:1`, callId: outcome.callId }]);
    expect(states(lastRecord(reverting.history))).toEqual(["reverted"]);
    const keeping = agentOf({ buy: "await tools.order({ item: 'a' })" }, { order });
    expect((await keeping.agent.buy()).ok).toBe(false);
    expect(states(lastRecord(keeping.history))).toEqual(["unknown"]);
    expect(keeping.logLines().at(-1)!.effects).toMatchObject({ unknown: 1 });
  });

  test("a program that catches the tool's errors and loops past maxWriteCalls, then fails: its writes within the limit are undone, newest first", async () => {
    const { order, book, undone } = shop();
    const loop = "for (let i = 0; i < 100; i++) { try { await tools.order({ item: 'i' + i }) } catch {} } throw new Error('gave up')";
    const { agent, history } = agentOf({ buy: loop }, { order }, { onFailure: "revert", maxWriteCalls: 5 });
    expect((await agent.buy()).ok).toBe(false);
    expect(undone.map((entry) => entry.result)).toEqual(["o-5", "o-4", "o-3", "o-2", "o-1"]);
    expect(book.size).toBe(0);
    const record = lastRecord(history);
    expect(record.tool_call_count).toBe(100);
    expect(record.tool_calls!.filter((call) => call.state !== undefined).map((call) => call.state)).toEqual(Array(5).fill("reverted"));
  });

  test("a cancelled call and a call past callTimeoutMs count as failed: what they applied is undone", async () => {
    const { order, book } = shop();
    // Read-only, so it is not an effect: it holds the program until the call ends.
    const wait: Tool = { description: "Waits.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, timeoutMs: 60_000, execute: (_input, { signal }) => new Promise((resolve) => signal.addEventListener("abort", resolve)) };
    const controller = new AbortController();
    const programs = { buy: "await tools.order({ item: 'a' }); await tools.wait({})" };
    const cancelled = agentOf(programs, { order, wait }, { onFailure: "revert", signal: controller.signal });
    const pending = cancelled.agent.buy();
    await waitFor(() => book.size === 1);
    controller.abort();
    expect(await pending).toMatchObject({ ok: false, errorType: "cancelled" });
    expect(states(lastRecord(cancelled.history))).toEqual(["reverted", undefined]);
    const timedOut = agentOf(programs, { order, wait }, { onFailure: "revert", callTimeoutMs: 300 });
    expect(await timedOut.agent.buy()).toMatchObject({ ok: false, errorType: "timeout" });
    expect(states(lastRecord(timedOut.history))).toEqual(["reverted", undefined]);
    expect(book.size).toBe(0);
  });

  test("a call cancelled while its revert runs: the revert is not cut short, and the call resolves after it", async () => {
    const controller = new AbortController();
    let revertSignal: AbortSignal | undefined;
    let finished = false;
    const { order } = shop({
      revert: async (_input, _result, { signal }) => {
        revertSignal = signal;
        controller.abort();
        await sleep(150);
        finished = true;
      },
    });
    const { agent, history } = agentOf({ buy: "await tools.order({ item: 'a' }); throw new Error('no')" }, { order }, { onFailure: "revert", signal: controller.signal });
    expect(await agent.buy()).toMatchObject({ ok: false, errorType: "execution" });
    expect(finished).toBe(true);
    expect(revertSignal?.aborted).toBe(false);
    expect(states(lastRecord(history))).toEqual(["reverted"]);
  });

  test("an AI SDK tool() with a revert beside it is undone the same way", async () => {
    const placed: string[] = [];
    const order = {
      ...tool({ description: "Places an order.", inputSchema: z.object({ item: z.string() }), execute: async ({ item }) => (placed.push(item), item) }),
      revert: (input: { item: string }) => void placed.splice(placed.indexOf(input.item), 1),
    };
    const { agent, history } = agentOf({ buy: "await tools.order({ item: 'a' }); await tools.order({ item: 'b' }); throw new Error('no')" }, { order }, { onFailure: "revert" });
    expect((await agent.buy()).ok).toBe(false);
    expect(placed).toEqual([]);
    expect(states(lastRecord(history))).toEqual(["reverted", "reverted"]);
  });
});

describe("onFailure as a function", () => {
  test("it gets the failure and its effects, and failure.revert() undoes them once however often it is called", async () => {
    const { order, book, undone } = shop();
    const seen: CallFailure[] = [];
    const afterRevert: unknown[] = [];
    const onFailure = async (failure: CallFailure) => {
      seen.push(failure);
      const [first, second] = await Promise.all([failure.revert(), failure.revert()]);
      afterRevert.push(first.map((effect) => effect.state), second === first || second.every((effect, i) => effect.state === first[i]!.state));
      await failure.revert();
    };
    const { agent, history, logLines } = agentOf({ buy: PLACE_THREE_THEN_FAIL }, { order }, { onFailure });
    const outcome = await agent.buy();
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ callId: outcome.callId, role: "shop", method: "buy", errorType: "execution" });
    expect(seen[0]!.errorMessage).toContain("the payment was declined");
    expect(seen[0]!.effects.map((effect) => [effect.tool, effect.input, effect.result, effect.state, effect.undoable, effect.idempotencyKey])).toEqual([
      ["order", { item: "a" }, "o-1", "applied", true, `${outcome.callId}:1`],
      ["order", { item: "b" }, "o-2", "applied", true, `${outcome.callId}:2`],
      ["order", { item: "c" }, "o-3", "applied", true, `${outcome.callId}:3`],
    ]);
    expect(afterRevert).toEqual([["reverted", "reverted", "reverted"], true]);
    expect(undone).toHaveLength(3);
    expect(book.size).toBe(0);
    expect(states(lastRecord(history))).toEqual(["reverted", "reverted", "reverted"]);
    expect(logLines().at(-1)).toMatchObject({ on_failure: "function", on_failure_error: null });
  });

  test("a tool's longest timeoutMs gives the function its full time, not a timer's overflow: a revert after a wait is made and recorded", async () => {
    const { order, book } = shop({ timeoutMs: 2 ** 31 - 1 });
    const onFailure = async (failure: CallFailure) => {
      await sleep(50);
      await failure.revert();
    };
    const { agent, history, logLines } = agentOf({ buy: "await tools.order({ item: 'a' }); throw new Error('no')" }, { order }, { onFailure });
    expect((await agent.buy()).ok).toBe(false);
    expect(book.size).toBe(0);
    expect(states(lastRecord(history))).toEqual(["reverted"]);
    expect(logLines().at(-1)?.on_failure_error ?? null).toBeNull();
  });

  test("failure.revert() called once the function is done undoes nothing, and says so: the record, written by then, stays true", async () => {
    const { order, book } = shop();
    let late: Promise<unknown> | undefined;
    const onFailure = (failure: CallFailure) => {
      late = sleep(50).then(() => failure.revert());
    };
    const { agent, history } = agentOf({ buy: "await tools.order({ item: 'a' }); throw new Error('no')" }, { order }, { onFailure });
    expect((await agent.buy()).ok).toBe(false);
    await expect(late).rejects.toThrow("failure.revert() was called after onFailure had settled");
    expect(book.size).toBe(1);
    expect(states(lastRecord(history))).toEqual(["applied"]);
  });

  test("a function that does not revert leaves the effects applied", async () => {
    const { order, book } = shop();
    const { agent, history } = agentOf({ buy: PLACE_THREE_THEN_FAIL }, { order }, { onFailure: () => undefined });
    expect((await agent.buy()).ok).toBe(false);
    expect(book.size).toBe(3);
    expect(states(lastRecord(history))).toEqual(["applied", "applied", "applied"]);
  });

  test("an agent the function asks is in the failed call's trace, under it, as an agent a tool calls is", async () => {
    const { order } = shop();
    const triage = agentWith({ decide: "return args[0] > 2 ? 'revert' : 'keep'" }, { role: "triage" });
    const onFailure = async (failure: CallFailure) => {
      if ((await triage.agent.decide(failure.effects.length)).value === "revert") await failure.revert();
    };
    const { agent, history } = agentOf({ buy: PLACE_THREE_THEN_FAIL }, { order }, { onFailure });
    expect((await agent.buy()).ok).toBe(false);
    const failed = lastRecord(history);
    expect(states(failed)).toEqual(["reverted", "reverted", "reverted"]);
    expect(triage.history().at(0)).toMatchObject({ trace_id: failed.trace_id, parent_call_id: failed.call_id });
  });

  test("after a program's own mistake its agent is free: the function may call it", async () => {
    const { order } = shop();
    let noted: unknown;
    const onFailure = async (failure: CallFailure) => {
      noted = (await self.agent.note(failure.errorType)).value;
    };
    const self = agentOf({ buy: "await tools.order({ item: 'a' }); return undefinedFunction()", note: "return 'noted ' + args[0]" }, { order }, { onFailure, maxGenerationAttempts: 1 });
    expect((await self.agent.buy()).ok).toBe(false);
    expect(noted).toBe("noted execution");
  });

  test("what the failure spent of the call's request budget does not stop its undoing: the function's calls have a budget of their own", async () => {
    const { order, book } = shop();
    const noop: Tool = { description: "Does nothing.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: () => 1 };
    const cancel: Tool<{ number: string }> = { description: "Cancels an order.", inputSchema: { type: "object", properties: { number: { type: "string" } }, required: ["number"] }, execute: ({ number }) => book.delete(number) };
    const clerk = agentWith({ cancel: "return await tools.cancel({ number: args[0] })" }, { role: "clerk", tools: { cancel } });
    const onFailure = async (failure: CallFailure) => {
      for (const effect of failure.effects) await clerk.agent.cancel(effect.result);
    };
    const { agent } = agentOf({ buy: "await tools.order({ item: 'a' }); for (let i = 0; i < 300; i++) await tools.noop({}); return 1" }, { order, noop }, { onFailure });
    expect((await agent.buy()).errorType).toBe("budget_exceeded");
    expect(book.size).toBe(0);
    expect(clerk.history().at(0)).toMatchObject({ outcome_summary: { status: "ok" } });
  });

  test("undoing that calls the agent whose programs write and fail again and again: the whole chain shares one budget of requests, and ends", async () => {
    let placed = 0;
    let agent: { buy(): Promise<{ ok: boolean }> } | undefined;
    const call = (self: unknown, method: string) => (self as Record<string, (input: unknown) => Promise<{ ok: boolean; errorMessage?: string }>>)[method]!;
    const order: Tool<{ item: string }, string> = {
      description: "Places an order; returns its number.",
      inputSchema: { type: "object", properties: { item: { type: "string" } }, required: ["item"] },
      execute: () => `o-${++placed}`,
      // The application lets its agent undo an order; each undoing call here writes and fails in turn.
      revert: async (_input, result) => {
        const outcome = await call(agent, "cancelOrder")({ order: result });
        if (!outcome.ok) throw new Error(outcome.errorMessage);
      },
    };
    const shopAgent = agentOf({ buy: "await tools.order({ item: 'paper' }); null.boom", cancelOrder: "await tools.order({ item: 'more paper' }); null.boom" }, { order }, { onFailure: "revert", maxGenerationAttempts: 1 });
    agent = shopAgent.agent;
    expect((await shopAgent.agent.buy()).ok).toBe(false);
    const settled = placed;
    await sleep(500);
    // 256 requests of the host for the call's undoing and everything it set off, one order each at most.
    expect(placed).toBeLessThanOrEqual(1 + 256);
    expect(placed).toBe(settled);
  }, 60_000);

  test("an onFailure that throws: the call's outcome is its own failure, the log line says what the function threw, nothing is lost", async () => {
    const { order, book } = shop();
    const onFailure = async (failure: CallFailure) => {
      await failure.revert();
      throw new Error("the pager at /home/ops/pager.ts is down");
    };
    const { agent, history, logLines } = agentOf({ buy: PLACE_THREE_THEN_FAIL }, { order }, { onFailure });
    const outcome = await agent.buy();
    expect(outcome).toMatchObject({ ok: false, errorType: "execution" });
    expect(book.size).toBe(0);
    expect(states(lastRecord(history))).toEqual(["reverted", "reverted", "reverted"]);
    expect(logLines().at(-1)).toMatchObject({ on_failure: "function", on_failure_error: "onFailure threw: the pager at [path] is down" });
    const sync = agentOf({ buy: PLACE_THREE_THEN_FAIL }, { order }, { onFailure: () => { throw "a string"; } });
    expect(await sync.agent.buy()).toMatchObject({ ok: false, errorType: "execution" });
    expect(sync.logLines().at(-1)).toMatchObject({ on_failure_error: "onFailure threw: a string" });
  });
});

describe("a shutdown while effects are undone", () => {
  test("Agent.close during a revert waits for it: close resolves true and the record says reverted", async () => {
    let reverting!: () => void;
    const started = new Promise<void>((resolve) => (reverting = resolve));
    const { order, book } = shop({
      revert: async (_input, result) => {
        reverting();
        await sleep(200);
        book.delete(result as string);
      },
    });
    const { agent, history } = agentOf({ buy: "await tools.order({ item: 'a' }); throw new Error('no')" }, { order }, { onFailure: "revert" });
    const pending = agent.buy();
    await started;
    expect(await Agent.close(agent)).toBe(true);
    expect((await pending).ok).toBe(false);
    expect(book.size).toBe(0);
    expect(states(lastRecord(history))).toEqual(["reverted"]);
  });

  test("store.close() during a revert waits for the call: the durable record is committed with the final state", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "improv-undo-")), "agents.db");
    let reverting!: () => void;
    const started = new Promise<void>((resolve) => (reverting = resolve));
    const { order } = shop({
      revert: async () => {
        reverting();
        await sleep(200);
      },
    });
    const provider = new ScriptedProvider({ programs: { buy: "await tools.order({ item: 'a' }); throw new Error('no')" } });
    const store = new SqliteStore(path);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const agent = (await Agent.open("shop", { provider, store, id: "shop-1", tools: { order }, onFailure: "revert" })) as any;
    const pending = agent.buy();
    await started;
    await store.close();
    expect((await pending).ok).toBe(false);
    const reopened = new SqliteStore(path);
    const again = await Agent.open("shop", { provider, store: reopened, id: "shop-1" });
    const record = (Agent.history(again) as readonly HistoryRecord[]).at(-1)!;
    expect(validateRecord(record)).toBe(true);
    expect(states(record)).toEqual(["reverted"]);
    await reopened.close();
  });
});

describe("the options", () => {
  test("onFailure and a tool's revert are checked at construction", () => {
    const provider = new ScriptedProvider({ programs: {} });
    expect(() => Agent.for("shop", { provider, onFailure: "undo" as never })).toThrow(new TypeError('Option "onFailure" must be "keep", "revert" or a function (failure) => void, got the string "undo".'));
    const order = { inputSchema: { type: "object" }, execute: () => 1, revert: "cancel" } as unknown as Tool;
    expect(() => Agent.for("shop", { provider, tools: { order } })).toThrow(/Tool "order": revert must be a function/);
  });

  test("a delegated call keeps its own ledger: its failed writes are undone by its own onFailure, the caller's record lists only its own", async () => {
    const { order, book } = shop();
    const provider = new ScriptedProvider({
      programs: {
        "shop.buy": "await tools.order({ item: 'mine' }); const r = await delegate('helper').buy(); return r.ok",
        "helper.buy": "await tools.order({ item: 'helper' }); throw new Error('helper failed')",
      },
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const agent = Agent.for("shop", { provider, tools: { order }, onFailure: "revert" }) as any;
    const outcome = await agent.buy();
    expect(outcome).toMatchObject({ ok: true, value: false });
    expect([...book.values()].map((entry) => entry.item)).toEqual(["mine"]);
    const record = (Agent.history(agent) as readonly HistoryRecord[]).at(-1)!;
    expect(record.tool_calls!.map((call) => [call.input, call.state])).toEqual([[{ item: "mine" }, "applied"]]);
  });
});
