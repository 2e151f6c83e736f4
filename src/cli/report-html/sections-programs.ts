/** Sections on the programs: how they use the history, where they came from (reuse, repair), and what they cost in tokens. */
import { PATTERN_TAGS } from "../../telemetry/index.ts";
import type { TelemetryReport } from "../telemetry-report.ts";
import { rowChart } from "./charts.ts";
import { asPercent, busiest, escape, section, share } from "./markup.ts";
import { dataTable } from "./tables.ts";

export function historySection(report: TelemetryReport): string {
  const { overall } = report;
  const reads = rowChart(
    "history-reads",
    "Share of calls whose program reads the history, by role and method",
    ["reads history"],
    busiest(report.byMethod).map(([name, stats]) => ({ label: name, parts: [share(stats.readsHistory, stats.calls)] })),
    "From the static scan of each program (history_access_detected).",
    asPercent,
  );
  const operations = rowChart(
    "history-operations",
    "Operations programs apply to the history (calls using each)",
    ["calls"],
    PATTERN_TAGS.map((tag) => ({ label: tag, parts: [overall.patterns[tag] ?? 0] })),
    `A call counts once per operation it uses (history_query_patterns), out of ${overall.readsHistory} calls whose program reads the history.`,
  );
  return section("history", "How programs use the history", "Which methods depend on earlier calls, and how they query them.", reads, operations);
}

export function reuseSection(report: TelemetryReport): string {
  const { overall } = report;
  const methods = busiest(report.byMethod);
  const reuse = rowChart(
    "reuse",
    "Calls served by kept programs, by role and method",
    ["served by a kept program"],
    methods.map(([name, stats]) => ({ label: name, parts: [share(stats.reused, stats.calls)] })),
    `Overall ${asPercent(share(overall.reused, overall.calls))} of calls were served by kept programs and made no provider request.`,
    asPercent,
  );
  const sources = rowChart(
    "program-sources",
    "Where each call's program came from, by role and method",
    ["generated", "reused", "repaired"],
    methods.map(([name, stats]) => ({ label: name, parts: [stats.programSources.generated ?? 0, stats.programSources.reused ?? 0, stats.programSources.repaired ?? 0] })),
    "program_source: written for the call, a kept program run again, or written again after a failed attempt's feedback. Calls that got no program are not counted.",
  );
  const rows = methods
    .filter(([, stats]) => Object.keys(stats.programSources).length > 0 || stats.keptNew + stats.notKept > 0)
    .map(([name, stats]) => [
      name,
      String(stats.calls),
      String(stats.programSources.reused ?? 0),
      String(stats.programSources.repaired ?? 0),
      String(stats.repairedOk),
      String(stats.keptProgramFailed),
      String(stats.keptProgramDropped),
      String(stats.keptNew),
      String(stats.notKept),
    ]);
  const fates = dataTable(
    "reuse-by-method",
    ["role.method", "calls", "reused", "repaired", "repairs that worked", "kept program failed", "kept program dropped", "new program kept", "not kept"].map((title, index) => ({ title, numeric: index > 0 })),
    rows,
    "No call ran a program.",
    { caption: "Repair and reuse by role and method" },
  );
  const reasons = dataTable(
    "not-kept-reasons",
    [{ title: "why a program that worked was not kept", wrap: true }, { title: "calls", numeric: true }],
    Object.entries(report.notKeptReasons)
      .sort((a, b) => b[1] - a[1])
      .map(([reason, count]) => [reason, String(count)]),
    "Every program that worked was kept (or none worked).",
    { caption: "Programs not kept for reuse, by reason" },
  );
  return section(
    "reuse-and-repair",
    "Reuse and repair",
    `${overall.programSources.repaired ?? 0} calls ran a repaired program (${overall.repairedOk} of them ended ok); ${overall.keptProgramFailed} kept programs failed by their own mistake, ${overall.keptProgramDropped} of them dropped after failing in a row; ${overall.keptNew} new programs were kept and ${overall.notKept} that worked were not.`,
    reuse,
    sources,
    fates,
    reasons,
  );
}

export function tokensSection(report: TelemetryReport): string {
  const { overall } = report;
  // Rows of zeros would say nothing: say why there is nothing to draw.
  if (overall.promptTokens === 0 && overall.completionTokens === 0) {
    const why = overall.requests === 0 ? "No call asked a provider (kept programs served them all, or none got that far)." : `No provider reported token usage for its ${overall.requests} requests (ScriptedProvider reports none).`;
    return section("cost", "Provider requests and tokens", "What the calls cost, as the providers reported it.", `<p class="empty" id="tokens-none">${escape(why)}</p>`);
  }
  const tokens = rowChart(
    "tokens",
    "Tokens by role and method",
    ["prompt", "completion"],
    busiest(report.byMethod).map(([name, stats]) => ({ label: name, parts: [stats.promptTokens, stats.completionTokens] })),
    `${overall.promptTokens} prompt${overall.cachedTokens > 0 ? ` (${overall.cachedTokens} read from the prompt cache)` : ""} + ${overall.completionTokens} completion tokens in ${overall.requests} provider requests${overall.callsWithoutTokens > 0 ? `; ${overall.callsWithoutTokens} calls carried no usage report (ScriptedProvider reports none)` : ""}. Calls served by kept programs cost none.${overall.callsWithCost > 0 ? ` By the agents' pricing, the ${overall.callsWithCost} calls with a price cost $${overall.costUsd.toFixed(4)}.` : ""}`,
  );
  return section("cost", "Provider requests and tokens", "What the calls cost, as the providers reported it.", tokens);
}
