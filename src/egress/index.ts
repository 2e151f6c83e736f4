/** What other folders may use of egress/: they import it from here, never from its files. */
export { redactData, redactEncoded } from "./at-rest.ts";
export { CallTreeEgress, TREE_FETCHES_IN_FLIGHT } from "./call-tree.ts";
export { mayWrite, prepareRequest, sendRequest, sentUrl } from "./fetcher.ts";
export type { EgressOutcome, PreparedRequest, SendContext } from "./fetcher.ts";
export { allowedOrigins, readEgress } from "./policy.ts";
export type { EgressOptions, EgressPolicy } from "./policy.ts";
export { cleanUrl } from "./provenance.ts";
export type { Redactor } from "./redaction.ts";
