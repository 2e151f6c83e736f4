/** The section on the calls' knowledge: which sources, how often a retrieval found nothing or a source failed, how many passages, how slow. */
import { knowledgeGroups, sourcesByUse } from "../report-knowledge.ts";
import type { GroupStats, TelemetryReport } from "../telemetry-report.ts";
import { rowChart } from "./charts.ts";
import { asPercent, formatMs, section, share } from "./markup.ts";
import { dataTable } from "./tables.ts";

/** Sources and groups drawn or listed in the knowledge part of the page. */
const MAX_KNOWLEDGE_ROWS = 20;

export function knowledgeSection(report: TelemetryReport): string {
  const { calls, knowledge } = report.overall;
  const sources = sourcesByUse(knowledge);
  const chart = rowChart(
    "knowledge-sources",
    "Knowledge sources: calls that had each, and how it fared",
    ["gave text or passages", "failed", "found nothing"],
    sources.slice(0, MAX_KNOWLEDGE_ROWS).map(([name, use]) => ({ label: name, parts: [Math.max(0, use.calls - use.failed - use.empty), use.failed, use.empty] })),
    "From knowledge_sources, knowledge_failed and knowledge_empty. Only a retrieval can find nothing; a state or literal source gives its text or fails.",
  );
  const table = dataTable(
    "knowledge-sources-table",
    ["source", "calls", "found nothing", "share", "failed"].map((title, index) => ({ title, numeric: index > 0 })),
    sources.slice(0, MAX_KNOWLEDGE_ROWS).map(([name, use]) => [name, String(use.calls), String(use.empty), asPercent(use.emptyShare), String(use.failed)]),
    "No call had knowledge sources.",
    { caption: `Knowledge sources${sources.length > MAX_KNOWLEDGE_ROWS ? ` (the ${MAX_KNOWLEDGE_ROWS} most used of ${sources.length})` : ""}` },
  );
  return section(
    "knowledge",
    "Knowledge",
    `${knowledge.callsWithKnowledge} calls (${asPercent(share(knowledge.callsWithKnowledge, calls))}) had knowledge; ${knowledge.retrieved} passages were retrieved (${knowledge.retrievedPerCall.toFixed(1)} per call with knowledge); gathering took ${formatMs(knowledge.msP50)} at the median and ${formatMs(knowledge.msP95)} at the 95th percentile; ${knowledge.endedByKnowledge} calls ended knowledge (a source that is not optional failed).`,
    chart,
    table,
    groupTable("knowledge-by-role", "role", report.byRole),
    groupTable("knowledge-by-method", "role.method", report.byMethod),
  );
}

function groupTable(id: string, title: string, groups: Record<string, GroupStats>): string {
  const rows = knowledgeGroups(groups)
    .slice(0, MAX_KNOWLEDGE_ROWS)
    .map(([name, { calls, knowledge }]) => [
      name,
      String(calls),
      asPercent(share(knowledge.callsWithKnowledge, calls)),
      String(knowledge.retrieved),
      knowledge.retrievedPerCall.toFixed(1),
      formatMs(knowledge.msP50),
      formatMs(knowledge.msP95),
      String(knowledge.endedByKnowledge),
    ]);
  const columns = [title, "calls", "with knowledge", "passages retrieved", "per call", "time p50", "time p95", "outcome knowledge"].map((name, index) => ({ title: name, numeric: index > 0 }));
  return dataTable(id, columns, rows, "No call had knowledge.", { caption: `Knowledge by ${title}` });
}
