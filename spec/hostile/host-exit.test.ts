import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { runToEnd } from "../../test-support/run-to-end.ts";

const FIXTURE = new URL("./fixtures/amplified-paths.ts", import.meta.url);

/** Runs the fixture in a host process whose heap is far too small to hold any expanded value. */
async function runSmallHost(): Promise<{ code: number | null; signal: NodeJS.Signals | null; lines: Record<string, unknown>[]; stderr: string }> {
  const { code, signal, stdout, stderr } = await runToEnd(process.execPath, ["--max-old-space-size=96", FIXTURE.pathname]);
  const lines = stdout.split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
  return { code, signal, lines, stderr };
}

describe("values from the sandbox never reach the host unmeasured", () => {
  test("the sandbox's values reach the host only through the module that measures them", () => {
    const sources = readdirSync(new URL("../../src/", import.meta.url), { recursive: true, encoding: "utf8" }).filter((path) => path.endsWith(".ts"));
    const decoders = sources.filter((path) => /from "[./]*(sandbox\/)?value-codec\.ts"/.test(readFileSync(new URL(`../../src/${path}`, import.meta.url), "utf8")));
    expect(decoders).toEqual(["sandbox/host/inbound.ts"]);
  });

  test("every path a program's value takes to the host, with a billion-laughs value, in a host with a 96 MiB heap", async () => {
    const { code, signal, lines, stderr } = await runSmallHost();
    expect({ code, signal }, stderr).toEqual({ code: 0, signal: null });
    const byPath = Object.fromEntries(lines.map(({ path, ...rest }) => [path, rest]));
    expect(byPath).toEqual({
      result: { ok: false, errorType: "execution", value: null },
      context: { ok: false, errorType: "execution", value: null },
      delegateArguments: { ok: true, errorType: null, value: { ok: false, error_type: "invalid_input" } },
      delegateOptions: { ok: true, errorType: null, value: { ok: false, error_type: "invalid_input" } },
      delegateResult: { ok: true, errorType: null, value: { ok: false, error_type: "execution" } },
      console: { ok: true, errorType: null, value: "logged" },
      thrownMessage: { ok: false, errorType: "execution", value: null },
      thrownName: { ok: false, errorType: "execution", value: null },
      thrownValue: { ok: false, errorType: "execution", value: null },
      applicationArguments: { ok: true, errorType: null, value: 1 },
      records: { count: 10 },
    });
  }, 60_000);
});
