import { afterAll, beforeAll } from "vitest";
import { configureSandbox, sandboxPool, type SandboxConfig } from "../src/sandbox/host/pool.ts";

/**
 * For a test file that configures the sandbox pool: its settings are put back, and its processes
 * ended, once the file's tests are done, so the next file starts with the pool it expects.
 */
export function restoreSandboxAfterAll(): void {
  let saved: SandboxConfig | undefined;
  beforeAll(() => {
    saved = sandboxPool().config;
  });
  afterAll(() => {
    if (saved !== undefined) configureSandbox(saved);
    sandboxPool().shutdown();
  });
}

/** A read-only tool that answers "paused" after `{ ms }` milliseconds: keeps a program waiting on the host. */
export const pauseTool = {
  description: "Waits.",
  inputSchema: { type: "object" },
  annotations: { readOnlyHint: true },
  execute: (input: unknown) => new Promise((resolve) => setTimeout(resolve, (input as { ms: number }).ms, "paused")),
};
