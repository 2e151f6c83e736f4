import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider, type Outcome } from "../../../src/index.ts";
import { syntheticRecord } from "../../../test-support/records.ts";

// memoryLimitMb is what the program gets: the runtime's heap and the history mirror come on top,
// and a program that allocates past its own limit ends memory_limit. The engine enforces the
// limit at its garbage collections, with the slack docs/security.md describes (its young
// generation: 3 MiB below 128 MiB), so the sizes here stay clear of the line on either side.
const LIMIT_MB = 32;
const PROGRAMS = {
  // Plain JavaScript numbers on the engine's heap, held while the program goes on computing.
  numbers: "const a = Array.from({ length: args[0] }, (_, i) => i + 0.5); let sum = 0; for (let k = 0; k < 3; k++) for (let i = 0; i < a.length; i++) sum += a[i]; return a.length",
  // Bytes outside the heap, counted against the same limit.
  bytes: "const b = new Uint8Array(args[0] * 2 ** 20); b.fill(1); return b.length",
};

async function run(agent: ReturnType<typeof Agent.for>, method: keyof typeof PROGRAMS, size: number): Promise<Outcome> {
  return (agent[method] as (size: number) => Promise<Outcome>)(size);
}

describe("memoryLimitMb is what the program gets", () => {
  test.each([
    ["a fresh agent", 0],
    ["an agent with 20,000 records of history", 20_000],
  ])("%s: a program within its limit runs; one past it ends memory_limit", async (_name, records) => {
    const agent = Agent.for("memory-user", { provider: new ScriptedProvider({ programs: PROGRAMS }), memoryLimitMb: LIMIT_MB, executionTimeoutMs: 20_000, reuse: false });
    if (records > 0) agent.remember({ conversation_history: Array.from({ length: records }, (_, i) => syntheticRecord(i)) });
    // 3 million numbers: 24 MB, within 32 MiB whatever the history holds.
    expect(await run(agent, "numbers", 3_000_000)).toMatchObject({ ok: true, value: 3_000_000 });
    expect(await run(agent, "bytes", 24)).toMatchObject({ ok: true, value: 24 * 2 ** 20 });
    // 6 million numbers: 48 MB, past the limit (the mirror's room is not the program's).
    const past = await run(agent, "numbers", 6_000_000);
    expect(past).toMatchObject({ ok: false, errorType: "memory_limit", retriable: false });
    expect(past.errorMessage).toBe(`The program used more memory than memoryLimitMb (${LIMIT_MB} MiB) and was stopped.`);
    // 44 MiB of bytes: past the limit with the engine's slack and the runtime's own heap (about 2 MiB) on top.
    expect((await run(agent, "bytes", 44)).errorType).toBe("memory_limit");
    // The agent goes on with its history: every call left its record.
    expect(Agent.history(agent)).toHaveLength(records + 4);
    expect(await run(agent, "bytes", 8)).toMatchObject({ ok: true });
  });
});
