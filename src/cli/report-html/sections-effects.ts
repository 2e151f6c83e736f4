/** The section on the calls' effects: writes by final state, and by role.method what failed calls left behind. */
import { EFFECT_STATES } from "../../tools/index.ts";
import { hasEffects } from "../report-effects.ts";
import type { TelemetryReport } from "../telemetry-report.ts";
import { asPercent, busiest, section, share } from "./markup.ts";
import { dataTable } from "./tables.ts";

export function effectsSection(report: TelemetryReport): string {
  const { calls, effects } = report.overall;
  const byMethod = busiest(report.byMethod)
    .filter(([, stats]) => hasEffects(stats.effects))
    .map(([name, { effects: group }]) => [name, String(group.callsWithEffects), ...EFFECT_STATES.map((state) => String(group.states[state])), String(group.failedLeftEffects)]);
  const table = dataTable(
    "effects-by-method",
    ["role.method", "calls with effects", ...EFFECT_STATES, "failed, effects left"].map((title, index) => ({ title, numeric: index > 0 })),
    byMethod,
    "No call's writes reached a tool.",
    { caption: "Writes by final state, by method" },
  );
  const { onFailure } = effects;
  return section(
    "effects",
    "Effects",
    `${effects.callsWithEffects} calls (${asPercent(share(effects.callsWithEffects, calls))}) had writes reach a tool: ${EFFECT_STATES.map((state) => `${effects.states[state]} ${state}`).join(", ")}. Failed calls with effects met onFailure keep ${onFailure.keep}, revert ${onFailure.revert}, a function ${onFailure.function}; ${effects.failedLeftEffects} failed calls left effects in place (applied, unknown, or an undo that failed); ${effects.handlerErrors} onFailure functions failed.`,
    table,
  );
}
