/** The telemetry report as text, for a terminal. */
import { terminalText } from "../shared/index.ts";
import { PATTERN_TAGS } from "../telemetry/index.ts";
import { describeFilters } from "./report-filter.ts";
import { effectLines, hasEffects } from "./report-effects.ts";
import { knowledgeGroups, sourcesByUse, usesKnowledge } from "./report-knowledge.ts";
import { MAX_FOLDED_COUNTED } from "./report-other.ts";
import { toolGroups, toolsByUse, usesTools } from "./report-tools.ts";
import type { CallSample } from "./report-samples.ts";
import type { GroupStats, TelemetryReport } from "./telemetry-report.ts";

/** Tools listed by name; the rest are only counted. */
const MAX_LISTED_TOOLS = 15;
/** Knowledge sources listed by name; the rest are only counted. */
const MAX_LISTED_SOURCES = 15;
/** Failed calls listed with their messages. */
const MAX_LISTED_ERRORS = 5;
/** Longest error message shown on one line. @unit characters */
const MAX_MESSAGE_SHOWN = 160;

const percent = (part: number, whole: number) => (whole === 0 ? "  0.0%" : `${((100 * part) / whole).toFixed(1).padStart(5)}%`);

/** The human-readable report. */
export function formatReport(report: TelemetryReport): string {
  const out: string[] = [];
  const { overall } = report;
  const filters = describeFilters(report.filters);
  out.push("improv telemetry");
  out.push(`  calls                 ${report.calls}${report.filteredOut ? `  (${report.filteredOut} left out by ${filters})` : ""}`);
  if (report.calls === 0 && filters !== "") out.push(`  no calls matched ${filters}`);
  if (report.firstTimestamp) out.push(`  period                ${report.firstTimestamp} … ${report.lastTimestamp}`);
  out.push(`  errors                ${overall.errors}  (${percent(overall.errors, overall.calls).trim()} of calls)`);
  for (const [type, count] of Object.entries(overall.errorTypes).sort((a, b) => b[1] - a[1])) {
    out.push(`    ${type.padEnd(20)}${String(count).padStart(8)}  ${percent(count, overall.calls)}`);
  }
  if (report.folded.errorTypes > 0) out.push(`    … and ${folded(report.folded.errorTypes)} more error types, counted under (other)`);
  if (report.failingCalls.length > 0) {
    out.push("  latest errors         (newest first)");
    for (const call of report.failingCalls.slice(0, MAX_LISTED_ERRORS)) out.push(`    ${errorLine(call)}`);
  }
  out.push(`  served by kept programs ${overall.reused}  (${percent(overall.reused, overall.calls).trim()} of calls, no provider request)`);
  out.push(...reuseLines(overall));
  out.push(`  provider requests     ${overall.requests}`);
  const cached = overall.cachedTokens > 0 ? ` (${overall.cachedTokens} of them read from the prompt cache, ${percent(overall.cachedTokens, overall.promptTokens).trim()})` : "";
  out.push(`  tokens                ${overall.promptTokens} prompt${cached} + ${overall.completionTokens} completion${overall.callsWithoutTokens ? `  (${overall.callsWithoutTokens} calls without a usage report)` : ""}`);
  if (overall.callsWithCost > 0) out.push(`  cost                  $${overall.costUsd.toFixed(4)}  (${overall.callsWithCost} calls with a price; $${(overall.costUsd / overall.callsWithCost).toFixed(6)} a call)`);
  out.push(`  code reads history    ${overall.readsHistory}  (${percent(overall.readsHistory, overall.calls).trim()} of calls)`);
  out.push("  history operations    (calls using each, share of history-reading calls)");
  for (const tag of PATTERN_TAGS) {
    const count = overall.patterns[tag] ?? 0;
    out.push(`    ${tag.padEnd(20)}${String(count).padStart(8)}  ${percent(count, overall.readsHistory)}`);
  }
  const moreScans = report.folded.scans > 0 ? `  (and ${folded(report.folded.scans)} more kinds, counted under (other))` : "";
  out.push(`  scans                 ${Object.entries(overall.scans).map(([kind, count]) => `${kind} ${count}`).join(", ") || "none"}${moreScans}`);
  out.push(`  malformed lines       ${report.malformed.count}`);
  for (const example of report.malformed.examples) out.push(`    ${example}`);
  if (report.malformed.count > report.malformed.examples.length) out.push(`    … and ${report.malformed.count - report.malformed.examples.length} more`);
  out.push("", ...table("by role", report.byRole, report.folded.roles, "roles"), "", ...table("by method", report.byMethod, report.folded.methods, "methods"));
  out.push("", ...toolSection(report));
  // Only when some call had knowledge: most logs have none.
  if (usesKnowledge(overall.knowledge)) out.push("", ...knowledgeSection(report));
  if (hasEffects(overall.effects)) out.push("", ...effectLines(overall.effects, overall.calls));
  // Every name and message in it came from log lines, which programs partly wrote.
  return terminalText(out.join("\n"));
}

/** How many names went under (other): the count, or "at least" the most that are counted. */
const folded = (names: number) => (names >= MAX_FOLDED_COUNTED ? `at least ${names}` : String(names));

/** `2025-01-31T12:00:00.000Z  calculator.divide  execution  RangeError: …  (call 1b2c3d4e)` */
function errorLine(call: CallSample): string {
  // One line, and no control characters a log line could use to redraw the terminal.
  const message = (call.errorMessage ?? "(no message in this log line)").replace(/[\s\u0000-\u001f\u007f-\u009f]+/g, " ");
  const shown = message.length > MAX_MESSAGE_SHOWN ? `${message.slice(0, MAX_MESSAGE_SHOWN)}…` : message;
  return `${call.timestamp ?? "(no time)"}  ${call.role}.${call.method}  ${call.errorType ?? "(unknown)"}  ${shown}  (call ${call.callId.slice(0, 8)})`;
}

function reuseLines(stats: GroupStats): string[] {
  const sources = ["generated", "reused", "repaired"].map((source) => `${stats.programSources[source] ?? 0} ${source}`).join(", ");
  return [
    `  programs              ${sources}`,
    `  repairs that worked   ${stats.repairedOk}  (kept programs that failed by their own mistake: ${stats.keptProgramFailed}, dropped after failing in a row: ${stats.keptProgramDropped})`,
    `  new programs kept     ${stats.keptNew}  (${stats.notKept} that worked were not kept)`,
  ];
}

function toolSection(report: TelemetryReport): string[] {
  const { overall } = report;
  if (!usesTools(overall)) return ["tools                   no tool calls, and no program reaches tools"];
  return [
    "tools",
    `  calls using tools     ${overall.callsUsingTools}  (${percent(overall.callsUsingTools, overall.calls).trim()} of calls)`,
    `  tool calls            ${overall.toolCalls}  (${overall.toolErrors} failed, ${percent(overall.toolErrors, overall.toolCalls).trim()}; ${overall.toolMs.toFixed(1)} ms in tools)`,
    `  outcome tool          ${overall.toolOutcomes}  (calls ended by a tool's failure left uncaught)`,
    `  code reaches tools    ${overall.reachesTools}  (${percent(overall.reachesTools, overall.calls).trim()} of calls)`,
    "",
    ...toolTable("tools by role", report.byRole),
    "",
    ...toolTable("tools by method", report.byMethod),
    "",
    ...toolList(overall),
  ];
}

function toolTable(title: string, groups: Record<string, GroupStats>): string[] {
  const rows = toolGroups(groups).map(([name, stats]) => [
    name,
    String(stats.calls),
    percent(stats.callsUsingTools, stats.calls).trim(),
    percent(stats.reachesTools, stats.calls).trim(),
    String(stats.toolCalls),
    String(stats.toolErrors),
    stats.toolMs.toFixed(1),
    String(stats.toolOutcomes),
  ]);
  return alignedTable([title, "calls", "using tools", "reach tools", "tool calls", "failed", "tool ms", "outcome tool"], rows);
}

function toolList(overall: GroupStats): string[] {
  const tools = toolsByUse(overall);
  const rows = tools.slice(0, MAX_LISTED_TOOLS).map(([name, use]) => [name, String(use.calls), String(use.callsWithFailures), String(use.referenced)]);
  const lines = alignedTable(["tool", "calls", "with failures", "referenced"], rows);
  if (tools.length > MAX_LISTED_TOOLS) lines.push(`… and ${tools.length - MAX_LISTED_TOOLS} more tools`);
  lines.push("  calls: calls whose program called the tool; with failures: of those, calls in which a call of it failed");
  lines.push("  (lines older than tool_failed_names: toward every tool they called); referenced: calls whose program's syntax reaches it.");
  return lines;
}

/** A duration as the knowledge tables show it: `0.42`, `12.3`; `-` when there is none. */
const ms = (value: number | null) => (value === null ? "-" : value < 10 ? value.toFixed(2) : value.toFixed(1));

function knowledgeSection(report: TelemetryReport): string[] {
  const { calls, knowledge } = report.overall;
  return [
    "knowledge",
    `  calls with knowledge  ${knowledge.callsWithKnowledge}  (${percent(knowledge.callsWithKnowledge, calls).trim()} of calls)`,
    `  passages retrieved    ${knowledge.retrieved}  (${knowledge.retrievedPerCall.toFixed(1)} per call with knowledge)`,
    `  knowledge time        p50 ${ms(knowledge.msP50)} ms, p95 ${ms(knowledge.msP95)} ms`,
    `  outcome knowledge     ${knowledge.endedByKnowledge}  (calls ended by a failed source that is not optional)`,
    "",
    ...knowledgeTable("knowledge by role", report.byRole),
    "",
    ...knowledgeTable("knowledge by method", report.byMethod),
    "",
    ...sourceList(report.overall),
  ];
}

function knowledgeTable(title: string, groups: Record<string, GroupStats>): string[] {
  const rows = knowledgeGroups(groups).map(([name, { calls, knowledge }]) => [
    name,
    String(calls),
    percent(knowledge.callsWithKnowledge, calls).trim(),
    String(knowledge.retrieved),
    knowledge.retrievedPerCall.toFixed(1),
    ms(knowledge.msP50),
    ms(knowledge.msP95),
    String(knowledge.endedByKnowledge),
  ]);
  return alignedTable([title, "calls", "with knowledge", "passages", "per call", "p50 ms", "p95 ms", "outcome knowledge"], rows);
}

function sourceList(overall: GroupStats): string[] {
  const sources = sourcesByUse(overall.knowledge);
  const rows = sources.slice(0, MAX_LISTED_SOURCES).map(([name, use]) => [name, String(use.calls), String(use.empty), percent(use.empty, use.calls).trim(), String(use.failed)]);
  const lines = alignedTable(["source", "calls", "found nothing", "share", "failed"], rows);
  if (sources.length > MAX_LISTED_SOURCES) lines.push(`… and ${sources.length - MAX_LISTED_SOURCES} more sources`);
  lines.push("  calls: calls whose agent had the source; found nothing: of those, calls its retrieval found no passage for");
  lines.push("  (knowledge_empty: retrieval sources only); failed: of those, calls in which it failed (knowledge_failed).");
  return lines;
}

/** Rows under a header, the first column left-aligned and the others right-aligned, each as wide as its widest cell. */
function alignedTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((title) => title.length);
  for (const row of rows) row.forEach((cell, column) => (widths[column] = Math.max(widths[column]!, cell.length)));
  const line = (cells: readonly string[]) => cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[column]!))).join("  ");
  return [line(header), ...rows.map(line)];
}

/** A group's figures, a row each, most calls first; a last line says how many names were counted under (other). */
function table(title: string, groups: Record<string, GroupStats>, foldedNames: number, kind: string): string[] {
  const rows = Object.entries(groups).sort((a, b) => b[1].calls - a[1].calls);
  let width = title.length;
  for (const [name] of rows) width = Math.max(width, name.length);
  const lines = [`${title.padEnd(width)}  ${"calls".padStart(7)}  ${"errors".padStart(7)}  ${"reused".padStart(7)}  ${"requests".padStart(8)}  ${"tokens".padStart(9)}  ${"reads history".padStart(13)}  top operations`];
  for (const [name, stats] of rows) {
    const top = Object.entries(stats.patterns).sort((a, b) => b[1] - a[1]).slice(0, 4).map(([tag, count]) => `${tag} ${count}`).join(", ");
    const tokens = stats.callsWithoutTokens === stats.calls ? "-" : String(stats.promptTokens + stats.completionTokens);
    lines.push(`${name.padEnd(width)}  ${String(stats.calls).padStart(7)}  ${percent(stats.errors, stats.calls).padStart(7)}  ${percent(stats.reused, stats.calls).padStart(7)}  ${String(stats.requests).padStart(8)}  ${tokens.padStart(9)}  ${percent(stats.readsHistory, stats.calls).padStart(13)}  ${top || "-"}`);
  }
  if (foldedNames > 0) lines.push(`… and ${folded(foldedNames)} more ${kind}, counted under (other)`);
  return lines;
}
