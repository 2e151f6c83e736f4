/** The report's tables: figures by group, and single calls by call id. */
import type { CallSample } from "../report-samples.ts";
import { escape, formatMs, formatTime } from "./markup.ts";

/** One column: its header, and whether its cells are numbers (right-aligned) or prose that may wrap. */
export interface Column {
  readonly title: string;
  readonly numeric?: boolean;
  readonly wrap?: boolean;
}

function cellClass(column: Column | undefined): string {
  return column?.numeric ? ' class="n"' : column?.wrap ? ' class="w"' : "";
}

/**
 * A table with a header row; the first cell of each row is its row header. `empty` is shown
 * in place of rows when there are none. `data-rows` says how many rows it holds.
 */
export function dataTable(id: string, columns: readonly Column[], rows: readonly (readonly string[])[], empty: string, options: { readonly caption?: string; readonly className?: string } = {}): string {
  const { caption, className = "data" } = options;
  const header = columns.map((column) => `<th${cellClass(column)} scope="col">${escape(column.title)}</th>`).join("");
  const body =
    rows.length === 0
      ? `<tr><td colspan="${columns.length}" class="empty">${escape(empty)}</td></tr>`
      : rows
          .map((row) => `<tr>${row.map((cell, index) => (index === 0 ? `<th scope="row">${escape(cell)}</th>` : `<td${cellClass(columns[index])}>${escape(cell)}</td>`)).join("")}</tr>`)
          .join("");
  return `<table class="${className}" id="${id}" data-rows="${rows.length}">${caption === undefined ? "" : `<caption>${escape(caption)}</caption>`}<thead><tr>${header}</tr></thead><tbody>${body}</tbody></table>`;
}

/** Single calls, each with its full call id (to find its record and log line), time, method, duration and outcome. */
export function callTable(id: string, calls: readonly CallSample[], empty: string, caption: string): string {
  const columns: Column[] = [
    { title: "call id" },
    { title: "time (UTC)" },
    { title: "role.method" },
    { title: "duration", numeric: true },
    { title: "outcome" },
    { title: "program (provider attempts)" },
    { title: "tool calls", numeric: true },
    { title: "error message", wrap: true },
  ];
  const rows = calls.map((call) => [
    call.callId,
    formatTime(call.timestamp),
    `${call.role}.${call.method}`,
    formatMs(call.durationMs),
    call.status === "ok" ? "ok" : `error ${call.errorType ?? "(unknown)"}`,
    `${call.programSource ?? "none"}${call.attempts === null ? "" : ` (${call.attempts})`}`,
    call.toolCalls === 0 ? "0" : `${call.toolCalls}${call.toolErrors > 0 ? ` (${call.toolErrors} failed)` : ""}`,
    call.status === "ok" ? "" : (call.errorMessage ?? "(no message in this log line)"),
  ]);
  return dataTable(id, columns, rows, empty, { caption, className: "data calls" });
}
