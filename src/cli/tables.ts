import type { HistoryRecord } from "../history/index.ts";
import { terminalText } from "../shared/index.ts";
import type { AgentSummary, KeptProgram } from "../store/index.ts";
import type { RefusedProgram } from "./refused.ts";

/** Lays out rows under a header, each column as wide as its widest cell; what programs wrote shows as text (see shared/terminal-text.ts). */
function table(header: readonly string[], given: readonly string[][]): string {
  const rows = given.map((row) => row.map(terminalText));
  const widths = header.map((title) => title.length);
  for (const row of rows) row.forEach((cell, column) => (widths[column] = Math.max(widths[column] as number, cell.length)));
  const line = (cells: readonly string[]) => cells.map((cell, column) => cell.padEnd(widths[column] as number)).join("  ").trimEnd();
  return [line(header), line(widths.map((width) => "-".repeat(width))), ...rows.map(line)].join("\n");
}

/** A plain-text table of history records. */
export function historyTable(records: readonly HistoryRecord[]): string {
  const rows = records.map((r) => [
    r.call_id.slice(0, 8),
    r.speaker,
    `d${r.depth ?? 0}`,
    r.method_name,
    JSON.stringify(r.args).slice(0, 28),
    r.outcome_summary.ok ? `ok (${r.outcome_summary.value_class})` : `error ${r.outcome_summary.error_type}`,
    (r.trace_id ?? "").slice(0, 8),
    r.program_source ?? "-",
  ]);
  const attempts = attemptLines(records);
  const main = table(["call", "speaker", "depth", "method", "args", "outcome", "trace", "program"], rows);
  return attempts.length === 0 ? main : `${main}\n\nattempts of the calls that took more than one, or were not repaired:\n${terminalText(attempts.join("\n"))}`;
}

/** Each attempt of the calls that made several, or whose failure was not repaired: `  1b2c3d4e divide  #1 generated  execution: …`. */
function attemptLines(records: readonly HistoryRecord[]): string[] {
  const lines: string[] = [];
  for (const record of records) {
    const attempts = record.attempts ?? [];
    if (attempts.length < 2 && record.repair_skipped === undefined) continue;
    for (const attempt of attempts) {
      const what = attempt.error_type === undefined ? "ok" : `${attempt.error_type}: ${(attempt.error_message ?? "").replace(/\s+/g, " ").slice(0, 80)}`;
      const by = attempt.model === undefined ? "" : ` by ${attempt.model}`;
      lines.push(`  ${record.call_id.slice(0, 8)} ${record.method_name.slice(0, 24)}  #${attempt.n} ${attempt.program_source ?? "(no program)"}${by}, ${attempt.tool_call_count} tool calls  ${what}`);
    }
    if (record.repair_skipped !== undefined) lines.push(`  ${record.call_id.slice(0, 8)} ${record.method_name.slice(0, 24)}  not repaired: ${REPAIR_SKIPPED[record.repair_skipped]}`);
  }
  return lines;
}

const REPAIR_SKIPPED: Readonly<Record<NonNullable<HistoryRecord["repair_skipped"]>, string>> = {
  effects: "its program had called tools that may change the world",
  attempts_used: "its attempts were used up",
  not_a_mistake: "the failure was not the program's own mistake",
};

/** A plain-text table of stored agents. */
export function agentsTable(agents: readonly AgentSummary[]): string {
  return table(["id", "role", "records", "last call"], agents.map((agent) => [agent.id, agent.role, String(agent.records), agent.updatedAt]));
}

/** A kept program as `programs --show` prints it: its header, then its code, as text (see shared/terminal-text.ts). */
export function programListing(program: KeptProgram): string {
  return terminalText(`${programHeader(program)}${program.code}`);
}

/** Comment lines put before a kept program's text: its key, why it was kept and how it has fared. */
export function programHeader(program: KeptProgram): string {
  const failures = `${program.failures}${program.failuresInRow > 0 ? ` (${program.failuresInRow} in a row)` : ""}`;
  return [
    `// key: ${program.key}`,
    `// kept: ${program.keptAt}, because ${program.why ?? "(kept by an older improv, which did not record why)"}`,
    `// uses: ${program.uses}, failures: ${failures}, last used: ${program.lastUsed ?? "never"}`,
    "",
  ].join("\n");
}

/** A plain-text table of programs that worked and were not kept. */
export function refusedTable(refused: readonly RefusedProgram[]): string {
  return table(
    ["time", "agent", "method", "call", "why not kept"],
    refused.map((entry) => [entry.timestamp, entry.agent, `${entry.role}.${entry.method}`, entry.callId.slice(0, 8), entry.reason]),
  );
}

/** A plain-text table of kept programs. */
export function programsTable(programs: readonly KeptProgram[]): string {
  return table(
    ["key", "uses", "failures", "last used"],
    programs.map((program) => [program.key, String(program.uses), `${program.failures}${program.failuresInRow > 0 ? ` (${program.failuresInRow} in a row)` : ""}`, program.lastUsed ?? "never"]),
  );
}
