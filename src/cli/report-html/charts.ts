/**
 * The report's charts, as inline SVG. Every chart states its axes and values in text on the
 * page (tick labels, bin edges, a value beside each bar), so nothing needs hovering; the
 * `<title>` of each bar repeats its figures for screen readers. Each chart says how many data
 * points it drew (`data-points`).
 */
import { escape, formatTick, niceCeiling } from "./markup.ts";

/** One bar: stacked parts, in the order of the chart's legend. */
export interface Bar {
  readonly label: string;
  readonly parts: readonly number[];
}

/** The series' colours; the second is the one for failures. */
export const COLORS = ["#3b6fb6", "#d1495b", "#66a182", "#edae49", "#8d6a9f"];

const WIDTH = 720;

/** Horizontal bars, one row per named group, each labelled with its total. */
export function rowChart(id: string, title: string, legend: readonly string[], bars: readonly Bar[], note: string, format: (value: number) => string = String): string {
  const max = largestTotal(bars);
  const rowHeight = 22;
  const labelWidth = 240;
  const rows = bars.map((bar, index) => {
    let x = labelWidth;
    const y = index * rowHeight;
    const segments = bar.parts
      .map((part, series) => {
        const w = (part / max) * (WIDTH - labelWidth - 90);
        const rect = part > 0 ? `<rect x="${x.toFixed(1)}" y="${y + 3}" width="${Math.max(1, w).toFixed(1)}" height="${rowHeight - 6}" fill="${COLORS[series % COLORS.length]}"><title>${escape(legend[series] ?? "")}: ${format(part)}</title></rect>` : "";
        x += w;
        return rect;
      })
      .join("");
    const parts = bar.parts.length > 1 && bar.parts.filter((part) => part > 0).length > 1 ? ` (${bar.parts.map(format).join(" + ")})` : "";
    return `<text x="${labelWidth - 6}" y="${y + 15}" text-anchor="end" class="label">${escape(bar.label)}</text>${segments}<text x="${(x + 4).toFixed(1)}" y="${y + 15}" class="value">${escape(format(total(bar)))}${escape(parts)}</text>`;
  });
  const svg = `<svg viewBox="0 0 ${WIDTH} ${Math.max(rowHeight, bars.length * rowHeight)}" role="img" aria-label="${escape(title)}">${rows.join("")}</svg>`;
  return figure(id, title, legend, bars, svg, note);
}

/**
 * Vertical bars over an axis, with a y axis of round ticks and a label under every bar
 * (`labelEvery` > 1 labels only every so many bars, for long time series). Non-zero bars carry
 * their total above them when there is room.
 */
export function columnChart(id: string, title: string, legend: readonly string[], bars: readonly Bar[], note: string, axis: { readonly x: string; readonly y: string; readonly labelEvery?: number }): string {
  const left = 48;
  const top = 16;
  const plotHeight = 200;
  const plotWidth = WIDTH - left - 8;
  const max = niceCeiling(largestTotal(bars));
  const step = bars.length === 0 ? plotWidth : plotWidth / bars.length;
  const base = top + plotHeight;
  const ticks = [0, max / 2, max]
    .map((value) => {
      const y = base - (value / max) * plotHeight;
      return `<line x1="${left}" y1="${y.toFixed(1)}" x2="${WIDTH - 8}" y2="${y.toFixed(1)}" class="grid"/><text x="${left - 6}" y="${(y + 4).toFixed(1)}" text-anchor="end" class="axis tick">${formatTick(value)}</text>`;
    })
    .join("");
  const every = axis.labelEvery ?? 1;
  const columns = bars.map((bar, index) => {
    const x = left + index * step;
    let y = base;
    const rects = bar.parts
      .map((part, series) => {
        const h = (part / max) * plotHeight;
        y -= h;
        return part > 0 ? `<rect x="${(x + 1).toFixed(1)}" y="${y.toFixed(1)}" width="${Math.max(1, step - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${COLORS[series % COLORS.length]}"><title>${escape(bar.label)}: ${legend.map((name, i) => `${escape(name)} ${bar.parts[i] ?? 0}`).join(", ")}</title></rect>` : "";
      })
      .join("");
    const sum = total(bar);
    const value = sum > 0 && step >= 14 ? `<text x="${(x + step / 2).toFixed(1)}" y="${(y - 3).toFixed(1)}" text-anchor="middle" class="value">${sum}</text>` : "";
    const label = index % every === 0 ? `<text x="${(x + step / 2).toFixed(1)}" y="${base + 14}" text-anchor="middle" class="axis xlabel">${escape(bar.label)}</text>` : "";
    return rects + value + label;
  });
  const height = base + 40;
  const svg = `<svg viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="${escape(title)}">${ticks}${columns.join("")}<line x1="${left}" y1="${base}" x2="${WIDTH - 8}" y2="${base}" class="baseline"/><text x="${left + plotWidth / 2}" y="${height - 4}" text-anchor="middle" class="axis title">${escape(axis.x)}</text><text x="12" y="${top + plotHeight / 2}" text-anchor="middle" class="axis title" transform="rotate(-90 12 ${top + plotHeight / 2})">${escape(axis.y)}</text></svg>`;
  return figure(id, title, legend, bars, svg, note);
}

function figure(id: string, title: string, legend: readonly string[], bars: readonly Bar[], svg: string, note: string): string {
  const points = bars.filter((bar) => bar.parts.some((part) => part > 0)).length;
  const key = legend.length > 1 ? `<p class="legend">${legend.map((name, index) => `<span style="--c:${COLORS[index % COLORS.length]}">${escape(name)}</span>`).join(" ")}</p>` : "";
  const empty = points === 0 ? `<p class="empty">No data in these logs.</p>` : "";
  return `<figure class="chart" id="${id}" data-chart="${id}" data-points="${points}"><figcaption>${escape(title)}</figcaption>${key}${empty}${svg}<p class="note">${escape(note)}</p></figure>`;
}

function total(bar: Bar): number {
  return bar.parts.reduce((sum, part) => sum + part, 0);
}

/** The largest bar's total, at least 1 (a loop: spreading many bars into Math.max overflows the stack). */
function largestTotal(bars: readonly Bar[]): number {
  let largest = 1;
  for (const bar of bars) largest = Math.max(largest, total(bar));
  return largest;
}
