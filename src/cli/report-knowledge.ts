/**
 * Knowledge in a telemetry report: the knowledge fields of a log line, read only when sane, and
 * their sums per group of calls: which sources the calls had, how often a retrieval found nothing
 * or a source failed, how many passages were retrieved, and how long gathering them took.
 */
import { count } from "./report-tools.ts";

/** One knowledge source's use within a group of calls. */
export interface KnowledgeSourceUse {
  /** Calls whose agent had the source (`knowledge_sources`). */
  calls: number;
  /** Of those, calls for which its retrieval found nothing (`knowledge_empty`; never a state or literal source). */
  empty: number;
  /** `empty` as a share of `calls`, 0 to 1. */
  emptyShare: number;
  /** Of those, calls in which it failed (`knowledge_failed`). */
  failed: number;
}

/** The knowledge figures of a group of calls. */
export interface KnowledgeStats {
  /** Calls whose agent had knowledge sources (a non-empty `knowledge_sources`). */
  callsWithKnowledge: number;
  /** Passages retrieved in all (`retrieved_count`), over the calls with knowledge. */
  retrieved: number;
  /** `retrieved` per call with knowledge; 0 when none had any. */
  retrievedPerCall: number;
  /**
   * The median and 95th percentile (nearest rank) of `knowledge_ms` over the calls with knowledge;
   * null when none had any. Exact up to {@link EXACT_DURATIONS} calls a group, within 1% past that. @unit ms
   */
  msP50: number | null;
  msP95: number | null;
  /** Calls that ended with error type `knowledge`: a source that is not optional failed. */
  endedByKnowledge: number;
  /** Use of each source by name: at most {@link MAX_SOURCE_NAMES} names, the rest under {@link OTHER_SOURCES}. */
  sources: Record<string, KnowledgeSourceUse>;
}

/** Source names kept apart per group; the others are counted under {@link OTHER_SOURCES}. */
const MAX_SOURCE_NAMES = 50;
/** Where sources past the first {@link MAX_SOURCE_NAMES} of a group are counted (never a source's name). */
const OTHER_SOURCES = "(other)";
/** Entries of a line's source name list read; an agent has at most 20 sources. */
const MAX_SOURCE_NAMES_READ = 100;
/** A source's name, as `fromState`, `fromRetrieval` and `literal` accept it (defaults such as `retrieval-1` included). */
const SOURCE_NAME = /^[A-Za-z_][\w.-]{0,63}$/;
/**
 * Most passages one line may claim. An agent has at most 20 sources of at most 100 passages; a
 * far larger count is a corrupt line, and counting it would drown every real figure.
 */
const MAX_SANE_RETRIEVED = 100_000;
/** Most time gathering knowledge one line may claim: a week, far past any call's deadline. @unit ms */
const MAX_SANE_KNOWLEDGE_MS = 7 * 24 * 3_600_000;
/** Durations a group keeps exactly; past this many it keeps them in buckets 2% wide. */
export const EXACT_DURATIONS = 2_048;

/** The knowledge fields of one line, each kept only when sane (older lines have none: no knowledge). */
export interface KnowledgeFields {
  /** The distinct sources' names; empty for a call without knowledge, an older line, or a list that is not one. */
  readonly sources: readonly string[];
  /** Of `sources`, the retrievals that found nothing. */
  readonly empty: readonly string[];
  /** Of `sources`, those that failed. */
  readonly failed: readonly string[];
  /** Passages retrieved; 0 without sources or a sane count. */
  readonly retrieved: number;
  /** Time gathering the knowledge; undefined without sources or a sane time. @unit ms */
  readonly ms: number | undefined;
  readonly endedByKnowledge: boolean;
}

export function knowledgeFieldsOf(line: Record<string, unknown>): KnowledgeFields {
  const sources = sourceNames(line.knowledge_sources);
  const endedByKnowledge = line.outcome_status !== "ok" && line.error_type === "knowledge";
  if (sources.length === 0) return { sources, empty: [], failed: [], retrieved: 0, ms: undefined, endedByKnowledge };
  const retrieved = count(line.retrieved_count);
  const ms = line.knowledge_ms;
  return {
    sources,
    // Only names the line also gives as its sources.
    empty: sourceNames(line.knowledge_empty).filter((name) => sources.includes(name)),
    failed: sourceNames(line.knowledge_failed).filter((name) => sources.includes(name)),
    retrieved: retrieved !== undefined && retrieved <= MAX_SANE_RETRIEVED ? retrieved : 0,
    ms: typeof ms === "number" && Number.isFinite(ms) && ms >= 0 && ms <= MAX_SANE_KNOWLEDGE_MS ? ms : undefined,
    endedByKnowledge,
  };
}

/** The distinct source names in a line's list, skipping anything that is not a source's name. */
function sourceNames(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  const names = new Set<string>();
  for (const name of value.slice(0, MAX_SOURCE_NAMES_READ)) {
    // "__proto__" would set an object's prototype.
    if (typeof name === "string" && SOURCE_NAME.test(name) && name !== "__proto__") names.add(name);
  }
  return [...names];
}

export function emptyKnowledgeStats(): KnowledgeStats {
  return { callsWithKnowledge: 0, retrieved: 0, retrievedPerCall: 0, msP50: null, msP95: null, endedByKnowledge: 0, sources: {} };
}

/** Each group's knowledge durations, kept apart from its figures (which `--json` prints as they are). */
const durations = new WeakMap<KnowledgeStats, Durations>();

export function addKnowledgeUse(stats: KnowledgeStats, fields: KnowledgeFields): void {
  if (fields.endedByKnowledge) stats.endedByKnowledge += 1;
  if (fields.sources.length === 0) return;
  stats.callsWithKnowledge += 1;
  stats.retrieved += fields.retrieved;
  if (fields.ms !== undefined) {
    let kept = durations.get(stats);
    if (kept === undefined) {
      kept = new Durations();
      durations.set(stats, kept);
    }
    kept.add(fields.ms);
  }
  for (const use of sourceUses(stats.sources, fields.sources)) use.calls += 1;
  for (const use of sourceUses(stats.sources, fields.empty)) use.empty += 1;
  for (const use of sourceUses(stats.sources, fields.failed)) use.failed += 1;
}

/** Works out a group's derived figures (mean, shares, percentiles) from its sums; the report does it before it is read. */
export function finishKnowledge(stats: KnowledgeStats): void {
  stats.retrievedPerCall = stats.callsWithKnowledge === 0 ? 0 : stats.retrieved / stats.callsWithKnowledge;
  const kept = durations.get(stats);
  stats.msP50 = kept?.percentile(0.5) ?? null;
  stats.msP95 = kept?.percentile(0.95) ?? null;
  for (const use of Object.values(stats.sources)) use.emptyShare = use.calls === 0 ? 0 : use.empty / use.calls;
}

/** The entries to count one call in, each once, even when several names share {@link OTHER_SOURCES}. */
function sourceUses(sources: Record<string, KnowledgeSourceUse>, names: readonly string[]): Set<KnowledgeSourceUse> {
  const uses = new Set<KnowledgeSourceUse>();
  for (const name of names) {
    const named = Object.keys(sources).length - (Object.hasOwn(sources, OTHER_SOURCES) ? 1 : 0);
    const key = Object.hasOwn(sources, name) || named < MAX_SOURCE_NAMES ? name : OTHER_SOURCES;
    if (!Object.hasOwn(sources, key)) sources[key] = { calls: 0, empty: 0, emptyShare: 0, failed: 0 };
    uses.add(sources[key]!);
  }
  return uses;
}

/** Whether a group's calls had knowledge, or ended `knowledge`. */
export function usesKnowledge(stats: KnowledgeStats): boolean {
  return stats.callsWithKnowledge > 0 || stats.endedByKnowledge > 0;
}

/** Groups whose calls had knowledge, most calls with knowledge first. */
export function knowledgeGroups<T extends { calls: number; knowledge: KnowledgeStats }>(groups: Record<string, T>): [string, T][] {
  return Object.entries(groups)
    .filter(([, stats]) => usesKnowledge(stats.knowledge))
    .sort((a, b) => b[1].knowledge.callsWithKnowledge - a[1].knowledge.callsWithKnowledge || b[1].calls - a[1].calls);
}

/** A group's sources, most used first (calls, then failures, then found nothing). */
export function sourcesByUse(stats: KnowledgeStats): [string, KnowledgeSourceUse][] {
  return Object.entries(stats.sources).sort((a, b) => b[1].calls - a[1].calls || b[1].failed - a[1].failed || b[1].empty - a[1].empty || a[0].localeCompare(b[0]));
}

/** Relative accuracy of a bucketed duration. */
const ACCURACY = 0.01;
const GAMMA = (1 + ACCURACY) / (1 - ACCURACY);
const LOG_GAMMA = Math.log(GAMMA);
/** Durations under this are bucketed as 0 (log lines round `knowledge_ms` to a microsecond). @unit ms */
const SMALLEST_BUCKETED_MS = 0.001;

/**
 * A group's durations, in bounded memory: exactly, up to {@link EXACT_DURATIONS} of them; past
 * that in logarithmic buckets, each read back within 1% of the durations in it (at most about
 * 1,400 buckets between a microsecond and a week).
 */
class Durations {
  #exact: number[] | undefined = [];
  readonly #buckets = new Map<number, number>();
  #zeros = 0;
  #count = 0;

  add(ms: number): void {
    this.#count += 1;
    if (this.#exact === undefined) {
      this.#bucket(ms);
      return;
    }
    this.#exact.push(ms);
    if (this.#exact.length > EXACT_DURATIONS) {
      for (const value of this.#exact) this.#bucket(value);
      this.#exact = undefined;
    }
  }

  #bucket(ms: number): void {
    if (ms < SMALLEST_BUCKETED_MS) {
      this.#zeros += 1;
      return;
    }
    const index = Math.ceil(Math.log(ms) / LOG_GAMMA);
    this.#buckets.set(index, (this.#buckets.get(index) ?? 0) + 1);
  }

  /** The duration at rank ⌈q × n⌉ of the n kept, rounded to a microsecond; null when none are. */
  percentile(q: number): number | null {
    if (this.#count === 0) return null;
    const rank = Math.max(1, Math.ceil(q * this.#count));
    if (this.#exact !== undefined) return round([...this.#exact].sort((a, b) => a - b)[rank - 1]!);
    if (rank <= this.#zeros) return 0;
    let seen = this.#zeros;
    for (const index of [...this.#buckets.keys()].sort((a, b) => a - b)) {
      seen += this.#buckets.get(index)!;
      // The bucket holds durations in (γ^(i-1), γ^i]; this value is within 1% of each.
      if (seen >= rank) return round((2 * GAMMA ** index) / (GAMMA + 1));
    }
    return null;
  }
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;
