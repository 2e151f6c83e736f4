import { describe, expect, test } from "vitest";
import { Agent, ScriptedProvider } from "../../src/index.ts";

function lines(user: string): string[] {
  return user.split("\n").filter((line) => line.startsWith("- "));
}

describe("historyPreview", () => {
  test('"relevant" shows the latest call, earlier calls of the method, calls sharing arguments and recent errors', async () => {
    const provider = new ScriptedProvider({ programs: { convert: "return args[0] * 2", lookup: "return args[0].length", fail: "throw new Error('bad ' + args[0])", note: "return 1", remark: "return 0" } });
    const agent = Agent.for("helper", { provider, reuse: false, maxGenerationAttempts: 1, historyPreview: { strategy: "relevant", limit: 5 } });
    const converted = await agent.convert(21);
    const looked = await agent.lookup("oslo weather today");
    const failed = await agent.fail("input");
    for (let index = 0; index < 30; index += 1) await agent.note(index + 100);
    const latest = Agent.history(agent).at(-1)!;
    await agent.convert(4);
    const user = provider.calls.at(-1)!.user;
    expect(user).toContain("Relevant earlier calls:");
    expect(lines(user)).toEqual([
      expect.stringMatching(new RegExp(`^- ${latest.call_id} note: ok .*\\[latest\\]$`)),
      expect.stringMatching(new RegExp(`^- ${converted.callId} convert: ok .*\\[same method\\]$`)),
      expect.stringMatching(new RegExp(`^- ${failed.callId} fail: error \\(execution\\): Error: bad input \\[recent error\\]$`)),
    ]);
    await agent.lookup("weather in bergen");
    const shared = lines(provider.calls.at(-1)!.user);
    expect(shared).toContainEqual(expect.stringMatching(new RegExp(`^- ${looked.callId} lookup: ok .*\\[same method\\]$`)));
    await agent.remark("the oslo trip");
    // "oslo" is shared with the first lookup, still among the latest 50 records.
    expect(lines(provider.calls.at(-1)!.user)).toContainEqual(expect.stringMatching(new RegExp(`^- ${looked.callId} lookup: ok .*\\[shared arguments\\]$`)));
  });

  test("the block stops before maxChars, and the default stays the latest records", async () => {
    const provider = new ScriptedProvider({ programs: { add: "return args[0] + args[1]" } });
    const narrow = Agent.for("calc", { provider, reuse: false, historyPreview: { limit: 10, maxChars: 150 } });
    for (let index = 0; index < 12; index += 1) await narrow.add(index, 1);
    const shown = lines(provider.calls.at(-1)!.user);
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.join("\n").length).toBeLessThanOrEqual(150);
    const plain = Agent.for("calc", { provider, reuse: false });
    for (let index = 0; index < 5; index += 1) await plain.add(index, 1);
    const user = provider.calls.at(-1)!.user;
    expect(user).toContain("Latest:");
    expect(lines(user)).toHaveLength(3);
    expect(lines(user).map((line) => line.split(" ")[1])).toEqual(Agent.history(plain).slice(1, 4).map((record) => record.call_id));
  });

  test("historyPreviewLimit is the shorthand for the limit; bad values are refused", () => {
    const provider = new ScriptedProvider({ programs: {} });
    expect(() => Agent.for("x", { provider, historyPreview: { strategy: "nearest" as never } })).toThrow('Option "historyPreview" must be { limit?, strategy?: "latest" | "relevant", maxChars? }. Got strategy: "nearest".');
    expect(() => Agent.for("x", { provider, historyPreview: { maxChars: 10 } })).toThrow("maxChars must be a whole number ≥ 100; got 10.");
    expect(() => Agent.for("x", { provider, historyPreview: { size: 1 } as never })).toThrow('"size" is not one of them.');
  });
});
