/**
 * What the fetches of one application call and of every call it delegates share (DESIGN 14):
 * the count against `egress.maxRequests`, and the barrier. Once a request carrying injected
 * headers has gone to an origin, a program of the tree may have read what came back, so from
 * then on requests to any other origin are refused unless `egress.flows` lets that flow through.
 */
import type { AllowEntry, EgressPolicy } from "./policy.ts";

export class CallTreeEgress {
  #requests = 0;
  /** The origins (as URLs spell them) that were sent injected headers, with the entry of `allow` each matched. */
  readonly #credentialed = new Map<string, AllowEntry>();

  /** Counts one request of the tree; false when it is past `maxRequests`. */
  count(policy: EgressPolicy): boolean {
    this.#requests += 1;
    return this.#requests <= policy.maxRequests;
  }

  /** A request carrying the headers of `entry` is about to go to `url`. */
  sendsCredentials(url: URL, entry: AllowEntry): void {
    if (!this.#credentialed.has(url.origin)) this.#credentialed.set(url.origin, entry);
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
