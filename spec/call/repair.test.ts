import { spawnSync } from "node:child_process";
import { afterEach, describe, expect, test } from "vitest";
import { Agent, OpenAIProvider } from "../../src/index.ts";
import { scriptedAgent } from "../../test-support/agents.ts";
import { OpenAITestServer } from "../../test-support/openai-server.ts";
import { readLogLines, tempLogPath } from "../../test-support/logs.ts";


let server: OpenAITestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("repair with feedback", () => {
  test("an engine ReferenceError is retried, and the next request shows the program, the error and where it was", async () => {
    const broken = "const total = args[0] + args[1];\nreturn totl;";
    const { agent, provider } = scriptedAgent("calculator", { add: [broken, "return args[0] + args[1]"] });
    const r = await agent.add(2, 3);
    expect(r.value).toBe(5);
    expect(provider.calls).toHaveLength(2);
    expect(provider.calls[0]?.user).not.toContain("did not work");
    const user = provider.calls[1]?.user ?? "";
    expect(user).toContain(`Your previous answer (attempt 1) did not work. It was:\n\`\`\`js\n${broken}\n\`\`\`\n`);
    expect(user).toMatch(/It failed with: ReferenceError: totl is not defined \(line 2, column \d+ of that program\)\.\nCorrect the mistake/);
    expect(user.indexOf("did not work")).toBeLessThan(user.indexOf("Write the body of `add`."));
  });

  test("an engine TypeError (calling what is not a function) is retried", async () => {
    const { agent, provider } = scriptedAgent("calculator", { add: ["return args.sum()", "return 7"] });
    expect((await agent.add()).value).toBe(7);
    expect(provider.calls[1]?.user).toContain("It failed with: TypeError: args.sum is not a function (line 1, column");
  });

  test("a program that does not parse is retried, with the parser's line and column", async () => {
    const { agent, provider } = scriptedAgent("calculator", { add: ["const a = 1;\nreturn (a +;", "return 1"] });
    expect((await agent.add()).value).toBe(1);
    // acorn counts columns from 0; the feedback, like every position improv reports, from 1.
    expect(provider.calls[1]?.user).toContain("It failed with: SyntaxError: Unexpected token (line 2, column 12 of that program).");
  });

  test.each([
    ["an argument check's own throw", "if (typeof args[0] !== 'number') throw new TypeError('add needs numbers'); return args[0]", "TypeError: add needs numbers"],
    ["an error made first and thrown later", "const problem = new ReferenceError('no such entry'); throw problem", "ReferenceError: no such entry"],
    ["an error thrown by the program's own helper", "function check(x) { if (typeof x !== 'number') throw new TypeError('missing x') }\ncheck(args[0]); return 1", "TypeError: missing x"],
    ["an error of the program's own class", "class Invalid extends TypeError { constructor(m) { super(m); this.name = 'TypeError' } }\nthrow new Invalid('bad input')", "TypeError: bad input"],
    ["an error made by calling the constructor", "throw TypeError('called, not constructed')", "TypeError: called, not constructed"],
  ])("%s is the call's answer, not retried", async (_name, program, message) => {
    const { agent, provider } = scriptedAgent("calculator", { add: [program, "return 'retried'"] });
    const r = await agent.add("x");
    expect(r).toMatchObject({ errorType: "execution", errorMessage: message });
    expect(provider.calls).toHaveLength(1);
  });

  test.each([
    ["a class used before its declaration", "const c = new Calc();\nreturn c.add(1, 2);\nclass Calc { add(a, b) { return a + b } }", "ReferenceError"],
    ["a class called without new", "class Calc { add(a, b) { return a + b } }\nreturn Calc().add(1, 2)", "TypeError"],
  ])("an engine error at a class of the program's own (%s) is a mistake, retried", async (_name, program, name) => {
    const { agent, provider } = scriptedAgent("calculator", { add: [program, "return 3"] });
    expect((await agent.add()).value).toBe(3);
    expect(provider.calls[1]?.user).toContain(`It failed with: ${name}: `);
  });

  test("a failed attempt's context changes are discarded, and the call leaves one record", async () => {
    const { agent } = scriptedAgent("counter", { bump: ["context.n = 1; return missingName", "return context.n ?? 'untouched'"] });
    expect((await agent.bump()).value).toBe("untouched");
    expect(Agent.history(agent)).toHaveLength(1);
  });

  test("when every attempt is a mistake, the outcome is the last one's error", async () => {
    const { agent, provider } = scriptedAgent("calculator", { add: ["return nope1", "return nope2"] });
    const r = await agent.add();
    expect(r).toMatchObject({ errorType: "execution", errorMessage: "ReferenceError: nope2 is not defined" });
    expect(provider.calls[1]?.user).toContain("return nope1");
  });

  test("the log line says how many attempts ran and why each failed", async () => {
    const log = tempLogPath("improv-repair-");
    const { agent } = scriptedAgent("calculator", { add: [null, "return nope", "return 3"] }, { log, maxGenerationAttempts: 3 });
    expect((await agent.add()).value).toBe(3);
    const [line] = readLogLines(log);
    expect(line).toMatchObject({
      generation_attempt: 3,
      attempt_errors: [
        { attempt: 1, error_type: "invalid_code", error_message: "The provider returned no program (attempt 1)." },
        { attempt: 2, error_type: "execution", error_message: "ReferenceError: nope is not defined" },
      ],
    });
  });

  test("the next call's history preview shows a failed call's error message", async () => {
    const { agent, provider } = scriptedAgent("disk", { save: "throw new Error('disk full')", check: "return 1" });
    await agent.save();
    await agent.check();
    expect(provider.calls[1]?.user).toMatch(/save: error \(execution\): Error: disk full/);
  });

  test("through OpenAIProvider, the server receives the feedback in the retry's user message", async () => {
    server = await OpenAITestServer.start([
      { kind: "content", content: "```js\nreturn args[0].toUpperCas()\n```" },
      { kind: "content", content: "```js\nreturn args[0].toUpperCase()\n```" },
    ]);
    const provider = new OpenAIProvider({ apiKey: "test-key", baseURL: server.baseURL, model: "test-model", structuredOutput: false });
    const r = await Agent.for("text", { provider }).shout("hi");
    expect(r.value).toBe("HI");
    const users = server.requests.map((request) => ((request.body.messages as { content: string }[])[1]?.content ?? ""));
    expect(users).toHaveLength(2);
    expect(users[0]).not.toContain("did not work");
    expect(users[1]).toContain("return args[0].toUpperCas()");
    expect(users[1]).toContain("It failed with: TypeError: args[0].toUpperCas is not a function");
  });
});

describe("TypeScript", () => {
  test("a program that parses only without its types runs stripped, with no extra request", async () => {
    const { agent, provider } = scriptedAgent("calculator", { add: "const [a, b] = args as [number, number];\nconst sum: number = a + b;\nreturn sum;" });
    expect((await agent.add(2, 3)).value).toBe(5);
    expect(provider.calls).toHaveLength(1);
  });

  test("stripping types prints no ExperimentalWarning", () => {
    const script = `
      import { Agent, ScriptedProvider } from ${JSON.stringify(new URL("../../src/index.ts", import.meta.url).href)};
      const agent = Agent.for("calculator", { provider: new ScriptedProvider({ programs: { add: "const a: number = args[0]; return a as number;" } }) });
      const r = await agent.add(4);
      console.log(JSON.stringify(r.value));
    `;
    const result = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 30_000 });
    expect(result.stdout.trim()).toBe("4");
    expect(result.stderr).not.toMatch(/ExperimentalWarning|experimental/i);
  });
});
