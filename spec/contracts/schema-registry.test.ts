/**
 * A JSON Schema the host cannot use (an application's, or a tool server's) leaves the host's
 * validators as they were: later schemas, of any agent, still compile and check.
 */
import { expect, test } from "vitest";
import { Agent } from "../../src/index.ts";
import { scriptedAgent } from "../../test-support/agents.ts";

test.each([
  { draft: "07", $schema: undefined, metaId: "http://json-schema.org/draft-07/schema#" },
  { draft: "2020-12", $schema: "https://json-schema.org/draft/2020-12/schema", metaId: "https://json-schema.org/draft/2020-12/schema" },
])("a tool schema that claims the draft $draft meta-schema's id is refused, and later schemas still compile and check", async ({ $schema, metaId }) => {
  const draft = $schema === undefined ? {} : { $schema };
  const tool = (inputSchema: object) => ({ description: "Takes a name.", inputSchema, execute: async () => "done" });
  expect(() => Agent.for("claimer", { tools: { claim: tool({ ...draft, $id: metaId, type: "object" }) } })).toThrow(/inputSchema is not a usable JSON Schema \(schema with key or id ".*" already exists\)/);
  const { agent } = scriptedAgent("namer", { name: "try { return await tools.name({ name: args[0] }) } catch (error) { return error.name }" }, { tools: { name: tool({ ...draft, type: "object", properties: { name: { type: "string", pattern: "^[a-z]+$" } }, required: ["name"] }) } });
  expect((await agent.name("ana")).value).toBe("done");
  expect((await agent.name("Not a name")).value).toBe("TypeError");
});
