/**
 * A program's delegate contract is the first schema this file's process compiles: its
 * permissive pattern must not decide what any later schema, of any agent, accepts.
 */
import { expect, test } from "vitest";
import { scriptedAgent } from "../../test-support/agents.ts";

test("a program's contract holding [\\s\\S]*, compiled first in a process, does not decide what a mail tool of an agent made later accepts", async () => {
  const contract = JSON.stringify({ methods: { write: { returns: { type: "string", pattern: "[\\s\\S]*" } } } });
  const { agent: boss } = scriptedAgent("boss", { "boss.run": `const r = await delegate("writer", ${contract}).write(); return r.ok`, "writer.write": "return 'anything at all'" });
  expect((await boss.run()).value).toBe(true);

  const sent: unknown[] = [];
  const mail = {
    description: "Sends mail to someone at example.com.",
    inputSchema: { type: "object", properties: { to: { type: "string", pattern: "^[a-z]+@example\\.com$" } }, required: ["to"] },
    execute: async (input: unknown) => void sent.push(input),
  };
  const { agent: assistant } = scriptedAgent(
    "assistant",
    { send: "try { await tools.mail({ to: args[0] }); return 'sent' } catch (error) { return error.name + ': ' + error.message }" },
    { tools: { mail } },
  );
  expect((await assistant.send("attacker@evil.test")).value).toBe('TypeError: tools.mail(input): the input does not match the tool\'s schema: to: must match pattern "^[a-z]+@example\\.com$"');
  expect((await assistant.send("ana@example.com")).value).toBe("sent");
  expect(sent).toEqual([{ to: "ana@example.com" }]);
});
