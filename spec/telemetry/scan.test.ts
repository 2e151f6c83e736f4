import { describe, expect, test } from "vitest";
import { parseProgram } from "../../src/programs/parse.ts";
import { scanProgram } from "../../src/telemetry/scan.ts";
import { scanText, stripCommentsAndStrings } from "../../src/telemetry/text-scan.ts";
import { LABELED_PROGRAMS } from "./labeled-programs.ts";

describe("history scan (AST) on the labeled set", () => {
  test("the labeled set has at least 40 programs in both directions", () => {
    expect(LABELED_PROGRAMS.length).toBeGreaterThanOrEqual(40);
    expect(LABELED_PROGRAMS.filter((p) => p.detected).length).toBeGreaterThanOrEqual(20);
    expect(LABELED_PROGRAMS.filter((p) => !p.detected).length).toBeGreaterThanOrEqual(10);
  });

  test.each(LABELED_PROGRAMS)("$name", ({ code, detected, patterns }) => {
    const scan = scanProgram(code);
    expect(scan.scan).toBe("ast");
    expect({ detected: scan.historyAccessDetected, patterns: scan.patterns }).toEqual({ detected, patterns: [...patterns] });
  });
});

describe("scans of a program run again", () => {
  test("a program that comes with its kept parse is scanned once; the scan cannot be changed by whoever reads it", () => {
    const code = "return context.conversation_history.filter((r) => r.ok).length";
    const parsed = parseProgram(code);
    const first = scanProgram(code, parsed);
    expect(scanProgram(code, parsed)).toBe(first);
    expect(first).toEqual({ scan: "ast", historyAccessDetected: true, patterns: ["count", "filter"] });
    expect(Object.isFrozen(first) && Object.isFrozen(first.patterns)).toBe(true);
    // Without a parse to key on, each call scans afresh.
    expect(scanProgram(code)).not.toBe(first);
  });
});

describe("textual fallback", () => {
  test("a program that does not parse is scanned as text", () => {
    const scan = scanProgram("const h = context.conversation_history; return h.filter((r) => r.ok).length +");
    expect(scan).toEqual({ scan: "text", historyAccessDetected: true, patterns: ["count", "filter"] });
  });

  test("the fallback ignores comments and strings", () => {
    expect(scanText("// context.conversation_history\nreturn 'context.conversation_history.length' ((").historyAccessDetected).toBe(false);
    expect(scanText("return context['conversation_history'].slice(1 ((").historyAccessDetected).toBe(true);
    expect(scanText("const { conversation_history: h } = context; h.map(x => x) ((").patterns).toEqual(["map"]);
  });

  test("stripping keeps code and the history key, blanks other strings", () => {
    expect(stripCommentsAndStrings("a /* b */ 'c' \"conversation_history\" // d")).toBe('a   \'\' "conversation_history" ');
  });
});
