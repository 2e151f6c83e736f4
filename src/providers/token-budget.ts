/**
 * A limit on the tokens agents may spend on their providers. Once it is spent, a call that would
 * ask a provider ends `budget_exceeded` without asking; calls that a kept program answers still
 * run, since they cost nothing.
 */
import { describeType } from "../shared/index.ts";

/**
 * Tokens spent so far against a limit: give one to `maxTokens` to share it between agents (an
 * agent's delegated helpers share their caller's already).
 *
 * @example
 * const budget = new TokenBudget(200_000);
 * const a = Agent.for("writer", { maxTokens: budget });
 * const b = Agent.for("editor", { maxTokens: budget });
 * // … later: budget.used, budget.remaining, budget.reset()
 */
export class TokenBudget {
  /** Tokens (input and output) that may be spent. */
  readonly limit: number;
  #used = 0;

  constructor(limit: number) {
    if (typeof limit !== "number" || !Number.isSafeInteger(limit) || limit < 1) {
      throw new RangeError(`A token budget must be a whole number of tokens, at least 1; got ${describeType(limit)}.`);
    }
    this.limit = limit;
  }

  /** Tokens spent so far, as the providers reported them. */
  get used(): number {
    return this.#used;
  }

  /** Tokens left before the limit (0 once spent). */
  get remaining(): number {
    return Math.max(0, this.limit - this.#used);
  }

  /** True once the limit is reached: no more provider requests. */
  get spent(): boolean {
    return this.#used >= this.limit;
  }

  /** Counts tokens a provider reported. A request in flight when the limit is reached is counted in full, so `used` may pass `limit`. */
  charge(tokens: number): void {
    if (Number.isSafeInteger(tokens) && tokens > 0) this.#used += tokens;
  }

  /** Starts counting again from 0 (a new day, a new billing period). */
  reset(): void {
    this.#used = 0;
  }

  /** The message of a call refused because the budget is spent. */
  refusal(): string {
    return `The token budget is spent: ${this.#used} of ${this.limit} tokens used (maxTokens), so the provider was not asked. Raise maxTokens, or call reset() on the TokenBudget; calls that a kept program answers still run.`;
  }
}
