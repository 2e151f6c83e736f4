/** Sections on how calls ended: the summary, calls over time, errors, durations. */
import { describeFilters } from "../report-filter.ts";
import { usesKnowledge } from "../report-knowledge.ts";
import { MAX_FAILING, MAX_SLOWEST, type GroupStats, type TelemetryReport } from "../telemetry-report.ts";
import { columnChart, rowChart } from "./charts.ts";
import { asPercent, countAndShare, escape, formatBound, formatMs, formatTime, section, share } from "./markup.ts";
import { callTable, dataTable } from "./tables.ts";

/** Groups listed in the error tables. */
const MAX_ERROR_ROWS = 30;
/** Labels under the timeline: about this many, evenly spaced. */
const TIMELINE_LABELS = 6;

export function summarySection(report: TelemetryReport): string {
  const { overall } = report;
  const filters = describeFilters(report.filters);
  const rows: [string, string][] = [
    ["calls", `${report.calls}${report.filteredOut > 0 ? ` (${report.filteredOut} more left out by ${filters})` : ""}`],
    ["period (UTC)", report.firstTimestamp ? `${formatTime(report.firstTimestamp)} … ${formatTime(report.lastTimestamp)}` : "—"],
    ["errors", countAndShare(overall.errors, overall.calls)],
    ["code reads history", countAndShare(overall.readsHistory, overall.calls)],
    ["served by kept programs", countAndShare(overall.reused, overall.calls)],
    ["repaired programs that worked", String(overall.repairedOk)],
    ["kept programs dropped", String(overall.keptProgramDropped)],
    ["provider requests", String(overall.requests)],
    ["calls using tools", countAndShare(overall.callsUsingTools, overall.calls)],
    ["tool calls", `${overall.toolCalls} (${overall.toolErrors} failed)`],
    ["calls that fetched", String(overall.tools.fetch?.calls ?? 0)],
    // Only when some call had knowledge, as the section below.
    ...(usesKnowledge(overall.knowledge) ? [["calls with knowledge", countAndShare(overall.knowledge.callsWithKnowledge, overall.calls)] as [string, string]] : []),
    ["malformed lines", String(report.malformed.count)],
  ];
  const notice = report.calls === 0 ? `<p class="notice" id="no-calls">No calls matched${filters === "" ? " (the logs hold no call lines)" : ` ${escape(filters)}`}.</p>` : "";
  const body = `<table class="summary">${rows.map(([name, value]) => `<tr><th scope="row">${escape(name)}</th><td>${escape(value)}</td></tr>`).join("")}</table>`;
  return `<section id="summary" data-section="summary">${notice}${body}</section>`;
}

export function activitySection(report: TelemetryReport): string {
  const { points, stepSeconds } = report.timeline;
  const step = stepName(stepSeconds);
  const chart = columnChart(
    "calls-over-time",
    "Calls and errors over time",
    ["ok", "errors"],
    points.map((point) => ({ label: timeLabel(point.start, points[0]?.start, stepSeconds < 60), parts: [point.calls - point.errors, point.errors] })),
    `One bar per ${step}, UTC; errors stacked in red.`,
    { x: `time (UTC), one bar per ${step}`, y: "calls", labelEvery: Math.max(1, Math.ceil(points.length / TIMELINE_LABELS)) },
  );
  return section("activity", "Calls over time", "When calls were made, and when they failed.", chart);
}

/** `second`, `5 seconds`, `minute`, `10 minutes`. */
function stepName(seconds: number): string {
  if (seconds < 60) return seconds === 1 ? "second" : `${seconds} seconds`;
  const minutes = seconds / 60;
  return minutes === 1 ? "minute" : `${minutes} minutes`;
}

/** `12:05` (`12:05:30` for steps shorter than a minute), with the date where it is the first bar's or a new day's. */
function timeLabel(start: string, first: string | undefined, withSeconds: boolean): string {
  const time = start.slice(11, withSeconds ? 19 : 16);
  return start === first || start.slice(11, 16) === "00:00" ? `${start.slice(5, 10)} ${time}` : time;
}

export function errorsSection(report: TelemetryReport): string {
  const { overall } = report;
  const types = Object.entries(overall.errorTypes).sort((a, b) => b[1] - a[1]);
  const byType = rowChart(
    "errors-by-type",
    "Failed calls by error type",
    ["calls"],
    types.map(([type, count]) => ({ label: type, parts: [count] })),
    `${overall.errors} of ${overall.calls} calls failed (${asPercent(share(overall.errors, overall.calls))}). The error types are those of the README's outcomes table.`,
  );
  return section(
    "errors",
    "What went wrong",
    "Failed calls by error type, by role and by method, with the latest messages; the calls themselves by call id, to find their records and log lines.",
    byType,
    errorTable("errors-by-role", "role", report.byRole),
    errorTable("errors-by-method", "role.method", report.byMethod),
    callTable("failing-calls", report.failingCalls, "No call failed.", `The latest failed calls (newest first, at most ${MAX_FAILING})`),
  );
}

function errorTable(id: string, title: string, groups: Record<string, GroupStats>): string {
  const failing = Object.entries(groups)
    .filter(([, stats]) => stats.errors > 0)
    .sort((a, b) => b[1].errors - a[1].errors || b[1].calls - a[1].calls)
    .slice(0, MAX_ERROR_ROWS);
  const rows = failing.map(([name, stats]) => {
    const latest = stats.latestErrors[0];
    return [
      name,
      String(stats.calls),
      String(stats.errors),
      asPercent(share(stats.errors, stats.calls)),
      Object.entries(stats.errorTypes)
        .sort((a, b) => b[1] - a[1])
        .map(([type, count]) => `${type}\u00a0${count}`)
        .join(", "),
      latest === undefined ? "" : `${latest.errorMessage ?? "(no message in this log line)"} (call ${latest.callId})`,
    ];
  });
  const columns = [{ title }, { title: "calls", numeric: true }, { title: "failed", numeric: true }, { title: "share", numeric: true }, { title: "by type" }, { title: "latest message", wrap: true }];
  return dataTable(id, columns, rows, "No call failed.", { caption: `Failed calls by ${title}` });
}

export function durationsSection(report: TelemetryReport): string {
  const chart = columnChart(
    "latency",
    "Call duration",
    ["calls"],
    report.latency.map((bin) => ({ label: bin.upToMs === null ? "longer" : formatBound(bin.upToMs), parts: [bin.calls] })),
    "duration_ms of each call: prompt, provider, sandbox and tools included.",
    { x: "duration: calls that took up to the bound under each bar (ms, or s where marked) and more than the one before", y: "calls" },
  );
  return section(
    "durations",
    "How long calls took",
    `The slowest call took ${formatMs(report.slowestCalls[0]?.durationMs ?? null)}.`,
    chart,
    callTable("slowest-calls", report.slowestCalls, "No call has a duration.", `The slowest calls (slowest first, at most ${MAX_SLOWEST})`),
  );
}
