/** What other folders may use of telemetry/: they import it from here, never from its files. */
export { PATTERN_TAGS } from "./patterns.ts";
export type { PatternTag } from "./patterns.ts";
export { scanProgram } from "./scan.ts";
export { scanToolUse } from "./tool-scan.ts";
