import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider, SqliteStore, type HistoryRecord, type Tool } from "../../src/index.ts";
import { sandboxPool } from "../../src/sandbox/host/pool.ts";

describe("a program that called a tool that may change the world is never run again on its own", () => {
  test("a store conflict does not re-run it: the call ends store, naming the tool, and the context change is not kept", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "improv-effects-")), "agents.db");
    const provider = new ScriptedProvider({ programs: { order: "await tools.charge({ cents: 500 }); context.orders = (context.orders ?? 0) + 1; return context.orders", bump: "context.other = 1; return 1" } });
    // Two handles of one durable agent, as two processes would have; the tool commits through the other one mid-run.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const other = (await Agent.open("shop", { provider, store: new SqliteStore(path), id: "shop-1" })) as any;
    let charges = 0;
    const charge: Tool = {
      description: "Charges a card.",
      inputSchema: { type: "object" },
      execute: async () => {
        charges += 1;
        expect((await other.bump()).ok).toBe(true);
        return "charged";
      },
    };
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const shop = (await Agent.open("shop", { provider, store: new SqliteStore(path), id: "shop-1", tools: { charge } })) as any;
    const outcome = await shop.order();
    expect(outcome).toMatchObject({ ok: false, errorType: "store" });
    expect(outcome.errorMessage).toContain("tools.charge");
    expect(outcome.errorMessage).toContain("was not run again");
    expect(charges).toBe(1);
    const record = (Agent.history(shop) as readonly HistoryRecord[]).at(-1)!;
    expect(record.tool_calls).toEqual([expect.objectContaining({ tool: "charge", ok: true, effect: "write" })]);
    expect(shop.runtimeContext.orders).toBeUndefined();
  });

  test("with a read-only tool the same conflict re-runs the program on the newer context", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "improv-effects-")), "agents.db");
    const provider = new ScriptedProvider({ programs: { order: "await tools.look({}); context.orders = (context.orders ?? 0) + 1; return context.orders", bump: "context.other = (context.other ?? 0) + 1; return 1" } });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const other = (await Agent.open("shop", { provider, store: new SqliteStore(path), id: "shop-2" })) as any;
    let looks = 0;
    const look: Tool = {
      description: "Reads a price.",
      inputSchema: { type: "object" },
      annotations: { readOnlyHint: true },
      execute: async () => {
        looks += 1;
        if (looks === 1) await other.bump();
        return 1;
      },
    };
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const shop = (await Agent.open("shop", { provider, store: new SqliteStore(path), id: "shop-2", tools: { look } })) as any;
    expect((await shop.order()).value).toBe(1);
    expect(looks).toBe(2);
    expect(shop.runtimeContext).toMatchObject({ orders: 1, other: 1 });
  });

  test("a lost sandbox process does not resend it: the tool ran once, the outcome says the process stopped", async () => {
    let charges = 0;
    const charge: Tool = {
      description: "Charges a card, then the sandbox process dies.",
      inputSchema: { type: "object" },
      execute: () => {
        charges += 1;
        for (const pid of sandboxPool().pids) process.kill(pid, "SIGKILL");
        return new Promise((resolve) => setTimeout(() => resolve("charged"), 100));
      },
    };
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const agent = Agent.for("payer", { provider: new ScriptedProvider({ programs: { pay: ["return await tools.charge({})", "return 'again'"] } }), tools: { charge } }) as any;
    const outcome = await agent.pay();
    expect(outcome.ok).toBe(false);
    expect(outcome.errorMessage).toMatch(/sandbox process stopped/);
    expect(charges).toBe(1);
    expect((Agent.history(agent) as readonly HistoryRecord[]).at(-1)!.tool_calls).toHaveLength(1);
  });
});
