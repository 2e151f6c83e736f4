/**
 * Effects in a telemetry report: the `effects`, `on_failure` and `on_failure_error`
 * fields of a log line, read only when sane, and their sums per group of calls: how many writes
 * ended in each state, which `onFailure` rule failed calls met, and how many failed calls left
 * effects in place (applied, unknown, or an undo that failed).
 */
import { EFFECT_STATES, type EffectState, noEffects } from "../tools/index.ts";
import { count } from "./report-tools.ts";

const RULES = ["keep", "revert", "function"] as const;
type Rule = (typeof RULES)[number];

/** Most writes one line may claim in a state: `maxWriteCalls` is at most 100,000. */
const MAX_SANE_EFFECTS = 100_000;

/** The effect figures of a group of calls. */
export interface EffectStats {
  /** Calls whose programs' writes reached a tool (or sent a fetch that may write). */
  callsWithEffects: number;
  /** Writes by final state, summed. */
  states: Record<EffectState, number>;
  /** Failed calls with effects, by the `onFailure` rule they met. */
  onFailure: Record<Rule, number>;
  /** Failed calls that left effects in place: applied, unknown, or whose undo failed. */
  failedLeftEffects: number;
  /** Calls whose function given as `onFailure` threw or did not settle. */
  handlerErrors: number;
}

/** The effect fields of one line, each kept only when sane (older lines have none). */
export interface EffectFields {
  readonly states: Readonly<Record<EffectState, number>>;
  readonly rule: Rule | undefined;
  readonly failed: boolean;
  readonly handlerError: boolean;
}

export function effectFieldsOf(line: Record<string, unknown>): EffectFields {
  const given = typeof line.effects === "object" && line.effects !== null && !Array.isArray(line.effects) ? (line.effects as Record<string, unknown>) : {};
  const states = Object.fromEntries(EFFECT_STATES.map((state) => {
    const value = count(given[state]);
    return [state, value !== undefined && value <= MAX_SANE_EFFECTS ? value : 0];
  })) as Record<EffectState, number>;
  const rule = RULES.find((name) => name === line.on_failure);
  return { states, rule, failed: line.outcome_status !== "ok", handlerError: typeof line.on_failure_error === "string" && line.on_failure_error !== "" };
}

export function emptyEffectStats(): EffectStats {
  return {
    callsWithEffects: 0,
    states: noEffects(),
    onFailure: { keep: 0, revert: 0, function: 0 },
    failedLeftEffects: 0,
    handlerErrors: 0,
  };
}

export function addEffectUse(stats: EffectStats, fields: EffectFields): void {
  if (fields.handlerError) stats.handlerErrors += 1;
  const total = EFFECT_STATES.reduce((sum, state) => sum + fields.states[state], 0);
  if (total === 0) return;
  stats.callsWithEffects += 1;
  for (const state of EFFECT_STATES) stats.states[state] += fields.states[state];
  if (!fields.failed) return;
  if (fields.rule !== undefined) stats.onFailure[fields.rule] += 1;
  if (fields.states.applied + fields.states.unknown + fields.states.revert_failed > 0) stats.failedLeftEffects += 1;
}

/** Whether a group's calls had effects. */
export function hasEffects(stats: EffectStats): boolean {
  return stats.callsWithEffects > 0 || stats.handlerErrors > 0;
}

/** The report's text section on effects. */
export function effectLines(stats: EffectStats, calls: number): string[] {
  const { states, onFailure } = stats;
  const share = calls === 0 ? "0%" : `${((stats.callsWithEffects / calls) * 100).toFixed(1)}%`;
  return [
    "effects (writes that reached a tool, by final state)",
    `  calls with effects    ${stats.callsWithEffects}  (${share} of calls)`,
    `  states                ${EFFECT_STATES.map((state) => `${state} ${states[state]}`).join(", ")}`,
    `  failed calls by rule  ${RULES.map((rule) => `${rule} ${onFailure[rule]}`).join(", ")}`,
    `  failed, effects left  ${stats.failedLeftEffects}  (failed calls with effects applied, unknown or whose undo failed)`,
    `  onFailure errors      ${stats.handlerErrors}`,
  ];
}
