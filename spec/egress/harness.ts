/**
 * Shared parts of the egress tests: local web servers closed after each test, and an agent whose
 * methods are scripted programs (the hostile code) under an egress policy.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import { Agent, ScriptedProvider, type AgentOptions, type HistoryRecord } from "../../src/index.ts";
import { startWebServer, type Route, type WebServer } from "../helpers/web-server.ts";

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

/** An agent whose methods are scripted programs, with `egress` (and any other options); its log file and history to read back. */
export function agentWith(programs: Record<string, string | string[]>, options: AgentOptions, role = "reader") {
  const provider = new ScriptedProvider({ programs });
  const log = join(mkdtempSync(join(tmpdir(), "improv-egress-")), "calls.jsonl");
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const agent = Agent.for(role, { provider, log, ...options }) as any;
  return { agent, provider, log, logText: () => readFileSync(log, "utf8"), history: () => Agent.history(agent) as readonly HistoryRecord[] };
}

/** A program that returns what a fetch gave (status, body text) or threw (name, message). */
export const tried = (call: string) =>
  `try { const r = await ${call}; return { status: r.status, body: await r.text() }; } catch (e) { return { name: e.name, message: e.message, egress: e instanceof EgressError } }`;
