/** What other folders may use of log/: they import it from here, never from its files. */
export { buildLogLine } from "./log-line.ts";
export type { LogLineInput } from "./log-line.ts";
export { writeLogLine } from "./logger.ts";
export { showOutcome, showProgram } from "./verbose.ts";
