/**
 * `improv telemetry --html`: the report as one self-contained HTML page (inline CSS and SVG,
 * no script, nothing fetched at view time), with a chart for each question the telemetry
 * answers. Every chart says how many data points it drew (`data-points`).
 */
import { PATTERN_TAGS } from "../telemetry/patterns.ts";
import { toolGroups, toolsByUse, type GroupStats, type TelemetryReport } from "./telemetry-report.ts";

const escape = (text: string) => text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

interface Bar {
  readonly label: string;
  /** Stacked parts, in the order of the chart's legend. */
  readonly parts: readonly number[];
}

const COLORS = ["#3b6fb6", "#d1495b", "#66a182", "#edae49", "#8d6a9f"];

/** A bar chart: vertical bars (`columns`) for series over an axis, horizontal (`rows`) for named groups. */
function barChart(id: string, title: string, legend: readonly string[], bars: readonly Bar[], layout: "columns" | "rows", note: string, format: (value: number) => string = String): string {
  const max = Math.max(1, ...bars.map((bar) => bar.parts.reduce((sum, part) => sum + part, 0)));
  const points = bars.filter((bar) => bar.parts.some((part) => part > 0)).length;
  let svg: string;
  if (layout === "columns") {
    const width = 720;
    const height = 220;
    const step = bars.length === 0 ? width : width / bars.length;
    const rects = bars.map((bar, index) => {
      let y = height;
      return bar.parts
        .map((part, series) => {
          const h = (part / max) * (height - 20);
          y -= h;
          return part > 0 ? `<rect x="${(index * step + 1).toFixed(1)}" y="${y.toFixed(1)}" width="${Math.max(1, step - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${COLORS[series % COLORS.length]}"><title>${escape(bar.label)}: ${legend.map((name, i) => `${escape(name)} ${format(bar.parts[i] ?? 0)}`).join(", ")}</title></rect>` : "";
        })
        .join("");
    });
    const first = bars[0]?.label ?? "";
    const last = bars.at(-1)?.label ?? "";
    svg = `<svg viewBox="0 0 ${width} ${height + 30}" role="img" aria-label="${escape(title)}">${rects.join("")}<line x1="0" y1="${height}" x2="${width}" y2="${height}" stroke="#999"/><text x="0" y="${height + 18}" class="axis">${escape(first)}</text><text x="${width}" y="${height + 18}" class="axis" text-anchor="end">${escape(last)}</text><text x="0" y="12" class="axis">max ${format(max)}</text></svg>`;
  } else {
    const rowHeight = 22;
    const labelWidth = 240;
    const width = 720;
    const rows = bars.map((bar, index) => {
      let x = labelWidth;
      const y = index * rowHeight;
      const segments = bar.parts
        .map((part, series) => {
          const w = (part / max) * (width - labelWidth - 80);
          const rect = part > 0 ? `<rect x="${x.toFixed(1)}" y="${y + 3}" width="${Math.max(1, w).toFixed(1)}" height="${rowHeight - 6}" fill="${COLORS[series % COLORS.length]}"><title>${escape(legend[series] ?? "")}: ${format(part)}</title></rect>` : "";
          x += w;
          return rect;
        })
        .join("");
      const total = bar.parts.reduce((sum, part) => sum + part, 0);
      return `<text x="${labelWidth - 6}" y="${y + 15}" text-anchor="end" class="label">${escape(bar.label)}</text>${segments}<text x="${(x + 4).toFixed(1)}" y="${y + 15}" class="value">${format(total)}</text>`;
    });
    svg = `<svg viewBox="0 0 ${width} ${Math.max(rowHeight, bars.length * rowHeight)}" role="img" aria-label="${escape(title)}">${rows.join("")}</svg>`;
  }
  const key = legend.length > 1 ? `<p class="legend">${legend.map((name, index) => `<span style="--c:${COLORS[index % COLORS.length]}">${escape(name)}</span>`).join(" ")}</p>` : "";
  const empty = points === 0 ? `<p class="empty">No data in these logs.</p>` : "";
  return `<figure class="chart" id="${id}" data-chart="${id}" data-points="${points}"><figcaption>${escape(title)}</figcaption>${key}${empty}${svg}<p class="note">${escape(note)}</p></figure>`;
}

const share = (part: number, whole: number) => (whole === 0 ? 0 : part / whole);
const asPercent = (value: number) => `${(value * 100).toFixed(1)}%`;

function groups(report: TelemetryReport, limit = 20): [string, GroupStats][] {
  return Object.entries(report.byMethod)
    .sort((a, b) => b[1].calls - a[1].calls)
    .slice(0, limit);
}

/** Groups drawn or listed in the tools part of the page. */
const MAX_TOOL_ROWS = 20;

function toolCharts(report: TelemetryReport): string {
  const { overall } = report;
  const byTool = barChart(
    "tool-use",
    "Tool use by tool (calls whose program called each tool)",
    ["no tool call failed", "a tool call failed"],
    toolsByUse(overall)
      .filter(([, use]) => use.calls > 0)
      .slice(0, MAX_TOOL_ROWS)
      .map(([name, use]) => ({ label: name, parts: [use.calls - use.callsWithFailures, use.callsWithFailures] })),
    "rows",
    "From tool_names and tool_error_count: a line counts failed tool calls, not which tool failed, so a call that used several tools counts toward each.",
  );
  const byMethod = barChart(
    "tool-calls",
    "Tool calls and failures by role and method",
    ["ok", "failed"],
    toolGroups(report.byMethod)
      .filter(([, stats]) => stats.toolCalls > 0)
      .slice(0, MAX_TOOL_ROWS)
      .map(([name, stats]) => ({ label: name, parts: [stats.toolCalls - stats.toolErrors, stats.toolErrors] })),
    "rows",
    `${overall.toolCalls} tool calls in ${overall.callsUsingTools} calls, ${overall.toolErrors} failed, ${overall.toolMs.toFixed(1)} ms in tools; ${overall.toolOutcomes} calls ended with outcome tool (a tool's failure left uncaught).`,
  );
  return `<h2 id="tools">Tools</h2>
${byTool}
${byMethod}
${toolTable("tools-by-role", "role", report.byRole)}
${toolTable("tools-by-method", "role.method", report.byMethod)}`;
}

function toolTable(id: string, title: string, groups: Record<string, GroupStats>): string {
  const header = [title, "calls", "using tools", "reach tools", "tool calls", "failed", "tool ms", "outcome tool"].map((name, column) => `<th${column > 0 ? ' class="n"' : ""}>${escape(name)}</th>`).join("");
  const rows = toolGroups(groups)
    .slice(0, MAX_TOOL_ROWS)
    .map(([name, stats]) => {
      const cells = [String(stats.calls), asPercent(share(stats.callsUsingTools, stats.calls)), asPercent(share(stats.reachesTools, stats.calls)), String(stats.toolCalls), String(stats.toolErrors), stats.toolMs.toFixed(1), String(stats.toolOutcomes)];
      return `<tr><th>${escape(name)}</th>${cells.map((cell) => `<td class="n">${escape(cell)}</td>`).join("")}</tr>`;
    });
  const body = rows.length > 0 ? rows.join("") : `<tr><td colspan="8" class="empty">No tool calls in these logs.</td></tr>`;
  return `<table class="tools" id="${id}" data-rows="${rows.length}"><thead><tr>${header}</tr></thead><tbody>${body}</tbody></table>`;
}

/** The report as a self-contained HTML page. */
export function renderHtmlReport(report: TelemetryReport, generatedAt = new Date()): string {
  const { overall } = report;
  const methods = groups(report);
  const timeline = barChart(
    "calls-over-time",
    "Calls and errors over time",
    ["ok", "errors"],
    report.timeline.points.map((point) => ({ label: point.start.replace("T", " ").slice(0, 16), parts: [point.calls - point.errors, point.errors] })),
    "columns",
    `One bar per ${report.timeline.stepSeconds / 60} minute(s), UTC.`,
  );
  const reads = barChart(
    "history-reads",
    "Share of calls whose program reads the history, by role and method",
    ["reads history"],
    methods.map(([name, stats]) => ({ label: name, parts: [share(stats.readsHistory, stats.calls)] })),
    "rows",
    "From the static scan of each program (history_access_detected).",
    asPercent,
  );
  const operations = barChart(
    "history-operations",
    "Operations programs apply to the history (calls using each)",
    ["calls"],
    PATTERN_TAGS.map((tag) => ({ label: tag, parts: [overall.patterns[tag] ?? 0] })),
    "rows",
    "A call counts once per operation it uses (history_query_patterns).",
  );
  const reuse = barChart(
    "reuse",
    "Calls served by kept programs, by role and method",
    ["served by a kept program"],
    methods.map(([name, stats]) => ({ label: name, parts: [share(stats.reused, stats.calls)] })),
    "rows",
    `Overall ${asPercent(share(overall.reused, overall.calls))} of calls made no provider request.`,
    asPercent,
  );
  const latency = barChart(
    "latency",
    "Call duration",
    ["calls"],
    report.latency.map((bin) => ({ label: bin.upToMs === null ? "longer" : `≤ ${bin.upToMs} ms`, parts: [bin.calls] })),
    "columns",
    "duration_ms of each call, prompt, provider and sandbox included.",
  );
  const tokens = barChart(
    "tokens",
    "Tokens by role and method",
    ["prompt", "completion"],
    methods.map(([name, stats]) => ({ label: name, parts: [stats.promptTokens, stats.completionTokens] })),
    "rows",
    `${overall.promptTokens} prompt${overall.cachedTokens > 0 ? ` (${overall.cachedTokens} read from the prompt cache)` : ""} + ${overall.completionTokens} completion tokens in ${overall.requests} provider requests${overall.callsWithoutTokens > 0 ? `; ${overall.callsWithoutTokens} calls carried no usage report (ScriptedProvider reports none)` : ""}. Calls served by kept programs cost none.`,
  );
  const summary = [
    ["calls", String(report.calls)],
    ["period", report.firstTimestamp ? `${report.firstTimestamp} … ${report.lastTimestamp}` : "—"],
    ["errors", `${overall.errors} (${asPercent(share(overall.errors, overall.calls))})`],
    ["code reads history", `${overall.readsHistory} (${asPercent(share(overall.readsHistory, overall.calls))})`],
    ["served by kept programs", `${overall.reused} (${asPercent(share(overall.reused, overall.calls))})`],
    ["provider requests", String(overall.requests)],
    ["calls using tools", `${overall.callsUsingTools} (${asPercent(share(overall.callsUsingTools, overall.calls))})`],
    ["tool calls", `${overall.toolCalls} (${overall.toolErrors} failed)`],
    ["malformed lines", String(report.malformed.count)],
  ]
    .map(([name, value]) => `<tr><th>${escape(name as string)}</th><td>${escape(value as string)}</td></tr>`)
    .join("");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>improv telemetry</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:780px;color:#222;padding:0 1rem}
h1{font-size:1.4rem}table{border-collapse:collapse;margin-bottom:1.5rem}th{text-align:left;padding:2px 16px 2px 0;font-weight:600}
figure.chart{margin:0 0 2rem;padding:0}figcaption{font-weight:600;margin-bottom:.4rem}svg{width:100%;height:auto;font-size:11px}
.axis,.label,.value{fill:#555}.note,.empty{color:#666;font-size:12px;margin:.3rem 0}.legend span{margin-right:1rem}.legend span::before{content:"";display:inline-block;width:10px;height:10px;background:var(--c);margin-right:4px}
h2{font-size:1.15rem;margin-top:2rem}table.tools th,table.tools td{padding:2px 10px 2px 0}table.tools .n{text-align:right}table.tools thead th{font-weight:600;border-bottom:1px solid #ccc}
</style></head><body>
<h1>improv telemetry</h1>
<p class="note">Generated ${escape(generatedAt.toISOString())} from ${report.lines} log lines.</p>
<table>${summary}</table>
${timeline}
${reads}
${operations}
${reuse}
${latency}
${tokens}
${toolCharts(report)}
</body></html>
`;
}
