import { PATTERN_TAGS, type PatternTag } from "../telemetry/patterns.ts";

/** Counts for one group of calls (all calls, one role, one method). */
export interface GroupStats {
  calls: number;
  errors: number;
  errorTypes: Record<string, number>;
  readsHistory: number;
  patterns: Partial<Record<PatternTag, number>>;
  scans: Record<string, number>;
  /** Calls served by a kept program, with no provider request. */
  reused: number;
  /** Provider requests (generation attempts) made. */
  requests: number;
  /** Tokens the provider reported; calls whose lines carry none are counted in `callsWithoutTokens`. */
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens read from a prompt cache (part of `promptTokens`), as the provider reported them. */
  cachedTokens: number;
  callsWithoutTokens: number;
  /** Calls whose program called at least one tool. */
  callsUsingTools: number;
  /** Tool calls made, over all of a call's attempts. */
  toolCalls: number;
  /** Tool calls that failed (threw, timed out, were denied, or were still running when the call ended). */
  toolErrors: number;
  /** Time spent in tool calls. @unit ms */
  toolMs: number;
  /** Calls that ended with outcome `tool`: a tool's failure the program left uncaught. */
  toolOutcomes: number;
  /** Calls whose program's syntax reaches `tools` (the static scan). */
  reachesTools: number;
  /** Use of each tool by name: at most {@link MAX_TOOL_NAMES} names, the rest under {@link OTHER_TOOLS}. */
  tools: Record<string, ToolUse>;
}

/** One tool's use within a group of calls. */
export interface ToolUse {
  /** Calls whose program called the tool. */
  calls: number;
  /**
   * Of those, calls in which a tool call failed. A log line counts failures, not which tool
   * failed, so a call that used several tools counts toward each of them.
   */
  callsWithFailures: number;
  /** Calls whose program's syntax reaches the tool (the static scan). */
  referenced: number;
}

/** What `improv telemetry` reports (`--json` prints exactly this). */
export interface TelemetryReport {
  readonly lines: number;
  readonly calls: number;
  readonly filteredOut: number;
  readonly malformed: { readonly count: number; readonly examples: readonly string[] };
  readonly firstTimestamp: string | null;
  readonly lastTimestamp: string | null;
  readonly overall: GroupStats;
  readonly byRole: Record<string, GroupStats>;
  readonly byMethod: Record<string, GroupStats>;
  /** Calls and errors over time, in at most {@link MAX_TIMELINE_POINTS} equal steps. */
  readonly timeline: { readonly stepSeconds: number; readonly points: readonly { readonly start: string; readonly calls: number; readonly errors: number }[] };
  /** How many calls took up to each bound (`upToMs`; the last bound is null: longer). */
  readonly latency: readonly { readonly upToMs: number | null; readonly calls: number }[];
}

/** Most points of the timeline; minutes are merged into longer steps past it. */
const MAX_TIMELINE_POINTS = 60;
/** Upper bounds of the latency histogram's bins. @unit ms */
const LATENCY_BOUNDS_MS = [0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000] as const;

/** Malformed lines listed by location in the report; the rest are only counted. */
const MAX_MALFORMED_EXAMPLES = 20;

/** Tool names kept apart per group; calls of further tools are counted under {@link OTHER_TOOLS}. */
const MAX_TOOL_NAMES = 50;
/** Where calls of tools past the first {@link MAX_TOOL_NAMES} of a group are counted (never a tool's name). */
const OTHER_TOOLS = "(other)";
/** Entries of a line's tool name list read; an agent grants at most 1,000 tools. */
const MAX_TOOL_NAMES_READ = 1_000;
/**
 * Most tool calls one line may claim. A program may make 256 requests of the host per attempt;
 * a larger count is a corrupt line, and counting it would drown every real figure.
 */
const MAX_SANE_TOOL_CALLS = 100_000;
/** Most time in tools one line may claim: a week, far past any call's deadline. @unit ms */
const MAX_SANE_TOOL_MS = 7 * 24 * 3_600_000;
/** A tool's name in programs: an identifier, or a tool set's name and the tool's, joined by a dot. */
const TOOL_NAME = /^[A-Za-z_$][\w$]{0,63}(?:\.[A-Za-z_$][\w$]{0,63})?$/;

function emptyStats(): GroupStats {
  return {
    calls: 0,
    errors: 0,
    errorTypes: {},
    readsHistory: 0,
    patterns: {},
    scans: {},
    reused: 0,
    requests: 0,
    promptTokens: 0,
    completionTokens: 0,
    cachedTokens: 0,
    callsWithoutTokens: 0,
    callsUsingTools: 0,
    toolCalls: 0,
    toolErrors: 0,
    toolMs: 0,
    toolOutcomes: 0,
    reachesTools: 0,
    tools: {},
  };
}

/** Accumulates call log lines into a {@link TelemetryReport}. */
export class TelemetryAggregator {
  #lines = 0;
  #filteredOut = 0;
  #malformed = 0;
  readonly #examples: string[] = [];
  #first: string | null = null;
  #last: string | null = null;
  readonly #overall = emptyStats();
  readonly #byRole = new Map<string, GroupStats>();
  readonly #byMethod = new Map<string, GroupStats>();
  /** Calls and errors per minute since the epoch. */
  readonly #minutes = new Map<number, { calls: number; errors: number }>();
  readonly #latency: number[] = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
  readonly #since: number | undefined;
  readonly #until: number | undefined;

  constructor(window: { since?: Date; until?: Date } = {}) {
    this.#since = window.since?.getTime();
    this.#until = window.until?.getTime();
  }

  /** Takes one raw line; `where` locates it (`file:line`) for the malformed list. */
  addLine(text: string, where: string): void {
    if (text.trim() === "") return;
    this.#lines += 1;
    let line: unknown;
    try {
      line = JSON.parse(text);
    } catch {
      this.#recordMalformed(where, "not JSON");
      return;
    }
    if (typeof line !== "object" || line === null || typeof (line as { call_id?: unknown }).call_id !== "string" || typeof (line as { outcome_status?: unknown }).outcome_status !== "string") {
      this.#recordMalformed(where, "not an improv call line");
      return;
    }
    this.#addCall(line as Record<string, unknown>);
  }

  #recordMalformed(where: string, why: string): void {
    this.#malformed += 1;
    if (this.#examples.length < MAX_MALFORMED_EXAMPLES) this.#examples.push(`${where} (${why})`);
  }

  #addCall(line: Record<string, unknown>): void {
    const timestamp = typeof line.timestamp === "string" ? line.timestamp : null;
    if (this.#since !== undefined || this.#until !== undefined) {
      const time = timestamp === null ? Number.NaN : Date.parse(timestamp);
      if (Number.isNaN(time) || (this.#since !== undefined && time < this.#since) || (this.#until !== undefined && time > this.#until)) {
        this.#filteredOut += 1;
        return;
      }
    }
    if (timestamp !== null) {
      if (this.#first === null || timestamp < this.#first) this.#first = timestamp;
      if (this.#last === null || timestamp > this.#last) this.#last = timestamp;
    }
    const role = typeof line.role === "string" ? line.role : "(unknown)";
    const method = typeof line.method === "string" ? line.method : "(unknown)";
    const tools = toolFieldsOf(line);
    for (const stats of [this.#overall, groupOf(this.#byRole, role), groupOf(this.#byMethod, `${role}.${method}`)]) {
      add(stats, line);
      addToolUse(stats, tools);
    }
    const time = timestamp === null ? Number.NaN : Date.parse(timestamp);
    if (!Number.isNaN(time)) {
      const minute = Math.floor(time / 60_000);
      const bucket = this.#minutes.get(minute) ?? { calls: 0, errors: 0 };
      bucket.calls += 1;
      if (line.outcome_status !== "ok") bucket.errors += 1;
      this.#minutes.set(minute, bucket);
    }
    if (typeof line.duration_ms === "number" && Number.isFinite(line.duration_ms) && line.duration_ms >= 0) {
      const bin = LATENCY_BOUNDS_MS.findIndex((bound) => (line.duration_ms as number) <= bound);
      this.#latency[bin === -1 ? LATENCY_BOUNDS_MS.length : bin]! += 1;
    }
  }

  #timeline(): TelemetryReport["timeline"] {
    if (this.#minutes.size === 0) return { stepSeconds: 60, points: [] };
    let first = Infinity;
    let last = -Infinity;
    for (const minute of this.#minutes.keys()) {
      first = Math.min(first, minute);
      last = Math.max(last, minute);
    }
    const span = last - first + 1;
    const step = Math.max(1, Math.ceil(span / MAX_TIMELINE_POINTS));
    const points = Array.from({ length: Math.ceil(span / step) }, (_, index) => ({ start: new Date((first + index * step) * 60_000).toISOString(), calls: 0, errors: 0 }));
    for (const [minute, bucket] of this.#minutes) {
      const point = points[Math.floor((minute - first) / step)]!;
      point.calls += bucket.calls;
      point.errors += bucket.errors;
    }
    return { stepSeconds: step * 60, points };
  }

  report(): TelemetryReport {
    return {
      lines: this.#lines,
      calls: this.#overall.calls,
      filteredOut: this.#filteredOut,
      malformed: { count: this.#malformed, examples: [...this.#examples] },
      firstTimestamp: this.#first,
      lastTimestamp: this.#last,
      overall: this.#overall,
      byRole: Object.fromEntries(this.#byRole),
      byMethod: Object.fromEntries(this.#byMethod),
      timeline: this.#timeline(),
      latency: this.#latency.map((calls, index) => ({ upToMs: LATENCY_BOUNDS_MS[index] ?? null, calls })),
    };
  }
}

function groupOf(groups: Map<string, GroupStats>, key: string): GroupStats {
  let stats = groups.get(key);
  if (!stats) {
    stats = emptyStats();
    groups.set(key, stats);
  }
  return stats;
}

function add(stats: GroupStats, line: Record<string, unknown>): void {
  stats.calls += 1;
  if (line.outcome_status !== "ok") {
    stats.errors += 1;
    const type = typeof line.error_type === "string" ? line.error_type : "(unknown)";
    stats.errorTypes[type] = (stats.errorTypes[type] ?? 0) + 1;
  }
  if (line.history_access_detected === true) stats.readsHistory += 1;
  if (line.artifact_hit === true) stats.reused += 1;
  stats.requests += count(line.generation_attempt) ?? 0;
  const prompt = count(line.prompt_tokens);
  const completion = count(line.completion_tokens);
  if (prompt === undefined && completion === undefined) stats.callsWithoutTokens += 1;
  stats.promptTokens += prompt ?? 0;
  stats.completionTokens += completion ?? 0;
  stats.cachedTokens += count(line.cached_tokens) ?? 0;
  if (Array.isArray(line.history_query_patterns)) {
    for (const tag of line.history_query_patterns) {
      if ((PATTERN_TAGS as readonly unknown[]).includes(tag)) stats.patterns[tag as PatternTag] = (stats.patterns[tag as PatternTag] ?? 0) + 1;
    }
  }
  const scan = typeof line.history_scan === "string" ? line.history_scan : "(unknown)";
  stats.scans[scan] = (stats.scans[scan] ?? 0) + 1;
}

/** A count from a log line: a whole number ≥ 0, or undefined. */
function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** The tool fields of one line, each kept only when sane (older lines have none: all zero). */
interface ToolFields {
  readonly calls: number;
  readonly errors: number;
  readonly ms: number;
  readonly endedByTool: boolean;
  readonly reaches: boolean;
  readonly called: readonly string[];
  readonly referenced: readonly string[];
}

function toolFieldsOf(line: Record<string, unknown>): ToolFields {
  const claimed = count(line.tool_call_count);
  const calls = claimed !== undefined && claimed <= MAX_SANE_TOOL_CALLS ? claimed : 0;
  const errors = count(line.tool_error_count);
  const ms = line.tool_ms;
  const called = calls > 0 ? toolNames(line.tool_names) : [];
  // A line cannot have more failed tool calls than tool calls, nor name more tools than it called.
  return {
    calls,
    errors: errors !== undefined && errors <= calls ? errors : 0,
    ms: calls > 0 && typeof ms === "number" && Number.isFinite(ms) && ms >= 0 && ms <= MAX_SANE_TOOL_MS ? ms : 0,
    endedByTool: line.outcome_status !== "ok" && line.error_type === "tool",
    reaches: line.tool_access_detected === true,
    called: called.length <= calls ? called : [],
    referenced: toolNames(line.tools_referenced),
  };
}

/** The distinct tool names in a line's list, skipping anything that is not a tool's name. */
function toolNames(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  const names = new Set<string>();
  for (const name of value.slice(0, MAX_TOOL_NAMES_READ)) {
    // "__proto__" would set an object's prototype; improv refuses it as a tool name anyway.
    if (typeof name === "string" && TOOL_NAME.test(name) && !name.split(".").includes("__proto__")) names.add(name);
  }
  return [...names];
}

function addToolUse(stats: GroupStats, tools: ToolFields): void {
  if (tools.calls > 0) stats.callsUsingTools += 1;
  stats.toolCalls += tools.calls;
  stats.toolErrors += tools.errors;
  stats.toolMs = Math.round((stats.toolMs + tools.ms) * 1000) / 1000;
  if (tools.endedByTool) stats.toolOutcomes += 1;
  if (tools.reaches) stats.reachesTools += 1;
  for (const use of toolUses(stats.tools, tools.called)) {
    use.calls += 1;
    if (tools.errors > 0) use.callsWithFailures += 1;
  }
  for (const use of toolUses(stats.tools, tools.referenced)) use.referenced += 1;
}

/** The entries to count one call in, each once, even when several names share {@link OTHER_TOOLS}. */
function toolUses(tools: Record<string, ToolUse>, names: readonly string[]): Set<ToolUse> {
  const uses = new Set<ToolUse>();
  for (const name of names) {
    const named = Object.keys(tools).length - (Object.hasOwn(tools, OTHER_TOOLS) ? 1 : 0);
    const key = Object.hasOwn(tools, name) || named < MAX_TOOL_NAMES ? name : OTHER_TOOLS;
    if (!Object.hasOwn(tools, key)) tools[key] = { calls: 0, callsWithFailures: 0, referenced: 0 };
    uses.add(tools[key]!);
  }
  return uses;
}

const percent = (part: number, whole: number) => (whole === 0 ? "  0.0%" : `${((100 * part) / whole).toFixed(1).padStart(5)}%`);

/** The human-readable report. */
export function formatReport(report: TelemetryReport): string {
  const out: string[] = [];
  const { overall } = report;
  out.push("improv telemetry");
  out.push(`  calls                 ${report.calls}${report.filteredOut ? `  (${report.filteredOut} outside --since/--until)` : ""}`);
  if (report.firstTimestamp) out.push(`  period                ${report.firstTimestamp} … ${report.lastTimestamp}`);
  out.push(`  errors                ${overall.errors}  (${percent(overall.errors, overall.calls).trim()} of calls)`);
  for (const [type, count] of Object.entries(overall.errorTypes).sort((a, b) => b[1] - a[1])) {
    out.push(`    ${type.padEnd(20)}${String(count).padStart(8)}  ${percent(count, overall.calls)}`);
  }
  out.push(`  served by kept programs ${overall.reused}  (${percent(overall.reused, overall.calls).trim()} of calls, no provider request)`);
  out.push(`  provider requests     ${overall.requests}`);
  const cached = overall.cachedTokens > 0 ? ` (${overall.cachedTokens} of them read from the prompt cache, ${percent(overall.cachedTokens, overall.promptTokens).trim()})` : "";
  out.push(`  tokens                ${overall.promptTokens} prompt${cached} + ${overall.completionTokens} completion${overall.callsWithoutTokens ? `  (${overall.callsWithoutTokens} calls without a usage report)` : ""}`);
  out.push(`  code reads history    ${overall.readsHistory}  (${percent(overall.readsHistory, overall.calls).trim()} of calls)`);
  out.push("  history operations    (calls using each, share of history-reading calls)");
  for (const tag of PATTERN_TAGS) {
    const count = overall.patterns[tag] ?? 0;
    out.push(`    ${tag.padEnd(20)}${String(count).padStart(8)}  ${percent(count, overall.readsHistory)}`);
  }
  out.push(`  scans                 ${Object.entries(overall.scans).map(([kind, count]) => `${kind} ${count}`).join(", ") || "none"}`);
  out.push(`  malformed lines       ${report.malformed.count}`);
  for (const example of report.malformed.examples) out.push(`    ${example}`);
  if (report.malformed.count > report.malformed.examples.length) out.push(`    … and ${report.malformed.count - report.malformed.examples.length} more`);
  out.push("", ...table("by role", report.byRole), "", ...table("by method", report.byMethod));
  out.push("", ...toolSection(report));
  return out.join("\n");
}

/** Tools listed by name in the text report; the rest are only counted. */
const MAX_LISTED_TOOLS = 15;

/** Whether a group's programs called tools or reach them. */
export function usesTools(stats: GroupStats): boolean {
  return stats.callsUsingTools > 0 || stats.reachesTools > 0;
}

/** Groups whose programs called tools or reach them, most tool calls first. */
export function toolGroups(groups: Record<string, GroupStats>): [string, GroupStats][] {
  return Object.entries(groups)
    .filter(([, stats]) => usesTools(stats))
    .sort((a, b) => b[1].toolCalls - a[1].toolCalls || b[1].calls - a[1].calls);
}

/** A group's tools, most used first (calls, then programs reaching them). */
export function toolsByUse(stats: GroupStats): [string, ToolUse][] {
  return Object.entries(stats.tools).sort((a, b) => b[1].calls - a[1].calls || b[1].referenced - a[1].referenced || a[0].localeCompare(b[0]));
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
  lines.push("  calls: calls whose program called the tool; with failures: of those, calls in which a tool call failed");
  lines.push("  (a call that used several tools counts toward each); referenced: calls whose program's syntax reaches it.");
  return lines;
}

/** Rows under a header, the first column left-aligned and the others right-aligned, each as wide as its widest cell. */
function alignedTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: readonly string[]) => cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[column]!))).join("  ");
  return [line(header), ...rows.map(line)];
}

function table(title: string, groups: Record<string, GroupStats>): string[] {
  const rows = Object.entries(groups).sort((a, b) => b[1].calls - a[1].calls);
  const width = Math.max(title.length, ...rows.map(([name]) => name.length));
  const lines = [`${title.padEnd(width)}  ${"calls".padStart(7)}  ${"errors".padStart(7)}  ${"reused".padStart(7)}  ${"requests".padStart(8)}  ${"tokens".padStart(9)}  ${"reads history".padStart(13)}  top operations`];
  for (const [name, stats] of rows) {
    const top = Object.entries(stats.patterns).sort((a, b) => b[1] - a[1]).slice(0, 4).map(([tag, count]) => `${tag} ${count}`).join(", ");
    const tokens = stats.callsWithoutTokens === stats.calls ? "-" : String(stats.promptTokens + stats.completionTokens);
    lines.push(`${name.padEnd(width)}  ${String(stats.calls).padStart(7)}  ${percent(stats.errors, stats.calls).padStart(7)}  ${percent(stats.reused, stats.calls).padStart(7)}  ${String(stats.requests).padStart(8)}  ${tokens.padStart(9)}  ${percent(stats.readsHistory, stats.calls).padStart(13)}  ${top || "-"}`);
  }
  return lines;
}
