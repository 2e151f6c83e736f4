/** What other folders may use of state/: they import it from here, never from its files. */
export { AgentState, agentsInProcess } from "./agent-state.ts";
export { AGENT_OPTION_NAMES, DEFAULT_OPTIONS, resolveOptions } from "./options.ts";
export type { AgentOptions, ToolApprovalRequest } from "./options.ts";
