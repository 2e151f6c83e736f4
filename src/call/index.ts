/** What other folders may use of call/: they import it from here, never from its files. */
export { kw } from "./arguments.ts";
export type { KeywordArguments } from "./arguments.ts";
export { keptValue } from "./bridge/content.ts";
export { handedBackChild } from "./bridge/delegate.ts";
export { performCall } from "./lifecycle.ts";
export type { CallEvent } from "./events.ts";
