import { Agent, ScriptedProvider, type AgentOptions, type AgentProxy } from "../../src/index.ts";
import type { ScriptedProviderOptions } from "../../src/providers/scripted.ts";

/** An agent whose methods are the given scripted programs; `Values` types the values a test writes on it. */
export function scriptedAgent<Values extends object = {}>(
  role: string,
  programs: ScriptedProviderOptions["programs"],
  options: AgentOptions = {},
): { agent: AgentProxy<Values>; provider: ScriptedProvider } {
  const provider = new ScriptedProvider({ programs });
  return { agent: Agent.for<Values>(role, { provider, ...options }), provider };
}
