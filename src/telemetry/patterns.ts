/** The operations the history scan reports, sorted as they appear in logs. */
export const PATTERN_TAGS = ["count", "filter", "find", "group", "iterate", "map", "reduce", "slice", "sort"] as const;

export type PatternTag = (typeof PATTERN_TAGS)[number];

/** How a generated program uses `context.conversation_history`, as logged per call. */
export interface HistoryScan {
  /** `ast` when the program parsed, `text` for the documented textual fallback. */
  readonly scan: "ast" | "text";
  readonly historyAccessDetected: boolean;
  /** Sorted, without repeats. */
  readonly patterns: PatternTag[];
}

/** Array methods and the tag each one gives when applied to the history or a collection derived from it. */
export const METHOD_TAGS: Readonly<Record<string, PatternTag>> = {
  filter: "filter",
  map: "map",
  flatMap: "map",
  slice: "slice",
  splice: "slice",
  find: "find",
  findLast: "find",
  findIndex: "find",
  findLastIndex: "find",
  some: "find",
  every: "find",
  includes: "find",
  indexOf: "find",
  lastIndexOf: "find",
  sort: "sort",
  toSorted: "sort",
  reverse: "sort",
  toReversed: "sort",
  reduce: "reduce",
  reduceRight: "reduce",
  forEach: "iterate",
};

/** Methods whose result is again a collection of (derived) records or values. */
export const COLLECTION_RESULTS: ReadonlySet<string> = new Set([
  "filter", "map", "flatMap", "slice", "splice", "sort", "toSorted", "reverse", "toReversed", "concat", "with", "entries", "keys", "values", "flat",
]);

/** Methods whose result is one record of the collection. */
export const RECORD_RESULTS: ReadonlySet<string> = new Set(["find", "findLast", "at", "pop", "shift"]);

/** Methods whose callbacks receive records as their parameters (reduce: the second one). */
export const CALLBACK_METHODS: ReadonlySet<string> = new Set([
  "filter", "map", "flatMap", "find", "findLast", "findIndex", "findLastIndex", "some", "every", "forEach", "sort", "toSorted", "reduce", "reduceRight",
]);
