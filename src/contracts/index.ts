/** What other folders may use of contracts/: they import it from here, never from its files. */
export { NO_CONTRACT, markProgramMethods, readContract } from "./contract.ts";
export type { Contract, MethodContract, StandardSchemaLike } from "./contract.ts";
export { JSON_DATA_HINT, jsonDataProblem } from "./json-data.ts";
export { checkInThread, prepareThread } from "./schema-threads.ts";
