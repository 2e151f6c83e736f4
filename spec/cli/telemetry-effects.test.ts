/**
 * The effects part of `improv telemetry` (DESIGN 19): writes by final state, failed calls by the
 * `onFailure` rule they met, failed calls that left effects in place, and `onFailure` errors;
 * read from real calls' log lines and from hand-written ones, sane or not.
 */
import { writeFileSync } from "node:fs";
import { Writable } from "node:stream";
import { describe, expect, test } from "vitest";
import { renderHtmlReport } from "../../src/cli/report-html/page.ts";
import { runTelemetry } from "../../src/cli/telemetry-command.ts";
import { Agent, ScriptedProvider, type Tool } from "../../src/index.ts";
import { tempLogPath } from "../../test-support/logs.ts";

function sink(): Writable & { text: string } {
  const stream = new Writable({ write: (chunk, _encoding, done) => ((stream.text += String(chunk)), done()) }) as Writable & { text: string };
  stream.text = "";
  return stream;
}

async function report(path: string) {
  const stdout = sink();
  const result = await runTelemetry({ json: false, stdout, stderr: sink(), inputs: [path] });
  return { result, text: stdout.text };
}

describe("improv telemetry: effects", () => {
  test("real calls: reverted, kept and left effects are counted per state and rule", async () => {
    const log = tempLogPath("improv-telemetry-effects-");
    let n = 0;
    const order: Tool = { description: "Orders.", inputSchema: { type: "object" }, execute: () => `o-${++n}`, revert: () => undefined };
    const note: Tool = { description: "Notes.", inputSchema: { type: "object" }, execute: () => "ok" };
    const programs = { buy: "await tools.order({}); await tools.order({}); throw new Error('no')", jot: "await tools.note({}); throw new Error('no')", fine: "await tools.order({}); return 1", read: "return 2" };
    const provider = new ScriptedProvider({ programs });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const reverting = Agent.for("shop", { provider, log, tools: { order, note }, onFailure: "revert" }) as any;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const keeping = Agent.for("shop", { provider, log, tools: { order, note } }) as any;
    await reverting.buy();
    await reverting.jot();
    await reverting.fine();
    await reverting.read();
    await keeping.buy();
    const { result, text } = await report(log);
    expect(result.overall.effects).toEqual({
      callsWithEffects: 4,
      states: { applied: 4, failed: 0, unknown: 0, reverted: 2, revert_failed: 0 },
      onFailure: { keep: 1, revert: 2, function: 0 },
      failedLeftEffects: 2,
      handlerErrors: 0,
    });
    expect(text).toContain("calls with effects    4  (80.0% of calls)");
    expect(text).toContain("states                applied 4, failed 0, unknown 0, reverted 2, revert_failed 0");
    expect(text).toContain("failed calls by rule  keep 1, revert 2, function 0");
    const html = renderHtmlReport(result);
    expect(html).toContain('<a href="#effects">effects</a>');
    expect(html).toMatch(/<table class="data" id="effects-by-method" data-rows="3">.*<th scope="row">shop\.buy<\/th><td class="n">2<\/td><td class="n">2<\/td><td class="n">0<\/td><td class="n">0<\/td><td class="n">2<\/td><td class="n">0<\/td><td class="n">1<\/td>/s);
  });

  test("hand-written lines: counts that are not sane are read as 0; a log without effects has no section", async () => {
    const path = tempLogPath("improv-telemetry-effects-");
    const line = (fields: Record<string, unknown>) => JSON.stringify({ timestamp: "2025-01-01T00:00:00.000Z", call_id: `c${Math.random()}`, outcome_status: "error", error_type: "execution", role: "r", method: "m", ...fields });
    writeFileSync(path, [
      line({ effects: { applied: 1e12, reverted: -1, unknown: "3", revert_failed: 2 }, on_failure: "revert", on_failure_error: null }),
      line({ effects: [1, 2], on_failure: "__proto__" }),
      line({ effects: { failed: 1 }, on_failure: "function", on_failure_error: "onFailure threw: x" }),
    ].join("\n") + "\n");
    const { result } = await report(path);
    expect(result.overall.effects).toEqual({
      callsWithEffects: 2,
      states: { applied: 0, failed: 1, unknown: 0, reverted: 0, revert_failed: 2 },
      onFailure: { keep: 0, revert: 1, function: 1 },
      failedLeftEffects: 1,
      handlerErrors: 1,
    });
    const plain = tempLogPath("improv-telemetry-effects-");
    writeFileSync(plain, line({}) + "\n");
    const { result: none, text: noneText } = await report(plain);
    expect(noneText).not.toContain("effects (writes");
    expect(renderHtmlReport(none)).not.toContain('id="effects"');
  });
});
