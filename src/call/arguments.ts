/** Splitting a dynamic call's arguments into `args` and `kwargs`. */

const KEYWORDS: unique symbol = Symbol("improv.kwargs");

/** Named arguments, made by {@link kw}. */
export interface KeywordArguments {
  readonly [KEYWORDS]: Readonly<Record<string, unknown>>;
}

/**
 * Marks named arguments (kwargs) for a dynamic call. Pass it as the last argument; the
 * program sees them as `kwargs`.
 *
 * @example
 * await calc.convert(100, kw({ from: "c", to: "f" }));
 */
export function kw(values: Record<string, unknown>): KeywordArguments {
  if (typeof values !== "object" || values === null || Array.isArray(values)) {
    throw new TypeError("kw() takes an object of named arguments, e.g. kw({ from: \"c\", to: \"f\" }).");
  }
  return Object.freeze({ [KEYWORDS]: values });
}

function isKeywordArguments(value: unknown): value is KeywordArguments {
  return typeof value === "object" && value !== null && Object.hasOwn(value, KEYWORDS);
}

/** A call's arguments, split. */
export interface CallArguments {
  readonly args: unknown[];
  readonly kwargs: Record<string, unknown>;
}

/** Separates a trailing `kw()` from positional arguments. Throws `TypeError` for misplaced `kw()`. */
export function splitArguments(raw: readonly unknown[]): CallArguments {
  const last = raw.at(-1);
  const args = isKeywordArguments(last) ? raw.slice(0, -1) : [...raw];
  const misplaced = args.findIndex(isKeywordArguments);
  if (misplaced !== -1) {
    throw new TypeError(`kw() must be the last argument, but args[${misplaced}] is kw(). Move the named arguments to the end.`);
  }
  return { args, kwargs: isKeywordArguments(last) ? { ...last[KEYWORDS] } : {} };
}
