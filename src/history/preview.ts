import type { AgentHistory } from "./agent-history.ts";
import type { HistoryRecord } from "./record.ts";
import { describeType } from "../shared/index.ts";

/** How many of the latest records "relevant" looks through for shared arguments: a fixed window, whatever the history's size. */
const ARGUMENT_WINDOW = 50;

/** A record chosen for the prompt, with why. */
export interface PreviewEntry {
  readonly record: HistoryRecord;
  readonly why: "latest" | "same method" | "shared arguments" | "recent error";
}

/**
 * The records the prompt's history block shows. `latest`: the latest `limit`, oldest first.
 * `relevant`: in this order, as long as there is room in `limit`: the latest record, earlier
 * calls of the same method, calls among the latest {@link ARGUMENT_WINDOW} whose arguments
 * share a word or value with this call's, and recent errors. Each step reads at most a few
 * records through the history's index, so the work depends on the preview, not the history.
 */
export function choosePreview(history: AgentHistory, rule: HistoryPreviewRule, call: { method: string; args: readonly unknown[]; kwargs: Readonly<Record<string, unknown>> }): PreviewEntry[] {
  if (rule.limit === 0 || history.length === 0) return [];
  if (rule.strategy === "latest") return history.latest(rule.limit).map((record) => ({ record, why: "latest" }));
  const chosen = new Map<string, PreviewEntry>();
  const add = (records: readonly HistoryRecord[], why: PreviewEntry["why"]) => {
    for (const record of [...records].reverse()) {
      if (chosen.size >= rule.limit) return;
      if (!chosen.has(record.call_id)) chosen.set(record.call_id, { record, why });
    }
  };
  add(history.latest(1), "latest");
  add(history.query({ method: call.method, last: rule.limit }), "same method");
  const words = wordsOf([call.args, call.kwargs]);
  if (words.size > 0 && chosen.size < rule.limit) {
    add(
      history.latest(ARGUMENT_WINDOW).filter((record) => [...wordsOf([record.args, record.kwargs])].some((word) => words.has(word))),
      "shared arguments",
    );
  }
  add(history.query({ status: "error", last: rule.limit }), "recent error");
  return [...chosen.values()];
}

/** The words (3+ letters, lower case) and the numbers and other scalars in a call's arguments. */
export function wordsOf(values: unknown, found = new Set<string>(), budget = { left: 200 }): Set<string> {
  if (budget.left <= 0) return found;
  budget.left -= 1;
  if (typeof values === "string") {
    for (const word of values.toLowerCase().match(/[\p{L}\p{N}_]{3,}/gu) ?? []) found.add(word);
  } else if (typeof values === "number" || typeof values === "boolean" || typeof values === "bigint") {
    found.add(String(values));
  } else if (typeof values === "object" && values !== null) {
    for (const value of Array.isArray(values) ? values : Object.values(values)) wordsOf(value, found, budget);
  }
  return found;
}

/** How the prompt's history block is chosen. */
export interface HistoryPreviewRule {
  readonly limit: number;
  readonly strategy: "latest" | "relevant";
  readonly maxChars: number;
}

const PREVIEW_SHAPE = 'Option "historyPreview" must be { limit?, strategy?: "latest" | "relevant", maxChars? }.';

/** The option as given. */
export type HistoryPreviewOption = { readonly limit?: number; readonly strategy?: "latest" | "relevant"; readonly maxChars?: number };

/** The `historyPreview` option read over `base`, with `shorthand` (`historyPreviewLimit`) for its limit (`historyPreview.limit` wins). */
export function readHistoryPreview(value: HistoryPreviewOption | undefined, shorthand: number | undefined, base: HistoryPreviewRule): HistoryPreviewRule {
  if (value === undefined) return shorthand === undefined ? base : { ...base, limit: shorthand };
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new TypeError(`${PREVIEW_SHAPE} Got ${describeType(value)}.`);
  for (const key of Object.keys(value)) if (!["limit", "strategy", "maxChars"].includes(key)) throw new TypeError(`${PREVIEW_SHAPE} "${key}" is not one of them.`);
  if (value.strategy !== undefined && value.strategy !== "latest" && value.strategy !== "relevant") throw new TypeError(`${PREVIEW_SHAPE} Got strategy: ${JSON.stringify(value.strategy)}.`);
  const count = (name: "limit" | "maxChars", minimum: number) => {
    const field = value[name];
    if (field !== undefined && !(Number.isSafeInteger(field) && field >= minimum)) throw new TypeError(`${PREVIEW_SHAPE} ${name} must be a whole number ≥ ${minimum}; got ${JSON.stringify(field)}.`);
    return field;
  };
  return {
    limit: count("limit", 0) ?? shorthand ?? base.limit,
    strategy: value.strategy ?? base.strategy,
    maxChars: count("maxChars", 100) ?? base.maxChars,
  };
}
