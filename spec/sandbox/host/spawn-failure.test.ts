import { describe, expect, test } from "vitest";
import { runToEnd } from "../../../test-support/run-to-end.ts";

const FIXTURE = new URL("./fixtures/no-files-left.ts", import.meta.url);

describe("a sandbox process that cannot be started", () => {
  test("with no file descriptors left: the call fails typed, saying what to do, the host lives on, and the next call works", async () => {
    // A shell sets the limit low, so the host can use every descriptor up quickly.
    const { code, stdout, stderr } = await runToEnd("bash", ["-c", `ulimit -n 256 && exec "$0" --no-node-snapshot "$1"`, process.execPath, FIXTURE.pathname]);
    expect(code, stderr).toBe(0);
    const [during, after] = stdout.trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(during).toMatchObject({ ok: false, errorType: "execution", retriable: true });
    expect(during?.errorMessage).toContain("could not start");
    expect(during?.errorMessage).toContain("EMFILE");
    expect(during?.errorMessage).toContain("ulimit -n");
    expect(after).toMatchObject({ ok: true, value: 5 });
  });
});
