/**
 * Shared parts of the egress tests: local web servers closed after each test, and an agent whose
 * methods are scripted programs (the hostile code) under an egress policy.
 */
import { afterEach } from "vitest";
import type { AgentOptions } from "../../src/index.ts";
import { agentWith, type ScriptedAgent, type ScriptedPrograms } from "../../test-support/agents.ts";
import { tempLogPath } from "../../test-support/logs.ts";
import { startWebServer, type Route, type WebServer } from "../../test-support/web-server.ts";

const servers: WebServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

/** A local server for this test, closed after it. */
export async function serve(routes: Record<string, Route>): Promise<WebServer> {
  const server = await startWebServer(routes);
  servers.push(server);
  return server;
}

/** An agent whose methods are scripted programs, with `egress` (and any other options), logging to a temporary file; its log and history to read back. */
export function egressAgent(programs: ScriptedPrograms, options: AgentOptions, role = "reader"): ScriptedAgent {
  return agentWith(programs, { role, log: tempLogPath("improv-egress-"), ...options });
}

/** A program that returns what a fetch gave (status, body text) or threw (name, message). */
export const tried = (call: string) =>
  `try { const r = await ${call}; return { status: r.status, body: await r.text() }; } catch (e) { return { name: e.name, message: e.message, egress: e instanceof EgressError } }`;
