/** What other folders may use of tracing/: they import it from here, never from its files. */
export { endSpan, inSpan, spanIds, startSpan } from "./tracing.ts";
export type { Span } from "./tracing.ts";
