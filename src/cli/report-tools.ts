/**
 * Tool use in a telemetry report: the tool fields of a log line, read only when sane, and their
 * sums per group of calls. Fetches are tool calls named `fetch`.
 */

/** One tool's use within a group of calls. */
export interface ToolUse {
  /** Calls whose program called the tool. */
  calls: number;
  /**
   * Of those, calls in which a call of this tool failed (`tool_failed_names`). A line written
   * before that field existed says only how many tool calls failed: its failures count toward
   * every tool it called.
   */
  callsWithFailures: number;
  /** Calls whose program's syntax reaches the tool (the static scan). */
  referenced: number;
}

/** The tool figures of a group of calls. */
export interface ToolStats {
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

/** The name under which the tool report counts a program's egress requests. */
export const FETCH_TOOL = "fetch";

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

export function emptyToolStats(): ToolStats {
  return { callsUsingTools: 0, toolCalls: 0, toolErrors: 0, toolMs: 0, toolOutcomes: 0, reachesTools: 0, tools: {} };
}

/** The tool fields of one line, each kept only when sane (older lines have none: all zero). */
export interface ToolFields {
  readonly calls: number;
  readonly errors: number;
  readonly ms: number;
  readonly endedByTool: boolean;
  readonly reaches: boolean;
  readonly called: readonly string[];
  /** The tools of which a call failed, where the line says (`tool_failed_names`); undefined on older lines, which say only how many failed. */
  readonly failed: readonly string[] | undefined;
  readonly referenced: readonly string[];
}

export function toolFieldsOf(line: Record<string, unknown>): ToolFields {
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
    failed: failedNames(line.tool_failed_names, called),
    referenced: toolNames(line.tools_referenced),
  };
}

/** A count from a log line: a whole number ≥ 0, or undefined. */
export function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
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

/** A line's `tool_failed_names`, those it also says it called; undefined when it has none (an older line) or it is not a list. */
function failedNames(value: unknown, called: readonly string[]): string[] | undefined {
  if (!Array.isArray(value)) return undefined;
  return toolNames(value).filter((name) => called.includes(name));
}

export function addToolUse(stats: ToolStats, tools: ToolFields): void {
  if (tools.calls > 0) stats.callsUsingTools += 1;
  stats.toolCalls += tools.calls;
  stats.toolErrors += tools.errors;
  stats.toolMs = Math.round((stats.toolMs + tools.ms) * 1000) / 1000;
  if (tools.endedByTool) stats.toolOutcomes += 1;
  if (tools.reaches) stats.reachesTools += 1;
  for (const use of toolUses(stats.tools, tools.called)) use.calls += 1;
  // Which tools failed, where the line says; an older line's failures count toward every tool it called.
  const failed = tools.errors === 0 ? [] : (tools.failed ?? tools.called);
  for (const use of toolUses(stats.tools, failed)) use.callsWithFailures += 1;
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

/** Whether a group's programs called tools or reach them. */
export function usesTools(stats: ToolStats): boolean {
  return stats.callsUsingTools > 0 || stats.reachesTools > 0;
}

/** Groups whose programs called tools or reach them, most tool calls first. */
export function toolGroups<T extends ToolStats & { calls: number }>(groups: Record<string, T>): [string, T][] {
  return Object.entries(groups)
    .filter(([, stats]) => usesTools(stats))
    .sort((a, b) => b[1].toolCalls - a[1].toolCalls || b[1].calls - a[1].calls);
}

/** A group's tools, most used first (calls, then programs reaching them). */
export function toolsByUse(stats: ToolStats): [string, ToolUse][] {
  return Object.entries(stats.tools).sort((a, b) => b[1].calls - a[1].calls || b[1].referenced - a[1].referenced || a[0].localeCompare(b[0]));
}

/** The fetch figures of a group: calls whose program fetched, of those with a failed tool call, and programs that reach `fetch`. */
export function egressOf(stats: ToolStats): ToolUse {
  return stats.tools[FETCH_TOOL] ?? { calls: 0, callsWithFailures: 0, referenced: 0 };
}
