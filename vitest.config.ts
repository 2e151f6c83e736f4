import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["spec/**/*.test.ts", "acceptance/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Each test file gets its own worker process and so its own sandbox process.
    pool: "forks",
    reporters: ["default", "./spec/helpers/summary-reporter.ts"],
  },
});
