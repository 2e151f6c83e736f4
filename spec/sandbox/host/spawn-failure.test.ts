import { spawn } from "node:child_process";
import { describe, expect, test } from "vitest";

const FIXTURE = new URL("./fixtures/no-files-left.ts", import.meta.url);

describe("a sandbox process that cannot be started", () => {
  test("with no file descriptors left: the call fails typed, saying what to do, the host lives on, and the next call works", async () => {
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      // A shell sets the limit low, so the host can use every descriptor up quickly.
      const child = spawn("bash", ["-c", `ulimit -n 256 && exec "$0" --no-node-snapshot "$1"`, process.execPath, FIXTURE.pathname], { stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      let err = "";
      child.stdout.on("data", (chunk: Buffer) => (out += chunk));
      child.stderr.on("data", (chunk: Buffer) => (err += chunk));
      child.on("close", (exit) => resolve({ code: exit, stdout: out, stderr: err }));
    });
    expect(code, stderr).toBe(0);
    const [during, after] = stdout.trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(during).toMatchObject({ ok: false, errorType: "execution", retriable: true });
    expect(during?.errorMessage).toContain("could not start");
    expect(during?.errorMessage).toContain("EMFILE");
    expect(during?.errorMessage).toContain("ulimit -n");
    expect(after).toMatchObject({ ok: true, value: 5 });
  });
});
