/**
 * maxWriteCalls (DESIGN 19): the calls of tools that may change the world one call's programs may
 * make. A program that catches the tool's errors and keeps looping stops at the limit; reads and
 * refused writes do not count against it; delegated calls' writes count against the whole tree's.
 */
import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider, type Tool } from "../../src/index.ts";
import { egressAgent, serve } from "../egress/harness.ts";

const LOOP = `let placed = 0, refused = 0, last = "";
for (let i = 0; i < 1000; i++) {
  try { await tools.order({ item: "mug" }); placed++; } catch (e) { refused++; last = e.name + ": " + e.message; if (refused >= 50) break; }
}
return { placed, refused, last };`;

function shop(options: { maxWriteCalls?: number; approve?: (input: unknown) => boolean } = {}) {
  const orders: unknown[] = [];
  let reads = 0;
  const order: Tool = { description: "Places an order.", inputSchema: { type: "object", properties: { item: { type: "string" } }, required: ["item"] }, execute: (input) => orders.push(input) };
  const stock: Tool = { description: "Reads the stock.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: () => ++reads };
  const provider = new ScriptedProvider({
    programs: {
      "shop.loop": LOOP,
      "shop.reads": "for (let i = 0; i < 40; i++) await tools.stock({}); await tools.order({ item: 'one' }); return 'ok'",
      "shop.fanout": "const a = await delegate('helper').place(); const b = await delegate('helper').place(); let mine = 0; for (let i = 0; i < 5; i++) { try { await tools.order({ item: 'x' }); mine++ } catch { break } } return [a.value, b.value, mine]",
      "helper.place": "let n = 0; for (let i = 0; i < 5; i++) { try { await tools.order({ item: 'h' }); n++ } catch { break } } return n",
      "shop.deniedThenParallel": "try { await tools.order({ item: 'denied' }) } catch {} const settled = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => tools.order({ item: 'p' + i }))); return settled.filter((each) => each.status === 'fulfilled').length",
      "shop.parallel": "const settled = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => tools.order({ item: 'p' + i }))); return settled.filter((each) => each.status === 'fulfilled').length",
      "shop.denied": "let refused = 0; for (let i = 0; i < 30; i++) { try { await tools.order({ item: i % 2 ? 'odd' : 'even' }) } catch { refused++ } } return refused",
    },
  });
  const agent = Agent.for("shop", {
    provider,
    tools: { order, stock },
    ...(options.maxWriteCalls === undefined ? {} : { maxWriteCalls: options.maxWriteCalls }),
    ...(options.approve === undefined ? {} : { toolApproval: ({ input }) => options.approve!(input) }),
  });
  return { agent, orders, reads: () => reads };
}

describe("maxWriteCalls", () => {
  test("a program that catches the tool's errors and keeps looping stops at the default 20 writes; each write past it is a ToolError naming the limit", async () => {
    const { agent, orders } = shop();
    const outcome = await agent.loop();
    expect(outcome.errorMessage).toBeUndefined();
    expect(outcome.value).toEqual({ placed: 20, refused: 50, last: expect.stringMatching(/^ToolError: tools\.order: this call has made 20 calls of tools that may change the world, the most it may make \(maxWriteCalls: 20\); this one was not made\.$/) });
    expect(orders).toHaveLength(20);
    const [record] = Agent.history(agent);
    expect(record?.tool_call_count).toBe(70);
    expect(record?.tool_calls?.filter((call) => call.ok)).toHaveLength(20);
  });

  test("the limit is the agent's option, 0 allowing no writes; the next call has its own count", async () => {
    const { agent, orders } = shop({ maxWriteCalls: 3 });
    expect((await agent.loop()).value).toMatchObject({ placed: 3, refused: 50 });
    expect((await agent.loop()).value).toMatchObject({ placed: 3 });
    expect(orders).toHaveLength(6);
    const none = shop({ maxWriteCalls: 0 });
    expect((await none.agent.loop()).value).toMatchObject({ placed: 0, refused: 50 });
    expect(none.orders).toHaveLength(0);
  });

  test("reads do not count; writes denied by toolApproval do not count; delegated calls' writes count against the tree's limit, so delegating does not multiply it", async () => {
    const reading = shop({ maxWriteCalls: 1 });
    expect((await reading.agent.reads()).value).toBe("ok");
    expect(reading.reads()).toBe(40);
    const approving = shop({ maxWriteCalls: 10, approve: (input) => (input as { item: string }).item === "even" });
    // 15 of the 30 are denied; the other 15 meet the limit at 10.
    expect((await approving.agent.denied()).value).toBe(20);
    expect(approving.orders).toHaveLength(10);
    const fanning = shop({ maxWriteCalls: 4 });
    expect((await fanning.agent.fanout()).value).toEqual([4, 0, 0]);
    expect(fanning.orders).toHaveLength(4);
    const [helperRecord] = Agent.history(fanning.agent).slice(-1);
    expect(helperRecord?.tool_calls?.some((call) => call.error_message?.includes("counting the calls it delegated and those that delegated to it"))).toBe(true);
  });

  test("calls made in parallel: no more than the limit reach the tool, with or without an approval to wait for; a denied one gives its place back", async () => {
    const parallel = shop({ maxWriteCalls: 2 });
    expect((await parallel.agent.parallel()).value).toBe(2);
    expect(parallel.orders).toHaveLength(2);
    const approvals: unknown[] = [];
    const slow = shop({ maxWriteCalls: 3, approve: (input) => (approvals.push(input), (input as { item: string }).item !== "denied") });
    // The first is denied, and gives its place back: three of the ten in parallel are asked about and placed.
    expect((await slow.agent.deniedThenParallel()).value).toBe(3);
    expect(slow.orders).toHaveLength(3);
    expect(approvals).toHaveLength(4);
  });

  test("the option is checked at construction", () => {
    const provider = new ScriptedProvider({ programs: {} });
    expect(() => Agent.for("shop", { provider, maxWriteCalls: -1 })).toThrow(new RangeError('Option "maxWriteCalls" must be at least 0, got -1.'));
    expect(() => Agent.for("shop", { provider, maxWriteCalls: 1.5 })).toThrow(TypeError);
  });
});

describe("maxWriteCalls counts a program's fetches that may write", () => {
  test("POSTs past the limit are not sent; GETs are not counted", async () => {
    let posts = 0;
    let gets = 0;
    const server = await serve({
      "/orders": (request, response) => {
        if (request.method === "POST") posts += 1;
        else gets += 1;
        response.end("ok");
      },
    });
    const program = `let sent = 0, refused = 0, last = "";
for (let i = 0; i < 8; i++) { try { await fetch("${server.origin}/orders", { method: "POST", body: "x" }); sent++ } catch (e) { refused++; last = e.message } }
for (let i = 0; i < 8; i++) await fetch("${server.origin}/orders");
return { sent, refused, last };`;
    const { agent } = egressAgent({ order: program }, { egress: { allow: [server.origin], methods: ["GET", "POST"] }, maxWriteCalls: 3 });
    const outcome = await agent.order();
    expect(outcome.errorMessage).toBeUndefined();
    expect(outcome.value).toEqual({ sent: 3, refused: 5, last: expect.stringContaining("(maxWriteCalls: 3); this request was not sent.") });
    expect(posts).toBe(3);
    expect(gets).toBe(8);
  });

  test("POSTs made in parallel, each waiting for its approval: no more than the limit are asked about and sent", async () => {
    let posts = 0;
    const server = await serve({
      "/orders": (_request, response) => {
        posts += 1;
        response.end("ok");
      },
    });
    const program = `const settled = await Promise.allSettled(Array.from({ length: 10 }, () => fetch("${server.origin}/orders", { method: "POST", body: "x" }))); return settled.filter((each) => each.status === "fulfilled").length`;
    let approvals = 0;
    const toolApproval = async () => {
      approvals += 1;
      await new Promise((resolve) => setTimeout(resolve, 5));
      return true;
    };
    const { agent } = egressAgent({ order: program }, { egress: { allow: [server.origin], methods: ["POST"] }, maxWriteCalls: 1, toolApproval });
    expect((await agent.order()).value).toBe(1);
    expect(posts).toBe(1);
    expect(approvals).toBe(1);
  });
});

describe("the effect of each write, in the record", () => {
  test("applied, failed or unknown, with the idempotency key the tool was given: the call's id and the write's place among its writes", async () => {
    const keys: (string | undefined)[] = [];
    const charge: Tool<{ mode: string }> = {
      description: "Charges a card.",
      inputSchema: { type: "object", properties: { mode: { type: "string" } }, required: ["mode"] },
      timeoutMs: 100,
      execute: async ({ mode }, { idempotencyKey }) => {
        keys.push(idempotencyKey);
        if (mode === "throw") throw new Error("card declined");
        if (mode === "hang") await new Promise(() => {});
        return "charged";
      },
    };
    const look: Tool = { description: "Looks.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: (_input, { idempotencyKey }) => keys.push(idempotencyKey ?? "none") };
    const provider = new ScriptedProvider({
      programs: { pay: "await tools.look({}); await tools.charge({ mode: 'ok' }); try { await tools.charge({ mode: 'throw' }) } catch {} try { await tools.charge({ mode: 'hang' }) } catch {} try { await tools.charge({ bad: 1 }) } catch {} return 'done'" },
    });
    const agent = Agent.for("shop", { provider, tools: { charge, look } });
    const outcome = await agent.pay();
    expect(outcome.value).toBe("done");
    expect(keys).toEqual(["none", `${outcome.callId}:1`, `${outcome.callId}:2`, `${outcome.callId}:3`]);
    const calls = Agent.history(agent)[0]?.tool_calls ?? [];
    expect(calls.map((call) => [call.tool, call.ok, call.state])).toEqual([
      ["look", true, undefined],
      ["charge", true, "applied"],
      ["charge", false, "failed"],
      ["charge", false, "unknown"],
      ["charge", false, undefined],
    ]);
  });

  test("a fetch that may write is an effect too: applied once the server answered, never undoable; one refused before it was sent has no state", async () => {
    const server = await serve({ "/orders": (_request, response) => void response.end("ok") });
    const program = `await fetch("${server.origin}/orders", { method: "POST", body: "x" }); await fetch("${server.origin}/orders"); try { await fetch("http://127.0.0.1:1/nope", { method: "POST" }) } catch {} throw new Error("no")`;
    const { agent, history, logLines } = egressAgent({ order: program }, { egress: { allow: [server.origin], methods: ["GET", "POST"] }, onFailure: "revert" });
    expect((await agent.order()).ok).toBe(false);
    const calls = history().at(-1)?.tool_calls ?? [];
    expect(calls.map((call) => [call.effect, call.state, call.undoable])).toEqual([
      ["write", "applied", false],
      ["read", undefined, undefined],
      ["write", undefined, undefined],
    ]);
    expect(logLines().at(-1)).toMatchObject({ effects: { applied: 1, reverted: 0 }, on_failure: "revert" });
  });
});
