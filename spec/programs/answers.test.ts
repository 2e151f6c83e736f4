import { describe, expect, test } from "vitest";
import { Agent, kw, ScriptedProvider, type Outcome } from "../../src/index.ts";
import { readLogLines, tempLogPath } from "../../test-support/logs.ts";
import { ANSWERS, METHODS, type ReplyCase } from "./fixtures/answers-and-methods.ts";

/** Calls the case's method once per input, on one agent; returns the outcomes and the provider. */
async function callTwice(reply: ReplyCase, options: { reuse?: boolean; log?: string } = {}): Promise<{ outcomes: Outcome[]; provider: ScriptedProvider; agent: ReturnType<typeof Agent.for> }> {
  const provider = new ScriptedProvider({ programs: { [reply.method]: reply.program } });
  const agent = Agent.for(`replies-${reply.method}`, { provider, ...options });
  if (reply.context !== undefined) agent.remember(structuredClone(reply.context) as Record<string, unknown>);
  const call = agent[reply.method] as (...values: unknown[]) => Promise<Outcome>;
  const outcomes: Outcome[] = [];
  for (const args of reply.calls) outcomes.push(await call(...args, ...(reply.kwargs === undefined ? [] : [kw(reply.kwargs)])));
  return { outcomes, provider, agent };
}

describe("prose a program wrote is an answer, not a method", () => {
  test.each(ANSWERS.map((reply) => [reply.name, reply] as const))("an answer is not kept: %s", async (_name, reply) => {
    const { outcomes, provider, agent } = await callTwice(reply);
    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, true]);
    // The second input got its own program, not the first answer with the new input pasted in.
    expect(provider.calls).toHaveLength(2);
    const [first] = Agent.history(agent);
    expect(first?.reuse_decision).toEqual({ kept: false, reason: expect.stringMatching(/^its result is prose it wrote itself \(".+"\): an answer, not a method$/) });
  });

  test.each(METHODS.map((reply) => [reply.name, reply] as const))("a method is kept and answers the next input right: %s", async (_name, reply) => {
    const { outcomes, provider, agent } = await callTwice(reply);
    const fresh = await callTwice(reply, { reuse: false });
    expect(provider.calls).toHaveLength(1);
    expect(Agent.history(agent).map((record) => [record.program_source, record.artifact_hit])).toEqual([
      ["generated", false],
      ["reused", true],
    ]);
    expect(Agent.history(agent)[0]?.reuse_decision).toMatchObject({ kept: true });
    // What the kept program answered is what a program written for that input answers.
    expect(outcomes.map((outcome) => outcome.value)).toEqual(fresh.outcomes.map((outcome) => outcome.value));
    expect(fresh.provider.calls).toHaveLength(2);
  });

  test("the log line says whether the program was kept and why; a reused call decides nothing", async () => {
    const log = tempLogPath("improv-answers-");
    const argue = ANSWERS.find((reply) => reply.method === "argue") as ReplyCase;
    await callTwice(argue, { log });
    await callTwice(METHODS.find((reply) => reply.method === "add") as ReplyCase, { log });
    const lines = readLogLines(log);
    expect(lines.map((line) => [line.method, (line.reuse_decision as { kept: boolean } | null)?.kept ?? null])).toEqual([
      ["argue", false],
      ["argue", false],
      ["add", true],
      ["add", null],
    ]);
    expect((lines[0]?.reuse_decision as { reason: string }).reason).toContain('("is best understood as a harmony of the soul, in which each part performs its pr…")');
    expect((lines[2]?.reuse_decision as { reason: string }).reason).toBe("it reads the call's input, holds none of it in its text, and its result is computed, not prose it wrote");
  });

  test("a call whose method takes no part in reuse says why in its record; a failed call decides nothing", async () => {
    const provider = new ScriptedProvider({ programs: { ask: "return args[0].length", add: "return args[0] + args[1]", fail: "throw new Error('no')" } });
    const agent = Agent.for("assistant", { provider, reuse: { except: ["add"] } });
    await agent.ask("how long is this");
    await agent.add(1, 2);
    await agent.fail(1);
    expect(Agent.history(agent).map((record) => record.reuse_decision)).toEqual([
      { kept: false, reason: "ask by convention takes free-form requests (name it in reuse: { only } to keep its programs)" },
      { kept: false, reason: "the method is named in reuse: { except }" },
      undefined,
    ]);
  });
});
