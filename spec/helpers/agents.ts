import { Agent, ScriptedProvider, type AgentOptions, type AgentProxy } from "../../src/index.ts";
import type { ScriptedProviderOptions } from "../../src/providers/scripted.ts";

/** An agent whose methods are the given scripted programs. */
export function scriptedAgent(
  role: string,
  programs: ScriptedProviderOptions["programs"],
  options: AgentOptions = {},
): { agent: AgentProxy; provider: ScriptedProvider } {
  const provider = new ScriptedProvider({ programs });
  return { agent: Agent.for(role, { provider, ...options }), provider };
}
