/**
 * A call's knowledge, assembled once before its kept program runs or its first provider request
 *: every source at once, each within the call's signal and its own time, its text
 * bounded, and what a retriever hands back read as untrusted input (any shape, any size, getters
 * that throw, a search that never settles).
 */
import { configure } from "safe-stable-stringify";
import { safeMessage, toJsonSafe, type JsonValue, within } from "../shared/index.ts";
import { endSpan, startSpan, type Span } from "../tracing/index.ts";
import { KNOWLEDGE_LIMITS, type KnowledgeCall, type NamedSource } from "./sources.ts";
import { ownFlatMetadata } from "./vectors.ts";

/** One passage in a segment, as programs read it. */
export interface SegmentResult {
  readonly sourceId: string;
  readonly score: number;
  readonly content: string;
  /** The passage's metadata; null when it has none. */
  readonly metadata: JsonValue;
}

/** One source's part of the call's knowledge: in the prompt, and in `knowledge` in programs. */
export interface KnowledgeSegment {
  readonly name: string;
  readonly kind: NamedSource["kind"];
  readonly text: string;
  readonly results?: readonly SegmentResult[];
}

/** One source as the call's record keeps it: what was asked and found, never the passages' text. */
export interface KnowledgeRecord {
  readonly name: string;
  readonly kind: NamedSource["kind"];
  readonly query?: string;
  readonly results: readonly { readonly source_id: string; readonly score: number }[];
  readonly chars: number;
  readonly error?: string;
}

/** The log line's names of a call's sources: all, the retrievals that found nothing, and those that failed. */
export function sourceNames(records: readonly KnowledgeRecord[]): { readonly all: string[]; readonly empty: string[]; readonly failed: string[] } {
  return {
    all: records.map((entry) => entry.name),
    empty: records.filter((entry) => entry.kind === "retrieval" && entry.error === undefined && entry.results.length === 0).map((entry) => entry.name),
    failed: records.filter((entry) => entry.error !== undefined).map((entry) => entry.name),
  };
}

/** A call's knowledge: its segments, its records, the source that failed the call if one did, and the time it took. */
export interface KnowledgeAssembly {
  readonly segments: readonly KnowledgeSegment[];
  /**
   * The segments as JSON, made once for every run of the call: what a program's `knowledge` is
   * parsed from (one string crosses into the sandbox faster than the objects it holds).
   */
  readonly segmentsJson: string;
  readonly records: readonly KnowledgeRecord[];
  readonly failure?: { readonly name: string; readonly message: string; readonly missingValue?: true };
  readonly ms: number;
  /** Passages retrieved in all. */
  readonly retrieved: number;
}

/** What assembling needs of the call. */
export interface AssemblyCall extends KnowledgeCall {
  readonly context: Readonly<Record<string, unknown>>;
  readonly signal: AbortSignal | undefined;
  /** The time the call has left. @unit ms */
  readonly timeLeftMs: number;
  /** The call's span, for a span per retrieval. */
  readonly span?: Span | undefined;
}

const MAX_QUERY_CHARS = 2_000;
/** The most characters a result's metadata takes as JSON: more is cut by its JSON-safe copy. */
const MAX_METADATA_CHARS = 2_000;
const stringify = configure({ circularValue: "[Circular]", bigint: true, deterministic: false });

/** The call's knowledge from `sources`; an agent without sources gets an empty one at once. */
export async function assembleKnowledge(sources: readonly NamedSource[], call: AssemblyCall): Promise<KnowledgeAssembly> {
  const began = performance.now();
  // Literals and state values need no waiting; retrievals are waited for together, so a failure of any one is handled.
  const made = sources.map((source) => assembleOne(source, call));
  const parts = made.some((part) => part instanceof Promise) ? await Promise.all(made) : (made as Part[]);
  let room = KNOWLEDGE_LIMITS.blockChars;
  const segments: KnowledgeSegment[] = [];
  const records: KnowledgeRecord[] = [];
  let failure: KnowledgeAssembly["failure"];
  let retrieved = 0;
  for (const [index, part] of parts.entries()) {
    const source = sources[index] as NamedSource;
    if ("error" in part) {
      records.push({ name: source.name, kind: source.kind, ...(part.query === undefined ? {} : { query: part.query }), results: [], chars: 0, error: part.error });
      if (!source.optional) failure ??= { name: source.name, message: part.error, ...(part.missingValue === true ? { missingValue: true } : {}) };
      continue;
    }
    // The whole block is bounded too: later sources get what room is left.
    const text = part.segment.text.length > room ? `${part.segment.text.slice(0, Math.max(0, room - 1))}…` : part.segment.text;
    room -= text.length;
    segments.push(Object.freeze({ ...part.segment, text }));
    retrieved += part.segment.results?.length ?? 0;
    records.push({
      name: source.name,
      kind: source.kind,
      ...(part.query === undefined ? {} : { query: part.query }),
      results: (part.segment.results ?? []).map((result) => ({ source_id: result.sourceId, score: result.score })),
      chars: text.length,
    });
  }
  return { segments: Object.freeze(segments), segmentsJson: JSON.stringify(segments), records, ...(failure === undefined ? {} : { failure }), ms: performance.now() - began, retrieved };
}

/** What one source gave; `missingValue` for a state value the application has not set (calling again cannot help). */
type Part = { readonly segment: KnowledgeSegment; readonly query?: string } | { readonly error: string; readonly query?: string; readonly missingValue?: true };

function assembleOne(source: NamedSource, call: AssemblyCall): Part | Promise<Part> {
  switch (source.kind) {
    case "literal":
      return { segment: { name: source.name, kind: "literal", text: cut(source.text, source.maxChars) } };
    case "state":
      return fromContext(source, call.context);
    case "retrieval":
      return retrieve(source, call);
  }
}

function fromContext(source: Extract<NamedSource, { kind: "state" }>, context: Readonly<Record<string, unknown>>): Part {
  let value: unknown = context;
  for (const key of source.path) {
    if (typeof value !== "object" || value === null || !Object.hasOwn(value, key)) return { error: `There is no value at "${source.pathText}" in the agent's context.`, missingValue: true };
    value = (value as Record<string, unknown>)[key];
  }
  const text = typeof value === "string" ? value : (stringify(value) ?? String(value));
  return { segment: { name: source.name, kind: "state", text: cut(text, source.maxChars) } };
}

async function retrieve(source: Extract<NamedSource, { kind: "retrieval" }>, call: AssemblyCall): Promise<Part> {
  const limitMs = Math.min(source.timeoutMs ?? Number.POSITIVE_INFINITY, call.timeLeftMs);
  const late = () => new Error(`it did not answer within ${Math.round(limitMs)} ms`);
  const span = startSpan(`retrieve ${source.name}`, "client", { "improv.knowledge.source": source.name, "improv.knowledge.top_k": source.topK }, call.span);
  let query: string | undefined;
  const asked = await within(limitMs, call.signal, late, async (signal) => {
    const made = typeof source.query === "string" ? source.query : await source.query({ role: call.role, method: call.method, args: call.args, kwargs: call.kwargs });
    if (typeof made !== "string") throw new TypeError(`its query function returned ${made === null ? "null" : typeof made}, not a string`);
    query = cut(made, MAX_QUERY_CHARS);
    return source.retriever.search(query, { topK: source.topK, minRelevance: source.minRelevance, filter: source.filter, signal });
  });
  const withQuery = query === undefined ? {} : { query };
  if (!asked.ok) {
    const why = asked.why === "aborted" ? "the call was cancelled while it searched" : asked.why === "timeout" ? safeMessage(asked.error) : safeMessage(asked.error);
    endSpan(span, {}, "knowledge", why);
    return { error: `Knowledge source "${source.name}" failed: ${why}.`, ...withQuery };
  }
  const read = readResults(asked.value, source);
  endSpan(span, { "improv.knowledge.results": "results" in read ? read.results.length : 0 }, "error" in read ? "knowledge" : undefined, "error" in read ? read.error : undefined);
  if ("error" in read) return { error: `Knowledge source "${source.name}" failed: ${read.error}.`, ...withQuery };
  const text = cut(read.results.map((result) => `[${result.sourceId}] (score ${round(result.score)})\n${result.content}`).join("\n\n"), source.maxChars);
  return { segment: { name: source.name, kind: "retrieval", text, results: Object.freeze(read.results) }, ...withQuery };
}

/** A retriever's answer read as untrusted: the first `topK` results scoring at least `minRelevance`, each checked and bounded. */
function readResults(answer: unknown, source: Extract<NamedSource, { kind: "retrieval" }>): { readonly results: SegmentResult[] } | { readonly error: string } {
  try {
    if (!Array.isArray(answer)) return { error: `its search resolved to ${answer === null ? "null" : typeof answer}, not an array of results` };
    const results: SegmentResult[] = [];
    const length = Math.min(answer.length, KNOWLEDGE_LIMITS.maxTopK * 10);
    for (let index = 0; index < length && results.length < source.topK; index += 1) {
      const item: unknown = answer[index];
      if (typeof item !== "object" || item === null) return { error: `its result ${index} is ${item === null ? "null" : typeof item}, not { content, score, sourceId }` };
      const { content, score, sourceId, metadata } = item as Record<string, unknown>;
      if (typeof score !== "number" || !Number.isFinite(score)) return { error: `its result ${index} has a score that is not a finite number (${typeof score === "number" ? score : typeof score})` };
      if (typeof content !== "string") return { error: `its result ${index} has content that is not a string (${content === null ? "null" : typeof content})` };
      if (typeof sourceId !== "string" || sourceId === "") return { error: `its result ${index} has no sourceId string` };
      if (score < source.minRelevance) continue;
      results.push(
        Object.freeze({
          sourceId: cut(sourceId, 200),
          score,
          content: cut(content, source.maxChars),
          metadata: metadata === undefined ? null : (ownFlatMetadata(item, MAX_METADATA_CHARS) ?? toJsonSafe(metadata, MAX_METADATA_CHARS)),
        }),
      );
    }
    return { results };
  } catch (error) {
    return { error: `its results could not be read (${safeMessage(error)})` };
  }
}

function cut(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars - 1)}…`;
}

function round(score: number): number {
  return Math.round(score * 1_000) / 1_000;
}
