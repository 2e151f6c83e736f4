import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["spec/**/*.test.ts", "acceptance/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Each test file gets its own worker process and so its own sandbox process.
    pool: "forks",
    // One file per core (vitest's default leaves one core free): most files wait on sandbox and
    // server processes more than they compute. At most 4, since each starts processes of its own.
    maxWorkers: Math.min(4, availableParallelism()),
    reporters: ["default", "./test-support/summary-reporter.ts"],
  },
});
