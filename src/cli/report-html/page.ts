/**
 * `improv telemetry --html`: the report as one self-contained HTML page (inline CSS, SVG and,
 * for the call explorer, script; nothing fetched at view time), a section for each question the
 * telemetry answers.
 */
import { createHash } from "node:crypto";
import { describeFilters } from "../report-filter.ts";
import { hasEffects } from "../report-effects.ts";
import { usesKnowledge } from "../report-knowledge.ts";
import type { TelemetryReport } from "../telemetry-report.ts";
import { escape } from "./markup.ts";
import type { ExplorerData } from "../report-calls.ts";
import { effectsSection } from "./sections-effects.ts";
import { EXPLORER_SCRIPT } from "./explorer-script.ts";
import { explorerSection } from "./sections-explorer.ts";
import { knowledgeSection } from "./sections-knowledge.ts";
import { activitySection, durationsSection, errorsSection, summarySection } from "./sections-outcomes.ts";
import { historySection, reuseSection, tokensSection } from "./sections-programs.ts";
import { egressSection, toolsSection } from "./sections-tools.ts";

/** The sections below the summary, in page order, as the table of contents names them (knowledge and effects only when some call had any). */
const CONTENTS: readonly (readonly [string, string])[] = [
  ["activity", "calls over time"],
  ["errors", "what went wrong"],
  ["durations", "durations"],
  ["history", "history use"],
  ["reuse-and-repair", "reuse and repair"],
  ["cost", "tokens"],
  ["tools", "tools"],
  ["egress", "egress"],
  ["knowledge", "knowledge"],
  ["effects", "effects"],
  ["calls", "calls"],
];

const STYLE = `
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222;padding:0 1rem}
h1{font-size:1.4rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin:2.2rem 0 .2rem;border-top:1px solid #ddd;padding-top:1rem}
nav{font-size:13px;margin:.4rem 0 1rem}nav a{margin-right:.8rem;color:#3b6fb6}
.intro{color:#444;margin:.2rem 0 1rem}.notice{background:#fff4e5;border-left:4px solid #edae49;padding:.5rem .8rem;font-weight:600}
table{border-collapse:collapse;margin:0 0 1.5rem}caption{text-align:left;font-weight:600;padding-bottom:.3rem}
th{text-align:left;padding:2px 16px 2px 0;font-weight:600;vertical-align:top}td{padding:2px 12px 2px 0;vertical-align:top}
table.data thead th{border-bottom:1px solid #bbb}table.data tbody tr:nth-child(even){background:#f6f7f9}table.data .n{text-align:right;font-variant-numeric:tabular-nums}
table.data tbody th{font-weight:500}table.data .n{white-space:nowrap}table.data td.w{overflow-wrap:anywhere;min-width:10rem}
table.calls{font-size:12px}table.calls tbody th{font:11px ui-monospace,monospace;white-space:nowrap}table.calls td:nth-child(2){white-space:nowrap}
figure.chart{margin:0 0 2rem;padding:0}figcaption{font-weight:600;margin-bottom:.4rem}svg{width:100%;height:auto;font-size:11px}
.axis,.label,.value{fill:#444}.axis.title{fill:#666}.grid{stroke:#e3e3e3}.baseline{stroke:#999}
.explorer-controls{display:flex;flex-wrap:wrap;gap:.4rem 1rem;font-size:13px;margin:.4rem 0}.explorer-controls select,.explorer-controls input{font:inherit}
button.call-id{font:11px ui-monospace,monospace;background:none;border:0;color:#3b6fb6;cursor:pointer;padding:0;text-decoration:underline}button.call-id.current{font-weight:700;color:#222}
.call-detail{border:1px solid #ddd;padding:.5rem 1rem;margin:1rem 0}.call-detail dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;font-size:13px}.call-detail dt{font-weight:600}.call-detail dd{margin:0;overflow-wrap:anywhere;white-space:pre-wrap}
pre.program{background:#f6f7f9;padding:.5rem;font-size:12px;overflow:auto;max-height:24rem;white-space:pre-wrap}ul.tree{font-size:13px}
.note,.empty{color:#666;font-size:12px;margin:.3rem 0}.legend span{margin-right:1rem}.legend span::before{content:"";display:inline-block;width:10px;height:10px;background:var(--c);margin-right:4px}
`;

/**
 * What the page may do: load nothing, run its own script only (named by its hash, so no other
 * script, event handler or `javascript:` link runs), and neither take a `<base>` nor send a form.
 * Should markup ever slip into the page, it stays inert.
 */
const POLICY = `default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-${createHash("sha256").update(EXPLORER_SCRIPT).digest("base64")}'; base-uri 'none'; form-action 'none'`;

/**
 * The report as a self-contained HTML page; with `calls`, its call explorer too. The page's
 * policy lets it load nothing: its own style and script run, nothing is fetched.
 */
export function renderHtmlReport(report: TelemetryReport, generatedAt = new Date(), calls?: ExplorerData): string {
  const filters = describeFilters(report.filters);
  const scope = filters === "" ? "" : ` Calls matching ${escape(filters)}.`;
  const knowledge = usesKnowledge(report.overall.knowledge);
  const effects = hasEffects(report.overall.effects);
  // Sections a report may leave out, and whether this one has each.
  const present: Readonly<Record<string, boolean>> = { knowledge, effects, calls: calls !== undefined };
  const contents = CONTENTS.filter(([id]) => present[id] ?? true).map(([id, name]) => `<a href="#${id}">${escape(name)}</a>`).join("");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${POLICY}">
<title>improv telemetry</title>
<style>${STYLE}</style></head><body>
<h1>improv telemetry</h1>
<p class="note">Generated ${escape(generatedAt.toISOString())} from ${report.lines} log lines.${scope}</p>
<nav aria-label="sections">${contents}</nav>
${summarySection(report)}
${activitySection(report)}
${errorsSection(report)}
${durationsSection(report)}
${historySection(report)}
${reuseSection(report)}
${tokensSection(report)}
${toolsSection(report)}
${egressSection(report)}
${knowledge ? `${knowledgeSection(report)}\n` : ""}${effects ? `${effectsSection(report)}\n` : ""}${calls === undefined ? "" : `${explorerSection(calls)}\n`}</body></html>
`;
}
