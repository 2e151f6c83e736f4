import { describe, expect, test } from "vitest";
import { parseProgram } from "../../src/programs/parse.ts";
import { PATTERN_TAGS } from "../../src/telemetry/patterns.ts";
import { scanProgram } from "../../src/telemetry/scan.ts";
import { scanText, stripCommentsAndStrings } from "../../src/telemetry/text-scan.ts";
import { LABELED_PROGRAMS } from "../../test-support/labeled-programs.ts";

describe("history scan (AST) on the labeled set", () => {
  test("the labeled set has programs in both directions, and of every shape, with ones that must not be tagged", () => {
    expect(LABELED_PROGRAMS.length).toBeGreaterThanOrEqual(130);
    expect(LABELED_PROGRAMS.filter((p) => p.detected).length).toBeGreaterThanOrEqual(100);
    expect(LABELED_PROGRAMS.filter((p) => !p.detected).length).toBeGreaterThanOrEqual(20);
    // Programs that reach the history but query nothing of it.
    expect(LABELED_PROGRAMS.filter((p) => p.detected && p.patterns.length === 0).length).toBeGreaterThanOrEqual(10);
    for (const tag of PATTERN_TAGS) expect(LABELED_PROGRAMS.filter((p) => p.patterns.includes(tag)).length, tag).toBeGreaterThanOrEqual(8);
    expect(new Set(LABELED_PROGRAMS.map((p) => p.name)).size).toBe(LABELED_PROGRAMS.length);
  });

  test.each(LABELED_PROGRAMS)("$name", ({ code, detected, patterns }) => {
    const scan = scanProgram(code);
    expect(scan.scan).toBe("ast");
    expect({ detected: scan.historyAccessDetected, patterns: scan.patterns }).toEqual({ detected, patterns: [...patterns] });
  });
});

describe("the scan's rules, one shape at a time", () => {
  const tags = (code: string) => scanProgram(code).patterns;

  test("a helper's result is what it returns for that call's arguments", () => {
    const helper = "const failed = (list) => list.filter((r) => !r.outcome_summary.ok);\n";
    expect(tags(`${helper}return failed(context.conversation_history).length`)).toEqual(["count", "filter"]);
    // The same helper given other arrays: its result is not the history's.
    expect(tags(`${helper}failed(context.conversation_history); return failed(args).length`)).toEqual(["filter"]);
    // A function that recurses is not followed forever.
    expect(tags("function f(h) { return h.length > 1 ? f(h.slice(1)) : h }\nreturn f(context.conversation_history).length")).toEqual(["count", "slice"]);
  });

  test("helpers that each call the one before twice are worked out once per call shape, not once per path", () => {
    // 2^40 paths through the helpers: only a scan that remembers what each call returned ends.
    const helpers = Array.from({ length: 40 }, (_, i) => `const g${i} = (x) => ${i === 0 ? "x.slice(1)" : `g${i - 1}(x) || g${i - 1}(x)`};`).join("\n");
    const started = performance.now();
    expect(scanProgram(`${helpers}\nreturn g39(context.conversation_history).length`)).toMatchObject({ scan: "ast", historyAccessDetected: true });
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  test("writing into an object or Map keyed by a record's field, once per record, is a grouping; once, or keyed by anything else, is not", () => {
    expect(tags("const g = {}; for (const r of context.conversation_history) g[r.method_name] = r; return g")).toEqual(["group", "iterate"]);
    expect(tags("const g = new Map(); context.conversation_history.forEach((r) => g.set(r.speaker, r)); return g.size")).toEqual(["count", "group", "iterate"]);
    expect(tags("const g = {}; const r = context.conversation_history.at(-1); g[r.method_name] = r; return g")).toEqual([]);
    expect(tags("const g = {}; context.conversation_history.forEach((r, i) => { g[i] = r }); return g")).toEqual(["iterate"]);
  });

  test("an index loop over the history iterates; its bound is not a count", () => {
    expect(tags("const h = context.conversation_history; let s = ''; for (let i = h.length - 1; i >= 0; i -= 1) s += h[i].method_name; return s")).toEqual(["iterate"]);
    expect(tags("const h = context.conversation_history; const n = h.length; for (let i = 0; i < n; i++) h[i]; return n")).toEqual(["count"]);
  });

  test("serialising the history queries nothing; a copy made by JSON round trip is the history again", () => {
    expect(tags("return JSON.stringify(context.conversation_history).length")).toEqual([]);
    expect(tags("return JSON.stringify(context.conversation_history, null, 2).slice(0, 100)")).toEqual([]);
    expect(tags("return JSON.parse(JSON.stringify(context.conversation_history)).length")).toEqual(["count"]);
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

test("the textual fallback reads a long program that does not parse in one pass: a for ( left open on every line", () => {
  const code = "context.conversation_history; for (".repeat(20_000);
  const scan = scanProgram(code);
  expect(scan).toMatchObject({ scan: "text", historyAccessDetected: true });
  expect(scanProgram(`${code}\nfor (const r of context.conversation_history) {}`).patterns).toContain("iterate");
});
