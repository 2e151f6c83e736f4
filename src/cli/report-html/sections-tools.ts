/** Sections on what programs did outside the sandbox: tool calls, and egress requests (`fetch`, counted as a tool). */
import { egressOf, FETCH_TOOL, toolGroups, toolsByUse } from "../report-tools.ts";
import type { GroupStats, TelemetryReport } from "../telemetry-report.ts";
import { rowChart } from "./charts.ts";
import { asPercent, section, share } from "./markup.ts";
import { dataTable } from "./tables.ts";

/** Groups drawn or listed in the tools part of the page. */
const MAX_TOOL_ROWS = 20;

export function toolsSection(report: TelemetryReport): string {
  const { overall } = report;
  const byTool = rowChart(
    "tool-use",
    "Tool use by tool (calls whose program called each tool)",
    ["no tool call failed", "a tool call failed"],
    toolsByUse(overall)
      .filter(([, use]) => use.calls > 0)
      .slice(0, MAX_TOOL_ROWS)
      .map(([name, use]) => ({ label: name, parts: [use.calls - use.callsWithFailures, use.callsWithFailures] })),
    "From tool_names and tool_failed_names. Lines written before tool_failed_names existed say only how many tool calls failed: such a line's failures count toward every tool it called.",
  );
  const byMethod = rowChart(
    "tool-calls",
    "Tool calls and failures by role and method",
    ["ok", "failed"],
    toolGroups(report.byMethod)
      .filter(([, stats]) => stats.toolCalls > 0)
      .slice(0, MAX_TOOL_ROWS)
      .map(([name, stats]) => ({ label: name, parts: [stats.toolCalls - stats.toolErrors, stats.toolErrors] })),
    `${overall.toolCalls} tool calls in ${overall.callsUsingTools} calls, ${overall.toolErrors} failed, ${overall.toolMs.toFixed(1)} ms in tools; ${overall.toolOutcomes} calls ended with outcome tool (a tool's failure left uncaught).`,
  );
  return section(
    "tools",
    "Tools",
    "Which tools programs called, how often those calls failed, and how long they took.",
    byTool,
    byMethod,
    toolTable("tools-by-role", "role", report.byRole),
    toolTable("tools-by-method", "role.method", report.byMethod),
  );
}

function toolTable(id: string, title: string, groups: Record<string, GroupStats>): string {
  const rows = toolGroups(groups)
    .slice(0, MAX_TOOL_ROWS)
    .map(([name, stats]) => [name, String(stats.calls), asPercent(share(stats.callsUsingTools, stats.calls)), asPercent(share(stats.reachesTools, stats.calls)), String(stats.toolCalls), String(stats.toolErrors), stats.toolMs.toFixed(1), String(stats.toolOutcomes)]);
  const columns = [title, "calls", "using tools", "reach tools", "tool calls", "failed", "tool ms", "outcome tool"].map((name, index) => ({ title: name, numeric: index > 0 }));
  return dataTable(id, columns, rows, "No tool calls in these logs.", { caption: `Tools by ${title}`, className: "data tools" });
}

export function egressSection(report: TelemetryReport): string {
  const overall = egressOf(report.overall);
  const rows = Object.entries(report.byMethod)
    .map(([name, stats]) => [name, stats, egressOf(stats)] as const)
    .filter(([, , use]) => use.calls > 0 || use.referenced > 0)
    .sort((a, b) => b[2].calls - a[2].calls || b[1].calls - a[1].calls)
    .slice(0, MAX_TOOL_ROWS)
    .map(([name, stats, use]) => [name, String(stats.calls), String(use.calls), String(use.callsWithFailures), String(use.referenced)]);
  const table = dataTable(
    "egress-by-method",
    ["role.method", "calls", "fetched", "with a failed tool call", "code reaches fetch"].map((title, index) => ({ title, numeric: index > 0 })),
    rows,
    "No program fetched or reaches fetch.",
    { caption: "Egress requests by role and method" },
  );
  return section(
    "egress",
    "Egress requests",
    `${overall.calls} calls made egress requests (tool calls named ${FETCH_TOOL}), ${overall.callsWithFailures} of them with a failed tool call (an origin the egress policy refuses, a network error, a time-out, or another tool's failure in the same call); ${overall.referenced} programs reach fetch.`,
    table,
  );
}
