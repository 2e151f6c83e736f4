import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, test } from "vitest";
import { Agent, SqliteStore } from "../../src/index.ts";
import { OpenAITestServer } from "../../test-support/openai-server.ts";
import { ENV_NAMES } from "../../src/shared/env.ts";
import { readLogLines, tempLogPath } from "../../test-support/logs.ts";

const cli = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

function runCli(args: string[], env: NodeJS.ProcessEnv, nodeFlags: string[] = []): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...nodeFlags, cli, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

function offlineEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ENV_NAMES) delete env[name];
  return env;
}

let server: OpenAITestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

// Each test runs the whole demo, once or more, in processes of its own: slow on a loaded machine.
describe("improv demo", { timeout: 120_000 }, () => {
  test("runs offline, labelled as scripted, tells the whole story, writes a log and ends with the telemetry summary", async () => {
    const log = tempLogPath("improv-demo-", "demo.jsonl");
    const { code, stdout } = await runCli(["demo", "--log", log], offlineEnv());
    expect(code).toBe(0);
    expect(stdout).toContain("Mode: OFFLINE — scripted completions stand in for the model (no network, no API key).");
    expect(stdout).toContain("calc.value = 5; calc.value          → 5 (a setter: no model call)");
    expect(stdout).toContain("error execution: RangeError: division by zero");
    expect(stdout).toMatch(/calc\.summary\(\) +\[reads history\] +ok → \{"computed":\["add\(3\)","multiply\(4\)","convert\(100\)"\],"failed":\["divide: execution"\],"current":32\}/);
    expect(stdout).toMatch(/assistant\.source\(\) +\[follow-up\] +ok → "CRC Handbook \(from call [0-9a-f]{8}\)"/);
    expect(stdout).toMatch(/builder\.build\(\[2, 4, 9\]\) +ok → \{"mean":5,"range":7\}/);
    expect(stdout).toContain("History of toolbuilder → statistician:");
    expect(stdout).toMatch(/tool +d1 +mean/);
    // Part 4: an application tool and an MCP server the demo starts itself, over stdio.
    expect(stdout).toContain('MCP server "catalogue" started (stdio): tools catalogue.search');
    expect(stdout).toMatch(/shopper\.price\('kettle'\) +ok → "Kettle, 1\.7 l: 36\.34 EUR"/);
    expect(stdout).toMatch(/shopper\.price\('mug', kw\(\{→GBP\}\)\) +ok → "Stoneware mug: 9\.48 GBP"/);
    expect(stdout).toMatch(/shopper\.toolsUsed\(\) +\[reads history\] +ok → \["catalogue\.search","convert","catalogue\.search","convert","catalogue\.search"\]/);
    // Part 5: fetch under an egress policy, from a news site the demo serves itself; where from? from history.
    const origin = /egress: \{ allow: \["(http:\/\/127\.0\.0\.1:\d+)"\] \}/.exec(stdout)?.[1];
    expect(origin).toBeDefined();
    expect(stdout).toMatch(/news\.headlines\(feed\) +ok → \["Harbour bridge reopens after repairs","Library extends its winter opening hours"\]/);
    expect(stdout).toContain(`ok → {"from":["${origin}/feed.json"],"call":`);
    expect(stdout).toMatch(/news\.peek\(\) +\[the cloud metadata address\] error tool: EgressError: fetch http:\/\/169\.254\.169\.254\/latest\/meta-data\/: the origin http:\/\/169\.254\.169\.254 is not in egress\.allow\./);
    expect(stdout).toContain(`$ improv telemetry ${log}`);
    // A checkout that fails part way: the order it placed is undone (onFailure: "revert"), and the history says so.
    expect(stdout).toMatch(/shopper\.checkout\(\['kettle', 'unicorn'\]\) error execution: Error: nothing in the catalogue matches "unicorn"/);
    expect(stdout).toMatch(/shopper\.orders\(\) +\[undone\? history\] ok → \["Kettle, 1\.7 l: reverted"\]/);
    expect(stdout).toContain("order book after the failed checkout: empty (cancelled: order-1 (Kettle, 1.7 l))");
    expect(stdout).toContain("  calls                 21");
    expect(stdout).toContain("  code reads history    6  (28.6% of calls)");
    expect(stdout).toContain("states                applied 0, failed 0, unknown 0, reverted 1, revert_failed 0");
    const lines = readLogLines(log);
    expect(lines).toHaveLength(21);
    expect(lines.find((line) => line.method === "checkout")).toMatchObject({ effects: { reverted: 1 }, on_failure: "revert" });
    expect(lines.find((line) => line.method === "headlines")).toMatchObject({ tool_call_count: 1, tool_names: ["fetch"], tool_error_count: 0, tools_referenced: ["fetch"] });
    // The support desk answered from its knowledge base, and its follow-up read which passages from history.
    expect(stdout).toMatch(/support\.answer\('refunds…'\) +ok → "Refunds reach the original card within five working days of the return being received\. \[refunds\.md#1\]"/);
    expect(stdout).toMatch(/support\.basis\(\) +\[which passages\?\] ok → \{"question":"How many days until my refund reaches the card\?","passages":\["refunds\.md#1 \(0\.\d\d\)"/);
    expect(lines.find((line) => line.method === "answer")).toMatchObject({ knowledge_sources: ["kb", "style"], retrieved_count: 2 });
    expect(lines.find((line) => line.method === "price")).toMatchObject({ tool_call_count: 2, tool_names: ["catalogue.search", "convert"], tool_error_count: 0, tools_referenced: ["catalogue.search", "convert"] });
  });

  test("--log naming a file improv did not write is refused (exit code 2), and the file is left as it was", async () => {
    const log = tempLogPath("improv-demo-", "notes.txt");
    writeFileSync(log, "my notes\n");
    const { code, stdout, stderr } = await runCli(["demo", "--log", log], offlineEnv());
    expect(code).toBe(2);
    expect(stderr).toBe(`improv demo: ${log} is not a call log improv wrote, and the demo replaces its log each run. Give another file with --log.\n`);
    expect(stdout).toBe("");
    expect(readFileSync(log, "utf8")).toBe("my notes\n");
  });

  test("--fresh refuses to delete a store that holds other agents, or a database that is no store, and leaves it as it was", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-demo-"));
    const mine = join(directory, "app.db");
    const store = new SqliteStore(mine);
    await Agent.open("bank", { store, id: "bank-1" });
    await store.close();
    const foreign = join(directory, "users.db");
    const db = new DatabaseSync(foreign);
    db.exec("CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ada')");
    db.close();
    for (const [path, why] of [[mine, "holds agents the demo did not make (bank)"], [foreign, "is not a store the demo made"]] as const) {
      const before = readFileSync(path);
      const { code, stderr } = await runCli(["demo", "--log", join(directory, "demo.jsonl"), "--store", path, "--fresh"], offlineEnv());
      expect(code).toBe(2);
      expect(stderr).toBe(`improv demo: --fresh would delete ${path}, which ${why}. Give the demo a store of its own with --store.\n`);
      expect(readFileSync(path).equals(before)).toBe(true);
    }
  });

  test("without the MCP SDK (an optional dependency), the catalogue is served in-process and the shopper's story is told whole", async () => {
    const log = tempLogPath("improv-demo-", "demo.jsonl");
    const withoutSdk = fileURLToPath(new URL("../../test-support/without-mcp-sdk.mjs", import.meta.url));
    const { code, stdout } = await runCli(["demo", "--log", log], offlineEnv(), ["--import", withoutSdk]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/\(no MCP server: .*npm install @modelcontextprotocol\/sdk.*; the catalogue is served in-process instead\)/);
    expect(stdout).toMatch(/shopper\.price\('kettle'\) +ok → "Kettle, 1\.7 l: 36\.34 EUR"/);
    expect(stdout).toMatch(/shopper\.toolsUsed\(\) +\[reads history\] +ok → \["catalogue\.search","convert","catalogue\.search","convert","catalogue\.search"\]/);
    expect(stdout).toContain("order book after the failed checkout: empty (cancelled: order-1 (Kettle, 1.7 l))");
    expect(stdout).not.toContain("TypeError");
  });

  test("run again, its agents remember the first run (kept in a SQLite file beside the log); --fresh starts over", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-demo-"));
    const log = join(directory, "demo.jsonl");
    const first = await runCli(["demo", "--log", log], offlineEnv());
    expect(first.stdout).toContain(`Store: sqlite:${join(directory, "demo.db")} (new: the agents will remember this run next time)`);
    const firstLookup = /assistant\.lookup\('boiling point…'\) ok → "100 °C at sea level"/.exec(first.stdout);
    expect(firstLookup).not.toBeNull();
    const firstCallId = /source\(\)  \[follow-up\] +ok → "CRC Handbook \(from call ([0-9a-f]{8})\)"/.exec(first.stdout)?.[1];

    const second = await runCli(["demo", "--log", log], offlineEnv());
    expect(second.code).toBe(0);
    expect(second.stdout).toContain("(21 calls remembered from earlier runs; improv demo --fresh starts over)");
    // Before it looks anything up in this run, the assistant answers from the first run's history.
    expect(second.stdout).toContain(`assistant.source()  [remembered]   ok → "CRC Handbook (from call ${firstCallId})"`);
    expect(second.stdout).toMatch(/"computed":\["add\(3\)","multiply\(4\)","convert\(100\)","summary\(\)","add\(3\)"/);
    // The log is fresh each run: the summary describes this run only.
    expect(second.stdout).toContain("  calls                 22");
    // Programs kept in the store by the first run answer the second run's calls, with no provider request.
    expect(second.stdout).toMatch(/ add +\[3\] +ok \(number\) +[0-9a-f]{8} +reused\n/);
    expect(second.stdout).toMatch(/served by kept programs \d+/);

    const fresh = await runCli(["demo", "--log", log, "--fresh"], offlineEnv());
    expect(fresh.stdout).toContain("(new: the agents will remember this run next time)");
    expect(fresh.stdout).toContain("  calls                 21");
  });

  test("improv agents and improv history read the demo's store", async () => {
    const directory = mkdtempSync(join(tmpdir(), "improv-demo-"));
    const log = join(directory, "demo.jsonl");
    const store = join(directory, "demo.db");
    await runCli(["demo", "--log", log], offlineEnv());
    const agents = await runCli(["agents", store], offlineEnv());
    expect(agents.code).toBe(0);
    expect(agents.stdout).toMatch(/^id +role +records +last call\n/);
    expect(agents.stdout).toMatch(/\ncalculator +calculator +5 +\d{4}-/);
    expect(agents.stdout).toMatch(/\ntoolbuilder\/statistician +statistician +2 +\d{4}-/);
    const json = await runCli(["agents", store, "--json"], offlineEnv());
    expect((JSON.parse(json.stdout) as { id: string }[]).map((agent) => agent.id)).toEqual(["assistant", "calculator", "news", "shopper", "support", "toolbuilder", "toolbuilder/statistician"]);

    const history = await runCli(["history", store, "--agent", "assistant"], offlineEnv());
    expect(history.stdout).toMatch(/ user +d0 +lookup +\["boiling point of water"\] +ok \(string\)/);
    // A failed call shows its attempts, and why it was not repaired.
    const calculator = await runCli(["history", store, "--agent", "calculator"], offlineEnv());
    expect(calculator.stdout).toMatch(/\nattempts of the calls that took more than one, or were not repaired:\n  [0-9a-f]{8} divide  #1 generated by scripted, 0 tool calls  execution: RangeError: division by zero\n  [0-9a-f]{8} divide  not repaired: the failure was not the program's own mistake/);
    const records = await runCli(["history", store, "--agent", "calculator", "--json"], offlineEnv());
    expect(records.stdout.trim().split("\n").map((line) => (JSON.parse(line) as { method_name: string }).method_name)).toEqual(["add", "multiply", "convert", "divide", "summary"]);

    const unnamed = await runCli(["history", store], offlineEnv());
    expect(unnamed).toMatchObject({ code: 2, stderr: "improv: Name the agent with --agent. Agents in this store: assistant, calculator, news, shopper, support, toolbuilder, toolbuilder/statistician.\n" });
    const missing = await runCli(["agents", join(directory, "nothing.db")], offlineEnv());
    expect(missing).toMatchObject({ code: 2, stderr: `improv: No store at ${join(directory, "nothing.db")}: the file does not exist.\n` });
  });

  test("runs live through AnthropicProvider when only ANTHROPIC_API_KEY is set", async () => {
    server = await OpenAITestServer.start([{ kind: "structured", code: "return 42" }]);
    const log = tempLogPath("improv-demo-", "demo.jsonl");
    const { code, stdout } = await runCli(["demo", "--log", log], { ...offlineEnv(), ANTHROPIC_API_KEY: "test", ANTHROPIC_BASE_URL: server.origin, IMPROV_MODEL: "claude-served" });
    expect(code).toBe(0);
    expect(stdout).toContain("Mode: LIVE model (claude-served) from ANTHROPIC_API_KEY.");
    expect(stdout).toContain("calc.add(3)                        ok → 42");
    expect(server.requests.every((request) => request.path === "/v1/messages")).toBe(true);
  });

  test("--help lists the environment variables of every provider", async () => {
    const { code, stdout } = await runCli(["--help"], offlineEnv());
    expect(code).toBe(0);
    for (const name of ENV_NAMES) expect(stdout).toMatch(new RegExp(`^  ${name} +\\S`, "m"));
  });

  test("says it runs against a live model when OPENAI_API_KEY is set", async () => {
    server = await OpenAITestServer.start([{ kind: "structured", code: "return 42" }]);
    const log = tempLogPath("improv-demo-", "demo.jsonl");
    const { code, stdout } = await runCli(["demo", "--log", log], { ...offlineEnv(), OPENAI_API_KEY: "test", OPENAI_BASE_URL: server.baseURL, IMPROV_MODEL: "served-model" });
    expect(code).toBe(0);
    expect(stdout).toContain("Mode: LIVE model (served-model) from OPENAI_API_KEY.");
    expect(stdout).toContain("calc.add(3)                        ok → 42");
    // The calculator's contract checks what the served program returns: a number is not the summary's object.
    expect(stdout).toMatch(/calc\.summary\(\) +\[reads history\] +error invalid_output: The value summary returned does not match its returns schema: must be object/);
    // Nineteen application calls, the summary's tried twice; the served program never delegates.
    expect(server.requests).toHaveLength(20);
  });
});
