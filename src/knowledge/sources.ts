/**
 * Where a method's prompt context comes from: a value of the agent's state, passages
 * a retriever finds for the call, or literal text. Made by the application with `fromState`,
 * `fromRetrieval` and `literal`, and read once, at construction, by {@link readKnowledge}.
 */
import { checkOptionNames, describeType } from "../shared/index.ts";
import type { MetadataFilter, Retriever } from "./types.ts";

/** What a retrieval's query function gets: the call it retrieves for. */
export interface KnowledgeCall {
  readonly role: string;
  readonly method: string;
  readonly args: readonly unknown[];
  readonly kwargs: Readonly<Record<string, unknown>>;
}

/** The options every source takes. */
export interface SourceOptions {
  /** Its name, unique in the agent: in the prompt, in `knowledge` in programs, and in the record. Default: its kind and position (`retrieval-1`). */
  readonly name?: string | undefined;
  /** The most characters it adds to the prompt. Default: 2,000. */
  readonly maxChars?: number | undefined;
  /** When true, a failure leaves it out and the call goes on; otherwise the call ends `knowledge`. Default: false. */
  readonly optional?: boolean | undefined;
  /** The longest it may take. Default: the time the call has left. @unit ms */
  readonly timeoutMs?: number | undefined;
}

/** The options of {@link fromRetrieval}. */
export interface RetrievalOptions extends SourceOptions {
  /** The text searched for: a fixed string, or made from the call (its first argument, say). */
  readonly query: string | ((call: KnowledgeCall) => string | Promise<string>);
  /** At most this many passages. Default: 5. */
  readonly topK?: number | undefined;
  /** Only passages scoring at least this. Default: no minimum. */
  readonly minRelevance?: number | undefined;
  /** Only passages whose metadata matches (applied inside the search). */
  readonly filter?: MetadataFilter | undefined;
}

interface SourceBase {
  readonly name: string | undefined;
  readonly maxChars: number;
  readonly optional: boolean;
  readonly timeoutMs: number | undefined;
}

/** A source of prompt context, as made by `fromState`, `fromRetrieval` or `literal`. */
export type KnowledgeSource =
  | (SourceBase & { readonly kind: "state"; readonly path: readonly string[]; readonly pathText: string })
  | (SourceBase & { readonly kind: "retrieval"; readonly retriever: Retriever; readonly query: RetrievalOptions["query"]; readonly topK: number; readonly minRelevance: number; readonly filter: MetadataFilter | undefined })
  | (SourceBase & { readonly kind: "literal"; readonly text: string });

/** A source as the agent holds it: named. */
export type NamedSource = KnowledgeSource & { readonly name: string };

/** Default and largest characters one source adds, and the whole block. */
export const KNOWLEDGE_LIMITS = { sourceChars: 2_000, maxSourceChars: 100_000, blockChars: 8_000, maxTopK: 100, maxSources: 20 } as const;

const made = new WeakSet<object>();

/**
 * A value of the agent's context, by a dotted path (`"customer.plan"`, `"orders.0.id"`): as text
 * when it is a string, else as JSON.
 */
export function fromState(path: string, options: Omit<SourceOptions, "timeoutMs"> = {}): KnowledgeSource {
  if (typeof path !== "string" || path.trim() === "") throw new TypeError(`fromState(path) takes a dotted path into the agent's context, such as "customer.plan"; got ${describeType(path)}.`);
  return source({ kind: "state", path: path.split("."), pathText: path, ...base(checkOptionNames<SourceOptions>(options, ["name", "maxChars", "optional"], "fromState()"), "fromState") });
}

/** Passages a retriever finds for the call, by a query made from it. */
export function fromRetrieval(retriever: Retriever, options: RetrievalOptions): KnowledgeSource {
  if (typeof retriever !== "object" || retriever === null || typeof (retriever as { search?: unknown }).search !== "function") {
    throw new TypeError(`fromRetrieval(retriever, options) takes a retriever: an object with search(query, { topK, minRelevance, filter, signal }), such as memoryRetriever(); got ${describeType(retriever)}.`);
  }
  if (typeof options !== "object" || options === null) throw new TypeError(`fromRetrieval(retriever, options) needs options with a query; got ${describeType(options)}.`);
  checkOptionNames(options, ["query", "name", "topK", "minRelevance", "filter", "maxChars", "optional", "timeoutMs"], "fromRetrieval()");
  const { query } = options;
  if (typeof query !== "string" && typeof query !== "function") throw new TypeError(`fromRetrieval option "query" must be a string or a function (call) => string; got ${describeType(query)}.`);
  const topK = options.topK ?? 5;
  if (!Number.isSafeInteger(topK) || topK < 1 || topK > KNOWLEDGE_LIMITS.maxTopK) throw new RangeError(`fromRetrieval option "topK" must be a whole number from 1 to ${KNOWLEDGE_LIMITS.maxTopK}; got ${describeType(topK)}.`);
  const minRelevance = options.minRelevance ?? Number.NEGATIVE_INFINITY;
  if (typeof minRelevance !== "number" || Number.isNaN(minRelevance)) throw new TypeError(`fromRetrieval option "minRelevance" must be a number; got ${describeType(minRelevance)}.`);
  const filter = options.filter;
  if (filter !== undefined && (typeof filter !== "object" || filter === null || Array.isArray(filter))) throw new TypeError(`fromRetrieval option "filter" must be an object of metadata values; got ${describeType(filter)}.`);
  return source({ kind: "retrieval", retriever, query, topK, minRelevance, filter: filter === undefined ? undefined : Object.freeze({ ...filter }), ...base(options, "fromRetrieval") });
}

/** Literal text, the same for every call (an instruction, a policy). */
export function literal(text: string, options: Omit<SourceOptions, "optional" | "timeoutMs"> = {}): KnowledgeSource {
  if (typeof text !== "string") throw new TypeError(`literal(text) takes a string; got ${describeType(text)}.`);
  return source({ kind: "literal", text, ...base(checkOptionNames<SourceOptions>(options, ["name", "maxChars"], "literal()"), "literal") });
}

/** The options every source reads, once its maker has checked their names. */
function base(options: SourceOptions, maker: string): SourceBase {
  const { name, maxChars = KNOWLEDGE_LIMITS.sourceChars, optional = false, timeoutMs } = options;
  if (name !== undefined && (typeof name !== "string" || !/^[A-Za-z_][\w.-]{0,63}$/.test(name))) throw new TypeError(`${maker}() option "name" must be a name of letters, digits, _, - and . (up to 64, starting with a letter or _); got ${describeType(name)}.`);
  if (!Number.isSafeInteger(maxChars) || maxChars < 1 || maxChars > KNOWLEDGE_LIMITS.maxSourceChars) throw new RangeError(`${maker}() option "maxChars" must be a whole number from 1 to ${KNOWLEDGE_LIMITS.maxSourceChars}; got ${describeType(maxChars)}.`);
  if (typeof optional !== "boolean") throw new TypeError(`${maker}() option "optional" must be true or false; got ${describeType(optional)}.`);
  if (timeoutMs !== undefined && !(Number.isSafeInteger(timeoutMs) && timeoutMs >= 1)) throw new RangeError(`${maker}() option "timeoutMs" must be a whole number of milliseconds, 1 or more; got ${describeType(timeoutMs)}.`);
  return { name, maxChars, optional, timeoutMs };
}

function source(made_: KnowledgeSource): KnowledgeSource {
  const frozen = Object.freeze(made_);
  made.add(frozen);
  return frozen;
}

/** The `knowledge` option read: each a source made by improv, named (unique, defaults by kind and position). */
export function readKnowledge(value: unknown): readonly NamedSource[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new TypeError(`Option "knowledge" must be an array of sources made with fromState(), fromRetrieval() or literal(); got ${describeType(value)}.`);
  if (value.length > KNOWLEDGE_LIMITS.maxSources) throw new RangeError(`Option "knowledge" has ${value.length} sources; an agent may have at most ${KNOWLEDGE_LIMITS.maxSources}.`);
  const names = new Set<string>();
  return Object.freeze(
    value.map((given: unknown, index): NamedSource => {
      if (typeof given !== "object" || given === null || !made.has(given)) {
        throw new TypeError(`Option "knowledge"[${index}] is not a source: make each with fromState(), fromRetrieval() or literal(); got ${describeType(given)}.`);
      }
      const found = given as KnowledgeSource;
      const name = found.name ?? `${found.kind}-${index + 1}`;
      if (names.has(name)) throw new TypeError(`Option "knowledge" names two sources "${name}"; give each its own name.`);
      names.add(name);
      return Object.freeze({ ...found, name });
    }),
  );
}
