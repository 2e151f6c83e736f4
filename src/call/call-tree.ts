/**
 * What one application call and every call it delegates share: the requests their programs may
 * make of the host in all (the per-call budget, counted over the call tree, so a program
 * cannot multiply it by delegating), the fetches' count and barrier, and the redaction of what
 * is written once credentials were sent.
 */
import { CallTreeEgress } from "../egress/index.ts";
import { SANDBOX_LIMITS } from "../sandbox/index.ts";

export class CallTree {
  readonly egress: CallTreeEgress;
  #requests = 0;
  /** The tree of this tree's undoing; this tree itself when it is one. */
  #cleanUp: CallTree | undefined;

  constructor(egress = new CallTreeEgress(), cleansUp = false) {
    this.egress = egress;
    if (cleansUp) this.#cleanUp = this;
  }

  /**
   * The tree of what undoes the tree's failed calls' effects (`onFailure`, a tool's `revert`) and
   * the calls that code makes: the same fetches' count, barrier and redaction, and a request
   * budget of its own, so that a failure that spent the call's budget does not also stop its
   * undoing. One for the tree, and its own when those calls fail in turn: undoing that sets off
   * more undoing (a revert that asks an agent whose program writes and fails again) shares one
   * budget, and ends.
   */
  forCleanUp(): CallTree {
    return (this.#cleanUp ??= new CallTree(this.egress, true));
  }

  /** Counts one request of a program of the tree (a delegated call, a tool call, a fetch, `content`); false past the budget. */
  takeRequest(): boolean {
    this.#requests += 1;
    return this.#requests <= SANDBOX_LIMITS.maxDelegateCalls;
  }

  /** The requests counted so far, to go back to with {@link rewindRequests}. */
  get requests(): number {
    return this.#requests;
  }

  /**
   * Back to `count` requests, when a run's work was thrown away and the same program runs again
   * (another process committed first): the run again has the budget the first run had. The
   * fetches' count is not rewound: those requests left the host.
   */
  rewindRequests(count: number): void {
    this.#requests = Math.min(this.#requests, count);
  }

  /** `text` without any recognizable copy of the credentials the tree sent; `text` itself while none was sent. */
  redact(text: string): string {
    return this.egress.redactor?.redact(text) ?? text;
  }
}
