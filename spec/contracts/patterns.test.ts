/**
 * JSON Schema `pattern`, `patternProperties` and `propertyNames` check with their own regular
 * expression, whatever pattern a process compiled first. Each test begins by compiling a
 * permissive pattern in its draft: this file runs in a process of its own, so for each draft
 * that pattern is the first one its validator compiles.
 */
import { describe, expect, test } from "vitest";
import { Agent, type AgentOptions } from "../../src/index.ts";
import { scriptedAgent } from "../../test-support/agents.ts";

const DRAFTS = [
  { draft: "07", $schema: undefined },
  { draft: "2019-09", $schema: "https://json-schema.org/draft/2019-09/schema" },
  { draft: "2020-12", $schema: "https://json-schema.org/draft/2020-12/schema" },
] as const;

/** A program that calls each tool with each input and says, in order, whether the tool accepted it. */
const TRY_INPUTS = `
  const seen = [];
  for (const [name, input] of args[0]) {
    try { await tools[name](input); seen.push("accepted"); } catch (error) { seen.push(error.name); }
  }
  return seen`;

describe.each(DRAFTS)("draft $draft, after a permissive pattern was compiled first", ({ $schema }) => {
  const schema = (body: object) => ({ ...($schema === undefined ? {} : { $schema }), ...body });

  test("a tool's inputSchema checks pattern, patternProperties and propertyNames with their own expressions", async () => {
    Agent.for("first", { methods: { anything: { returns: schema({ type: "string", pattern: "[\\s\\S]*" }) } } });
    const ran: string[] = [];
    const tool = (inputSchema: object) => ({ description: "Records its input.", inputSchema, execute: async (input: unknown) => void ran.push(JSON.stringify(input)) });
    const tools: AgentOptions["tools"] = {
      read: tool(schema({ type: "object", properties: { path: { type: "string", pattern: "^/srv/public/[a-z]+\\.txt$" } }, required: ["path"] })),
      tag: tool(schema({ type: "object", patternProperties: { "^x-[a-z]+$": { type: "number" } }, additionalProperties: false })),
      label: tool(schema({ type: "object", propertyNames: { pattern: "^[a-z]+$" } })),
    };
    const { agent } = scriptedAgent("files", { attempt: TRY_INPUTS }, { tools });
    const inputs = [
      ["read", { path: "/srv/public/notes.txt" }],
      ["read", { path: "/etc/passwd" }],
      ["tag", { "x-size": 3 }],
      ["tag", { evil: 3 }],
      ["label", { name: 1 }],
      ["label", { "Not A Name": 1 }],
    ];
    const outcome = await agent.attempt(inputs);
    expect(outcome.value).toEqual(["accepted", "TypeError", "accepted", "TypeError", "accepted", "TypeError"]);
    expect(ran).toEqual(['{"path":"/srv/public/notes.txt"}', '{"x-size":3}', '{"name":1}']);
  });

  test("a method's returns schema checks pattern, patternProperties and propertyNames with their own expressions", async () => {
    Agent.for("first", { methods: { anything: { returns: schema({ type: "string", pattern: "[\\s\\S]*" }) } } });
    const methods = {
      country: { returns: schema({ type: "object", properties: { country: { type: "string", pattern: "^[A-Z]{2}$" } }, required: ["country"] }) },
      headers: { returns: schema({ type: "object", patternProperties: { "^x-[a-z]+$": { type: "string" } }, additionalProperties: false }) },
      names: { returns: schema({ type: "object", propertyNames: { pattern: "^[a-z]+$" } }) },
    };
    const { agent } = scriptedAgent(
      "reporter",
      {
        country: "return { country: args[0] }",
        headers: "return { [args[0]]: 'value' }",
        names: "return { [args[0]]: 1 }",
      },
      { methods, maxGenerationAttempts: 1 },
    );
    expect((await agent.country("FR")).value).toEqual({ country: "FR" });
    expect(await agent.country("12345")).toMatchObject({ ok: false, errorType: "invalid_output", errorMessage: 'The value country returned does not match its returns schema: country: must match pattern "^[A-Z]{2}$"' });
    expect((await agent.headers("x-trace")).value).toEqual({ "x-trace": "value" });
    expect(await agent.headers("evil")).toMatchObject({ ok: false, errorType: "invalid_output", errorMessage: "The value headers returned does not match its returns schema: must NOT have additional properties" });
    expect((await agent.names("name")).value).toEqual({ name: 1 });
    expect(await agent.names("Not A Name")).toMatchObject({ ok: false, errorType: "invalid_output", errorMessage: expect.stringContaining("property name must be valid") });
  });
});
