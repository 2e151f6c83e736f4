/**
 * What the fetches of one application call and of every call it delegates share:
 * the count against `egress.maxRequests`, the barrier, and what must be taken out of everything
 * improv writes. Once a request carrying injected headers has gone to an origin, a program of
 * the tree may have read what came back, so from then on requests to any other origin are
 * refused unless `egress.flows` lets that flow through, and the records, log lines, spans, kept
 * values and contexts of the tree's calls are written through the redactor of that policy. And
 * the tree has at most `TREE_FETCHES_IN_FLIGHT` fetches in flight: however far its programs fan
 * out through `delegate`, the response bodies the host holds for it at once stay bounded.
 */
import type { AllowEntry, EgressPolicy } from "./policy.ts";
import { redactorOfAll, type Redactor } from "./redaction.ts";
import { Slots } from "../shared/index.ts";

/** The most fetches one call tree has in flight at once, as many as one program may have. */
export const TREE_FETCHES_IN_FLIGHT = 16;

export class CallTreeEgress {
  #requests = 0;
  /** The fetches' slots, given first come first served. */
  readonly #slots = new Slots(TREE_FETCHES_IN_FLIGHT);
  /** The origins (as URLs spell them) that were sent injected headers, with the entry of `allow` each matched. */
  readonly #credentialed = new Map<string, AllowEntry>();
  /** The redactors of the policies whose headers were sent (the agents of a tree may have policies of their own). */
  readonly #redactors: Redactor[] = [];
  #redactor: Redactor | undefined;

  /** Counts one request of the tree; false when it is past `maxRequests`. */
  count(policy: EgressPolicy): boolean {
    this.#requests += 1;
    return this.#requests <= policy.maxRequests;
  }

  /**
   * One of the tree's slots for a request, held until `release` is called; undefined when
   * `signal` ended first (the request must then not be sent).
   */
  async slot(signal: AbortSignal): Promise<(() => void) | undefined> {
    try {
      return await this.#slots.acquire(signal);
    } catch {
      return undefined;
    }
  }

  /** A request carrying the headers of `entry` is about to go to `url`; `redactor` recognizes them (the policy's). */
  sendsCredentials(url: URL, entry: AllowEntry, redactor: Redactor): void {
    if (!this.#credentialed.has(url.origin)) this.#credentialed.set(url.origin, entry);
    if (redactor.active && !this.#redactors.includes(redactor)) {
      this.#redactors.push(redactor);
      this.#redactor = redactorOfAll(this.#redactors);
    }
  }

  /**
   * What takes every recognizable copy of the credentials the tree sent out of what improv
   * writes of its calls; undefined while none was sent, so such calls pay nothing.
   */
  get redactor(): Redactor | undefined {
    return this.#redactor;
  }

  /** Why `url` (matching `entry`) may not be reached past the barrier; undefined when it may. */
  barred(policy: EgressPolicy, url: URL, entry: AllowEntry): string | undefined {
    for (const [origin, source] of this.#credentialed) {
      if (origin === url.origin || policy.flows.get(source)?.has(entry) === true) continue;
      return `refused by the barrier: this call has sent credentials (egress.headers) to ${origin}, so its programs may hold what came back, and egress.flows has no { from: "${source.origin}", to: "${entry.origin}" }.`;
    }
    return undefined;
  }
}
