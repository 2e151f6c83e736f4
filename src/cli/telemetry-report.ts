import { PATTERN_TAGS, type PatternTag } from "../telemetry/index.ts";
import { matchesFilter, stateFilter, type ReportFilter, type ReportFilters } from "./report-filter.ts";
import { isAmongSlowest, keepLatest, keepSlowest, MAX_MESSAGE_CHARS, saneDuration, type CallSample } from "./report-samples.ts";
import { addEffectUse, effectFieldsOf, emptyEffectStats, type EffectStats } from "./report-effects.ts";
import { addKnowledgeUse, emptyKnowledgeStats, finishKnowledge, knowledgeFieldsOf, type KnowledgeStats } from "./report-knowledge.ts";
import { boundedName, FoldedNames, keyIn, OTHER } from "./report-other.ts";
import { addToolUse, count, emptyToolStats, toolFieldsOf, type ToolFields, type ToolStats } from "./report-tools.ts";

/** Counts for one group of calls (all calls, one role, one method). */
export interface GroupStats extends ToolStats {
  calls: number;
  errors: number;
  /** Failed calls by error type: at most {@link MAX_KEYS} types, the rest under "(other)". */
  errorTypes: Record<string, number>;
  /** The group's latest failed calls, newest first (at most {@link MAX_GROUP_ERRORS}). */
  latestErrors: CallSample[];
  readsHistory: number;
  patterns: Partial<Record<PatternTag, number>>;
  /** Calls by history scan (`history_scan`): at most {@link MAX_KEYS} kinds, the rest under "(other)". */
  scans: Record<string, number>;
  /** Calls served by a kept program, with no provider request. */
  reused: number;
  /** Where the calls' programs came from (`program_source`: generated, reused, repaired); calls without a program are not counted. */
  programSources: Record<string, number>;
  /** Calls whose program was repaired after a failed attempt's feedback and that ended ok. */
  repairedOk: number;
  /** Calls in which a kept program ran and failed by its own mistake (the call then asked for a repair). */
  keptProgramFailed: number;
  /** Calls after which the kept program that ran was dropped, having failed too often in a row. */
  keptProgramDropped: number;
  /** Calls whose new program worked and was kept for reuse. */
  keptNew: number;
  /** Calls whose new program worked and was not kept (the reasons are in the report's `notKeptReasons`). */
  notKept: number;
  /** Provider requests (generation attempts) made. */
  requests: number;
  /** Tokens the provider reported; calls whose lines carry none are counted in `callsWithoutTokens`. */
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens read from a prompt cache (part of `promptTokens`), as the provider reported them. */
  cachedTokens: number;
  callsWithoutTokens: number;
  /** What the calls with a known cost (`cost_usd`, by their agents' pricing) cost in all, in US dollars, and how many they were. */
  costUsd: number;
  callsWithCost: number;
  /** The calls' knowledge: sources, retrievals that found nothing, failures, passages, time (all zero and empty when no call had any). */
  knowledge: KnowledgeStats;
  /** The calls' effects: writes by final state, failed calls by onFailure rule, failed calls that left effects in place. */
  effects: EffectStats;
}

/** What `improv telemetry` reports (`--json` prints exactly this). */
export interface TelemetryReport {
  readonly lines: number;
  readonly calls: number;
  /** The filters given, and how many calls they left out. */
  readonly filters: ReportFilters;
  readonly filteredOut: number;
  readonly malformed: { readonly count: number; readonly examples: readonly string[] };
  readonly firstTimestamp: string | null;
  readonly lastTimestamp: string | null;
  readonly overall: GroupStats;
  /** At most {@link MAX_ROLES} roles, and the calls of the others under "(other)". */
  readonly byRole: Record<string, GroupStats>;
  /** At most {@link MAX_METHODS} methods (`role.method`), and the calls of the others under "(other)". */
  readonly byMethod: Record<string, GroupStats>;
  /** How many distinct names of each kind were counted under "(other)", over all calls (up to 500,000: a count there means at least that many). */
  readonly folded: { readonly roles: number; readonly methods: number; readonly errorTypes: number; readonly scans: number; readonly notKeptReasons: number };
  /** Calls and errors over time, in at most {@link MAX_TIMELINE_POINTS} equal steps. */
  readonly timeline: { readonly stepSeconds: number; readonly points: readonly { readonly start: string; readonly calls: number; readonly errors: number }[] };
  /** How many calls took up to each bound (`upToMs`; the last bound is null: longer). */
  readonly latency: readonly { readonly upToMs: number | null; readonly calls: number }[];
  /** The slowest calls, slowest first (at most {@link MAX_SLOWEST}). */
  readonly slowestCalls: readonly CallSample[];
  /** The latest failed calls, newest first (at most {@link MAX_FAILING}). */
  readonly failingCalls: readonly CallSample[];
  /** Why programs that worked were not kept for reuse, and how often (quoted samples elided; at most {@link MAX_REASONS} reasons, the rest under "(other)"). */
  readonly notKeptReasons: Record<string, number>;
}

/** Most points of the timeline; seconds or minutes are merged into longer steps past it. */
const MAX_TIMELINE_POINTS = 60;
/** Steps of the timeline, shortest first, for spans short enough to count by the second. @unit s */
const SECOND_STEPS = [1, 2, 5, 10, 15, 30, 60] as const;
/** Distinct seconds counted before the timeline is kept by the minute only (a long log). */
const MAX_SECONDS_KEPT = 3_600;
/** Upper bounds of the latency histogram's bins. @unit ms */
export const LATENCY_BOUNDS_MS = [0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000] as const;
/** Malformed lines listed by location in the report; the rest are only counted. */
const MAX_MALFORMED_EXAMPLES = 20;
export const MAX_SLOWEST = 10;
export const MAX_FAILING = 20;
const MAX_GROUP_ERRORS = 3;
const MAX_REASONS = 20;
const MAX_REASON_CHARS = 300;
/** Roles and methods kept apart; the calls of further ones are counted under "(other)". */
const MAX_ROLES = 200;
const MAX_METHODS = 500;
/** Error types and history scans kept apart per group; the rest are counted under "(other)". */
const MAX_KEYS = 50;
/**
 * Most tokens of each kind one line may claim, and most provider requests: far past any call's
 * (every attempt of a long call at a million tokens of context). A larger count is a corrupt
 * line, and counting it would drown every real figure, as a cost past a million dollars would.
 */
const MAX_SANE_TOKENS = 100_000_000;
const MAX_SANE_REQUESTS = 1_000;

function emptyStats(): GroupStats {
  return {
    calls: 0,
    errors: 0,
    errorTypes: {},
    latestErrors: [],
    readsHistory: 0,
    patterns: {},
    scans: {},
    reused: 0,
    programSources: {},
    repairedOk: 0,
    keptProgramFailed: 0,
    keptProgramDropped: 0,
    keptNew: 0,
    notKept: 0,
    requests: 0,
    promptTokens: 0,
    completionTokens: 0,
    cachedTokens: 0,
    callsWithoutTokens: 0,
    costUsd: 0,
    callsWithCost: 0,
    knowledge: emptyKnowledgeStats(),
    effects: emptyEffectStats(),
    ...emptyToolStats(),
  };
}

/** Accumulates call log lines into a {@link TelemetryReport}. */
export class TelemetryAggregator {
  #lines = 0;
  #filteredOut = 0;
  #malformed = 0;
  readonly #examples: string[] = [];
  /** The earliest and latest times of the calls. @unit ms since the epoch */
  #first: number | null = null;
  #last: number | null = null;
  readonly #overall = emptyStats();
  readonly #byRole = new Map<string, GroupStats>();
  readonly #byMethod = new Map<string, GroupStats>();
  /** Calls and errors per minute since the epoch. */
  readonly #minutes = new Map<number, { calls: number; errors: number }>();
  /** The same per second, while the log spans few enough of them (undefined past that). */
  #seconds: Map<number, { calls: number; errors: number }> | undefined = new Map();
  readonly #latency: number[] = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
  readonly #slowest: CallSample[] = [];
  readonly #failing: CallSample[] = [];
  readonly #notKeptReasons: Record<string, number> = {};
  readonly #folded = { roles: new FoldedNames(), methods: new FoldedNames(), errorTypes: new FoldedNames(), scans: new FoldedNames(), notKeptReasons: new FoldedNames() };
  readonly #filter: ReportFilter;

  readonly #onCall: ((line: Record<string, unknown>, where: string) => void) | undefined;

  /** `onCall` is given each call line the report covers (the filters' matches) and where it was read, for the call explorer. */
  constructor(filter: ReportFilter = {}, onCall?: (line: Record<string, unknown>, where: string) => void) {
    this.#filter = filter;
    this.#onCall = onCall;
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
    this.#addParsed(line, where);
  }

  /** Takes one line already parsed (a store's record as its log line, say). */
  addObject(line: Record<string, unknown>, where: string): void {
    this.#lines += 1;
    this.#addParsed(line, where);
  }

  /** Counts what is no call line among the malformed ones: a store's record of the wrong shape, say; `where` locates it. */
  addMalformed(where: string, why: string): void {
    this.#recordMalformed(where, why);
  }

  #addParsed(line: unknown, where: string): void {
    if (typeof line !== "object" || line === null || typeof (line as { call_id?: unknown }).call_id !== "string" || typeof (line as { outcome_status?: unknown }).outcome_status !== "string") {
      this.#recordMalformed(where, "not an improv call line");
      return;
    }
    this.#addCall(line as Record<string, unknown>, where);
  }

  #recordMalformed(where: string, why: string): void {
    this.#malformed += 1;
    if (this.#examples.length < MAX_MALFORMED_EXAMPLES) this.#examples.push(`${where} (${why})`);
  }

  #addCall(line: Record<string, unknown>, where: string): void {
    // A timestamp that does not parse is no time: it bounds no period, and its call sorts as the oldest.
    const time = typeof line.timestamp === "string" ? Date.parse(line.timestamp) : Number.NaN;
    const fullRole = typeof line.role === "string" ? line.role : "(unknown)";
    const fullMethod = typeof line.method === "string" ? line.method : "(unknown)";
    if (!matchesFilter(this.#filter, time, fullRole, fullMethod)) {
      this.#filteredOut += 1;
      return;
    }
    this.#onCall?.(line, where);
    // The filters see the whole names; the report keeps them cut to size.
    const role = boundedName(fullRole);
    const method = boundedName(fullMethod);
    if (!Number.isNaN(time)) {
      if (this.#first === null || time < this.#first) this.#first = time;
      if (this.#last === null || time > this.#last) this.#last = time;
    }
    const tools = toolFieldsOf(line);
    const knowledge = knowledgeFieldsOf(line);
    const effects = effectFieldsOf(line);
    const failed = line.outcome_status !== "ok";
    const duration = saneDuration(line.duration_ms);
    const sample = failed || (duration !== null && isAmongSlowest(this.#slowest, duration, MAX_SLOWEST)) ? sampleOf(line, time, role, method, duration, tools) : undefined;
    const groups = [groupOf(this.#byRole, role, MAX_ROLES, this.#folded.roles), groupOf(this.#byMethod, `${role}.${method}`, MAX_METHODS, this.#folded.methods)];
    for (const stats of [this.#overall, ...groups]) {
      // The report says how many names went under "(other)" over all calls; a group's own are not counted.
      add(stats, line, stats === this.#overall ? this.#folded : undefined);
      addToolUse(stats, tools);
      addKnowledgeUse(stats.knowledge, knowledge);
      addEffectUse(stats.effects, effects);
      if (failed && sample && stats !== this.#overall) keepLatest(stats.latestErrors, sample, MAX_GROUP_ERRORS);
    }
    if (sample && failed) keepLatest(this.#failing, sample, MAX_FAILING);
    if (sample && duration !== null) keepSlowest(this.#slowest, sample, MAX_SLOWEST);
    this.#addReason(line);
    if (!Number.isNaN(time)) {
      countAt(this.#minutes, Math.floor(time / 60_000), failed);
      if (this.#seconds !== undefined) {
        countAt(this.#seconds, Math.floor(time / 1_000), failed);
        if (this.#seconds.size > MAX_SECONDS_KEPT) this.#seconds = undefined;
      }
    }
    if (duration !== null) {
      const bin = LATENCY_BOUNDS_MS.findIndex((bound) => duration <= bound);
      this.#latency[bin === -1 ? LATENCY_BOUNDS_MS.length : bin]! += 1;
    }
  }

  #addReason(line: Record<string, unknown>): void {
    const decision = line.reuse_decision as { kept?: unknown; reason?: unknown } | null | undefined;
    if (decision?.kept !== false || typeof decision.reason !== "string") return;
    const reason = reasonKey(decision.reason);
    if (countIn(this.#notKeptReasons, reason, MAX_REASONS)) this.#folded.notKeptReasons.add(reason);
  }

  /**
   * Calls and errors over time, in at most {@link MAX_TIMELINE_POINTS} steps: by the second
   * (1, 2, 5, … 30 s) when the log spans a minute or less of them, else by the minute, merged.
   */
  #timeline(): TelemetryReport["timeline"] {
    if (this.#minutes.size === 0) return { stepSeconds: 60, points: [] };
    const seconds = this.#seconds;
    if (seconds !== undefined) {
      const [first, last] = bounds(seconds);
      const step = SECOND_STEPS.find((candidate) => (last - first + 1) / candidate <= MAX_TIMELINE_POINTS);
      if (step !== undefined && step < 60) return timelineOf(seconds, first, last, step, 1_000);
    }
    const [first, last] = bounds(this.#minutes);
    return timelineOf(this.#minutes, first, last, Math.max(1, Math.ceil((last - first + 1) / MAX_TIMELINE_POINTS)), 60_000);
  }

  report(): TelemetryReport {
    for (const stats of [this.#overall, ...this.#byRole.values(), ...this.#byMethod.values()]) finishKnowledge(stats.knowledge);
    return {
      lines: this.#lines,
      calls: this.#overall.calls,
      filters: stateFilter(this.#filter),
      filteredOut: this.#filteredOut,
      malformed: { count: this.#malformed, examples: [...this.#examples] },
      firstTimestamp: this.#first === null ? null : new Date(this.#first).toISOString(),
      lastTimestamp: this.#last === null ? null : new Date(this.#last).toISOString(),
      overall: this.#overall,
      byRole: Object.fromEntries(this.#byRole),
      byMethod: Object.fromEntries(this.#byMethod),
      folded: {
        roles: this.#folded.roles.count,
        methods: this.#folded.methods.count,
        errorTypes: this.#folded.errorTypes.count,
        scans: this.#folded.scans.count,
        notKeptReasons: this.#folded.notKeptReasons.count,
      },
      timeline: this.#timeline(),
      latency: this.#latency.map((calls, index) => ({ upToMs: LATENCY_BOUNDS_MS[index] ?? null, calls })),
      slowestCalls: [...this.#slowest],
      failingCalls: [...this.#failing],
      notKeptReasons: { ...this.#notKeptReasons },
    };
  }
}

/** The group of the calls of `name`: its own while fewer than `limit` names have one, else "(other)" (and the name is counted as folded there). */
function groupOf(groups: Map<string, GroupStats>, name: string, limit: number, folded: FoldedNames): GroupStats {
  const key = groups.has(name) || groups.size - (groups.has(OTHER) ? 1 : 0) < limit ? name : OTHER;
  if (key !== name) folded.add(name);
  let stats = groups.get(key);
  if (!stats) {
    stats = emptyStats();
    groups.set(key, stats);
  }
  return stats;
}

function add(stats: GroupStats, line: Record<string, unknown>, folded?: { readonly errorTypes: FoldedNames; readonly scans: FoldedNames }): void {
  stats.calls += 1;
  const ok = line.outcome_status === "ok";
  if (!ok) {
    stats.errors += 1;
    const type = typeof line.error_type === "string" ? boundedName(line.error_type) : "(unknown)";
    if (countIn(stats.errorTypes, type, MAX_KEYS)) folded?.errorTypes.add(type);
  }
  if (line.history_access_detected === true) stats.readsHistory += 1;
  if (line.artifact_hit === true) stats.reused += 1;
  addProgramFate(stats, line, ok);
  stats.requests += requestsOf(line) ?? 0;
  const tokens = tokensOf(line);
  if (tokens === undefined) stats.callsWithoutTokens += 1;
  stats.promptTokens += tokens?.prompt ?? 0;
  stats.completionTokens += tokens?.completion ?? 0;
  stats.cachedTokens += tokens?.cached ?? 0;
  const cost = line.cost_usd;
  // A line may claim no more than a million dollars: past that it is corrupt, and would drown every real figure.
  if (typeof cost === "number" && Number.isFinite(cost) && cost >= 0 && cost <= 1_000_000) {
    stats.costUsd += cost;
    stats.callsWithCost += 1;
  }
  if (Array.isArray(line.history_query_patterns)) {
    for (const tag of line.history_query_patterns) {
      if ((PATTERN_TAGS as readonly unknown[]).includes(tag)) stats.patterns[tag as PatternTag] = (stats.patterns[tag as PatternTag] ?? 0) + 1;
    }
  }
  const scan = typeof line.history_scan === "string" ? boundedName(line.history_scan) : "(unknown)";
  if (countIn(stats.scans, scan, MAX_KEYS)) folded?.scans.add(scan);
}

/** The provider requests a line claims (`generation_attempt`), when sane. */
function requestsOf(line: Record<string, unknown>): number | undefined {
  const requests = count(line.generation_attempt);
  return requests !== undefined && requests <= MAX_SANE_REQUESTS ? requests : undefined;
}

/** The tokens a line reports; undefined when it reports none, or any count past {@link MAX_SANE_TOKENS} (then its whole usage report is suspect). */
function tokensOf(line: Record<string, unknown>): { prompt: number; completion: number; cached: number } | undefined {
  const [prompt, completion, cached] = [count(line.prompt_tokens), count(line.completion_tokens), count(line.cached_tokens)];
  if (prompt === undefined && completion === undefined) return undefined;
  if ([prompt, completion, cached].some((tokens) => tokens !== undefined && tokens > MAX_SANE_TOKENS)) return undefined;
  return { prompt: prompt ?? 0, completion: completion ?? 0, cached: cached ?? 0 };
}

/**
 * Counts one more under `name`, or under "(other)" once `limit` names have counts; returns
 * whether it went there. `name` is read from a line: `__proto__` would set the object's
 * prototype, and "(other)" would fill the counts before their time, so both count as unknown.
 */
function countIn(counts: Record<string, number>, name: string, limit: number): boolean {
  const safe = name === "__proto__" || name === OTHER ? "(unknown)" : name;
  const key = keyIn(counts, safe, limit);
  // Own counts only: a key such as "constructor" must not start from what Object.prototype has.
  counts[key] = (Object.hasOwn(counts, key) ? (counts[key] as number) : 0) + 1;
  return key !== safe;
}

const PROGRAM_SOURCES = new Set(["generated", "reused", "repaired"]);

/** Where the call's program came from, whether a kept program failed or was dropped, and whether a new one was kept. */
function addProgramFate(stats: GroupStats, line: Record<string, unknown>, ok: boolean): void {
  const source = typeof line.program_source === "string" && PROGRAM_SOURCES.has(line.program_source) ? line.program_source : undefined;
  if (source !== undefined) stats.programSources[source] = (stats.programSources[source] ?? 0) + 1;
  if (source === "repaired" && ok) stats.repairedOk += 1;
  // A kept program's run is attempt 0.
  if (Array.isArray(line.attempt_errors) && line.attempt_errors.some((error) => (error as { attempt?: unknown } | null)?.attempt === 0)) stats.keptProgramFailed += 1;
  if (line.kept_program_dropped === true) stats.keptProgramDropped += 1;
  const decision = line.reuse_decision as { kept?: unknown } | null | undefined;
  if (decision?.kept === true) stats.keptNew += 1;
  else if (decision?.kept === false) stats.notKept += 1;
}

function sampleOf(line: Record<string, unknown>, time: number, role: string, method: string, durationMs: number | null, tools: ToolFields): CallSample {
  const message = typeof line.error_message === "string" ? line.error_message : null;
  return {
    callId: boundedName(line.call_id as string),
    timestamp: Number.isNaN(time) ? null : new Date(time).toISOString(),
    role,
    method,
    durationMs,
    status: line.outcome_status as string,
    errorType: typeof line.error_type === "string" ? boundedName(line.error_type) : null,
    errorMessage: message === null ? null : message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS)}…` : message,
    attempts: requestsOf(line) ?? null,
    programSource: typeof line.program_source === "string" ? boundedName(line.program_source) : null,
    toolCalls: tools.calls,
    toolErrors: tools.errors,
  };
}

/** A not-kept reason without the quoted sample it may carry, so calls with the same reason count together. */
function reasonKey(reason: string): string {
  const general = reason.replace(/\("(?:[^"\\]|\\.)*"\)/g, '("…")');
  return general.length > MAX_REASON_CHARS ? `${general.slice(0, MAX_REASON_CHARS)}…` : general;
}

type TimeBuckets = Map<number, { calls: number; errors: number }>;

function countAt(buckets: TimeBuckets, at: number, failed: boolean): void {
  const bucket = buckets.get(at) ?? { calls: 0, errors: 0 };
  bucket.calls += 1;
  if (failed) bucket.errors += 1;
  buckets.set(at, bucket);
}

function bounds(buckets: TimeBuckets): [number, number] {
  let first = Infinity;
  let last = -Infinity;
  for (const at of buckets.keys()) {
    first = Math.min(first, at);
    last = Math.max(last, at);
  }
  return [first, last];
}

/** Buckets of `unitMs` each, from `first` to `last`, merged `step` at a time. */
function timelineOf(buckets: TimeBuckets, first: number, last: number, step: number, unitMs: number): TelemetryReport["timeline"] {
  const points = Array.from({ length: Math.ceil((last - first + 1) / step) }, (_, index) => ({ start: new Date((first + index * step) * unitMs).toISOString(), calls: 0, errors: 0 }));
  for (const [at, bucket] of buckets) {
    const point = points[Math.floor((at - first) / step)]!;
    point.calls += bucket.calls;
    point.errors += bucket.errors;
  }
  return { stepSeconds: (step * unitMs) / 1_000, points };
}
