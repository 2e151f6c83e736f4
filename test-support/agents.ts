import { readFileSync } from "node:fs";
import { Agent, ScriptedProvider, type AgentOptions, type AgentProxy, type HistoryRecord, type ScriptedProviderOptions } from "../src/index.ts";
import { readLogLines } from "./logs.ts";

/** The programs a ScriptedProvider answers with, by method (or `role.method`). */
export type ScriptedPrograms = ScriptedProviderOptions["programs"];

/** An agent whose methods a test calls freely, and whose outcomes' values it reads without narrowing. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyAgent = any;

/** An agent whose methods are the given scripted programs; `Values` types the values a test writes on it. */
export function scriptedAgent<Values extends object = {}>(
  role: string,
  programs: ScriptedPrograms,
  options: AgentOptions = {},
): { agent: AgentProxy<Values>; provider: ScriptedProvider } {
  const provider = new ScriptedProvider({ programs });
  return { agent: Agent.for<Values>(role, { provider, ...options }), provider };
}

/** The options of `agentWith`: the agent's own, and the role it is made for ("agent" unless given). */
export type AgentWithOptions = AgentOptions & { role?: string };

/** What `agentWith` makes: the agent, its provider, and its log and history to read back. */
export interface ScriptedAgent {
  readonly agent: AnyAgent;
  readonly provider: ScriptedProvider;
  /** The log file, when `options.log` named one. */
  readonly log: string | undefined;
  /** The log file's lines, parsed. */
  readonly logLines: () => Record<string, unknown>[];
  /** The log file's text. */
  readonly logText: () => string;
  readonly history: () => readonly HistoryRecord[];
}

/**
 * An agent whose methods are the given scripted programs, with `options` (tools, egress, a log
 * file such as `tempLogPath()`, any other) and `options.role`.
 */
export function agentWith(programs: ScriptedPrograms, options: AgentWithOptions = {}): ScriptedAgent {
  const { role = "agent", ...agentOptions } = options;
  const { agent, provider } = scriptedAgent(role, programs, agentOptions);
  const log = typeof agentOptions.log === "string" ? agentOptions.log : undefined;
  const logFile = (): string => {
    if (log === undefined) throw new Error("agentWith: this agent has no log file (pass options.log)");
    return log;
  };
  return {
    agent,
    provider,
    log,
    logLines: () => readLogLines(logFile()),
    logText: () => readFileSync(logFile(), "utf8"),
    history: () => Agent.history(agent) as readonly HistoryRecord[],
  };
}
