import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, test } from "vitest";
import { OpenAITestServer } from "../helpers/openai-server.ts";

const cli = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

function offlineEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ["OPENAI_API_KEY", "OPENAI_BASE_URL", "IMPROV_MODEL", "IMPROV_LOG", "IMPROV_DEBUG"]) delete env[name];
  return env;
}

let server: OpenAITestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("improv demo", () => {
  test("runs offline, labelled as scripted, tells the whole story, writes a log and ends with the telemetry summary", async () => {
    const log = join(mkdtempSync(join(tmpdir(), "improv-demo-")), "demo.jsonl");
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
    expect(stdout).toContain(`$ improv telemetry ${log}`);
    expect(stdout).toContain("  calls                 10");
    expect(stdout).toContain("  code reads history    2  (20.0% of calls)");
    expect(readFileSync(log, "utf8").trim().split("\n")).toHaveLength(10);
  });

  test("runs again with a fresh log, so the summary describes one run", async () => {
    const log = join(mkdtempSync(join(tmpdir(), "improv-demo-")), "demo.jsonl");
    await runCli(["demo", "--log", log], offlineEnv());
    const { stdout } = await runCli(["demo", "--log", log], offlineEnv());
    expect(stdout).toContain("  calls                 10");
  });

  test("says it runs against a live model when OPENAI_API_KEY is set", async () => {
    server = await OpenAITestServer.start([{ kind: "structured", code: "return 'from the server'" }]);
    const log = join(mkdtempSync(join(tmpdir(), "improv-demo-")), "demo.jsonl");
    const { code, stdout } = await runCli(["demo", "--log", log], { ...offlineEnv(), OPENAI_API_KEY: "test", OPENAI_BASE_URL: server.baseURL, IMPROV_MODEL: "served-model" });
    expect(code).toBe(0);
    expect(stdout).toContain("Mode: LIVE model (served-model) from OPENAI_API_KEY.");
    expect(stdout).toContain('calc.add(3)                        ok → "from the server"');
    // Eight application calls; the served program never delegates.
    expect(server.requests).toHaveLength(8);
  });
});
