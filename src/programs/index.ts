/** What other folders may use of programs/: they import it from here, never from its files. */
export { extractProgram } from "./extract.ts";
export { decideReuse, readReuse, takesPartInReuse } from "./keep-decision.ts";
export type { ReuseDecision, ReuseOption, ReuseRule, ReuseScope } from "./keep-decision.ts";
export { programKey, shelfFor } from "./kept.ts";
export type { ProgramShelf } from "./kept.ts";
export { isOwnMistake, positionInProgram } from "./mistake.ts";
export type { RunFailure, TextPosition } from "./mistake.ts";
export { parseProgram } from "./parse.ts";
export type { ParsedProgram } from "./parse.ts";
export { prepareProgram } from "./shape.ts";
export type { PreparedProgram } from "./shape.ts";
