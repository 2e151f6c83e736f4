/** Small pieces of the HTML report: escaping, and numbers as the page shows them. */
import { terminalText } from "../../shared/index.ts";

/** Text made safe for HTML content and attribute values, with the characters that hide or reorder text shown as `\u{…}`. */
export const escape = (text: string) => terminalText(text).replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

export const share = (part: number, whole: number) => (whole === 0 ? 0 : part / whole);

export const asPercent = (value: number) => `${(value * 100).toFixed(1)}%`;

/** `part (12.5%)` of `whole`. */
export const countAndShare = (part: number, whole: number) => `${part} (${asPercent(share(part, whole))})`;

/** A duration: `0.42 ms`, `12.3 ms`, `1.25 s`. */
export function formatMs(ms: number | null): string {
  if (ms === null) return "—";
  if (ms >= 1_000) return `${(ms / 1_000).toFixed(2)} s`;
  return `${ms < 10 ? ms.toFixed(2) : ms.toFixed(1)} ms`;
}

/** A bound of the duration histogram, short enough to sit under its bar: `0.5`, `20`, `1 s`. */
export function formatBound(ms: number): string {
  return ms >= 1_000 ? `${ms / 1_000} s` : String(ms);
}

/** An ISO timestamp as `2025-01-31 12:00:05` (UTC). */
export function formatTime(timestamp: string | null): string {
  return timestamp === null ? "—" : timestamp.replace("T", " ").replace(/\.\d+Z$|Z$/, "");
}

/** A round number at or above `value` (1, 2 or 5 times a power of ten), for an axis's top. */
export function niceCeiling(value: number): number {
  if (value <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

/** Numbers on an axis: whole, or with one decimal under 10. */
export function formatTick(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

/** A section of the page: a heading the table of contents links to, a line saying what it answers, and its charts and tables. */
export function section(id: string, title: string, intro: string, ...parts: string[]): string {
  return `<section id="${id}" data-section="${id}"><h2>${escape(title)}</h2><p class="intro">${escape(intro)}</p>\n${parts.join("\n")}\n</section>`;
}

/** The groups a chart draws: the most called `limit` of them. */
export function busiest<T extends { calls: number }>(groups: Record<string, T>, limit = 20): [string, T][] {
  return Object.entries(groups)
    .sort((a, b) => b[1].calls - a[1].calls)
    .slice(0, limit);
}
