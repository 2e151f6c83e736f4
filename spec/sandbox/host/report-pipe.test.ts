import { describe, expect, test } from "vitest";
import { ReportLines } from "../../../src/sandbox/host/report-pipe.ts";

describe("the report pipe's line reader", () => {
  test("every line of a chunk longer than the line bound is read", () => {
    const lines = new ReportLines();
    const sent = Array.from({ length: 2_000 }, (_, index) => `S${index + 1}`);
    expect(lines.push(`${sent.join("\n")}\n`)).toEqual(sent);
  });

  test("a line split across chunks is read once whole", () => {
    const lines = new ReportLines();
    expect(lines.push("S12\nB3")).toEqual(["S12"]);
    expect(lines.push("4\nF34:")).toEqual(["B34"]);
    expect(lines.push("51\n")).toEqual(["F34:51"]);
  });

  test("an endless line is dropped, bounded, and the lines after it are read", () => {
    const lines = new ReportLines();
    for (let chunk = 0; chunk < 100; chunk += 1) expect(lines.push("x".repeat(1_000))).toEqual([]);
    expect(lines.pendingChars).toBeLessThanOrEqual(4_096);
    expect(lines.push("\nS7\n")).toEqual(["S7"]);
  });
});
