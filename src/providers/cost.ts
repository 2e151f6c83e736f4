/**
 * What provider requests cost in money: the application's prices per model, in US dollars
 * per million tokens, turn the tokens a provider reports into `cost_usd`; a `CostBudget` stops
 * provider requests once the money is spent, as a `TokenBudget` does for tokens.
 */
import { describeType } from "../shared/index.ts";

/** A model's prices, in US dollars per million tokens. Cached and cache-write input default to `input`. */
export interface ModelPrice {
  readonly input: number;
  readonly output: number;
  /** Input read from the prompt cache (part of the prompt tokens). */
  readonly cachedInput?: number | undefined;
  /** Input written to the prompt cache (part of the prompt tokens). */
  readonly cacheWrite?: number | undefined;
}

/** Prices by model name, as the provider reports the model that answered. */
export type Pricing = Readonly<Record<string, ModelPrice>>;

const PRICE_FIELDS = ["input", "output", "cachedInput", "cacheWrite"] as const;

/** The `pricing` option, checked: every price a finite number ≥ 0. Throws a `TypeError` naming the model and field. */
export function readPricing(given: unknown): Pricing | undefined {
  if (given === undefined) return undefined;
  if (typeof given !== "object" || given === null || Array.isArray(given)) throw new TypeError('Option "pricing" must be an object of prices by model name, e.g. { "gpt-4.1-mini": { input: 0.4, output: 1.6 } } (US dollars per million tokens).');
  const pricing: Record<string, ModelPrice> = Object.create(null);
  for (const [model, price] of Object.entries(given)) {
    if (typeof price !== "object" || price === null) throw new TypeError(`Option "pricing.${model}" must be { input, output, cachedInput?, cacheWrite? } in US dollars per million tokens.`);
    for (const field of Object.keys(price)) {
      if (!(PRICE_FIELDS as readonly string[]).includes(field)) throw new TypeError(`Option "pricing.${model}" has "${field}", which is not input, output, cachedInput or cacheWrite.`);
    }
    for (const field of PRICE_FIELDS) {
      const value = (price as Record<string, unknown>)[field];
      const required = field === "input" || field === "output";
      if (value === undefined && !required) continue;
      if (typeof value !== "number" || !Number.isFinite(value) || value < 0) throw new TypeError(`Option "pricing.${model}.${field}" must be a number of US dollars per million tokens, 0 or more.`);
    }
    pricing[model] = Object.freeze({ ...(price as ModelPrice) });
  }
  return Object.freeze(pricing);
}

/** What one request's tokens cost at `price`, in US dollars (cached and cache-write tokens are part of `prompt`). */
export function costOf(tokens: { readonly prompt: number; readonly completion: number; readonly cached: number; readonly cacheWrite: number }, price: ModelPrice): number {
  const cached = Math.min(tokens.cached, tokens.prompt);
  const written = Math.min(tokens.cacheWrite, tokens.prompt - cached);
  const plain = tokens.prompt - cached - written;
  return (plain * price.input + cached * (price.cachedInput ?? price.input) + written * (price.cacheWrite ?? price.input) + tokens.completion * price.output) / 1_000_000;
}

/**
 * Money spent so far against a limit: give one to `maxCostUsd` to share it between agents. Once
 * spent, a call that would ask a provider ends `budget_exceeded` without asking. Only requests
 * whose model has a price in `pricing` are counted.
 *
 * @example
 * const budget = new CostBudget(5); // five dollars
 * Agent.for("writer", { pricing, maxCostUsd: budget });
 */
export class CostBudget {
  /** US dollars that may be spent. */
  readonly limitUsd: number;
  #usedUsd = 0;

  constructor(limitUsd: number) {
    if (typeof limitUsd !== "number" || !Number.isFinite(limitUsd) || limitUsd <= 0) throw new RangeError(`A cost budget must be a number of US dollars above 0; got ${describeType(limitUsd)}.`);
    this.limitUsd = limitUsd;
  }

  get usedUsd(): number {
    return this.#usedUsd;
  }

  get remainingUsd(): number {
    return Math.max(0, this.limitUsd - this.#usedUsd);
  }

  get spent(): boolean {
    return this.#usedUsd >= this.limitUsd;
  }

  /** Counts what a request cost. A request in flight when the limit is reached is counted in full. */
  charge(usd: number): void {
    if (Number.isFinite(usd) && usd > 0) this.#usedUsd += usd;
  }

  reset(): void {
    this.#usedUsd = 0;
  }

  /** The message of a call refused because the budget is spent. */
  refusal(): string {
    return `The cost budget is spent: $${this.#usedUsd.toFixed(4)} of $${this.limitUsd} used (maxCostUsd), so the provider was not asked. Raise maxCostUsd, or call reset() on the CostBudget; calls that a kept program answers still run.`;
  }
}
