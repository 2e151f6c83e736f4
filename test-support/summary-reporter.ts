import type { Reporter, TestModule } from "vitest/node";

/** Skipped tests listed with why; the rest are only counted. */
const MAX_LISTED_SKIPS = 20;

/**
 * Ends every run with one plain line, `Tests: N passed, N failed, N skipped`, for CI logs, after
 * the skipped tests and why each was skipped (the note a test gives `ctx.skip(note)`).
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    const skips: string[] = [];
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const result = test.result();
        if (result.state === "passed") counts.passed += 1;
        else if (result.state === "failed") counts.failed += 1;
        else {
          counts.skipped += 1;
          const why = result.state === "skipped" && result.note !== undefined ? result.note : "its condition does not hold on this machine";
          if (skips.length < MAX_LISTED_SKIPS) skips.push(`  ${module.moduleId.replace(`${process.cwd()}/`, "")} > ${test.fullName}: skipped, ${why}`);
        }
      }
    }
    const listed = skips.length === 0 ? "" : `\nSkipped on purpose:\n${skips.join("\n")}${counts.skipped > skips.length ? `\n  … and ${counts.skipped - skips.length} more` : ""}\n`;
    process.stdout.write(`${listed}\nTests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`);
  }
}
