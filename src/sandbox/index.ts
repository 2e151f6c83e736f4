/** What other folders may use of sandbox/: they import it from here, never from its files. */
export { AgentReference, mayHoldAgents, replaceAgentReferences } from "./agent-reference.ts";
export { findUncloneable } from "./crossing.ts";
export { readDelegateInput, readHandedBackOptions, readKeptValue, readToolInput, rewriteResult, StandIn } from "./host/inbound.ts";
export type { ProgramResult } from "./host/inbound.ts";
export type { AskingRun } from "./host/pending-run.ts";
export { configureSandbox, sandboxPool } from "./host/pool.ts";
export type { SandboxConfig } from "./host/pool.ts";
export { runProgram } from "./host/run-program.ts";
export { SANDBOX_LIMITS } from "./limits.ts";
export { ownBytes } from "./own-bytes.ts";
export { bridgeFailure } from "./protocol.ts";
export type { BridgeAnswer, BridgeKind, BridgeOutcome, BridgeRequest, ContentRequest, DelegateRequest, FetchAnswer, FetchRequest, ToolRequest } from "./protocol.ts";
