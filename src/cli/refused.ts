import type { HistoryRecord } from "../history/index.ts";
import type { Store } from "../store/index.ts";

/** A program that worked for a call and was not kept for reuse, as the call's record tells it. */
export interface RefusedProgram {
  readonly timestamp: string;
  readonly agent: string;
  readonly role: string;
  readonly method: string;
  readonly callId: string;
  readonly reason: string;
  readonly program: string | null;
}

/**
 * The programs refused keeping among the latest `last` calls in the store (of one role, when
 * given), newest first. Each agent gives at most its latest `last` records, so the work is
 * bounded by the number of agents times `last`, never by the length of their histories.
 */
export async function refusedPrograms(store: Store, last: number, role?: string): Promise<RefusedProgram[]> {
  const agents = (await store.agents()).filter((agent) => role === undefined || agent.role === role);
  const calls: { readonly agent: string; readonly role: string; readonly record: HistoryRecord }[] = [];
  for (const agent of agents) {
    for (const text of await store.records(agent.id, last)) calls.push({ agent: agent.id, role: agent.role, record: JSON.parse(text) as HistoryRecord });
  }
  calls.sort((a, b) => (a.record.timestamp < b.record.timestamp ? 1 : a.record.timestamp > b.record.timestamp ? -1 : 0));
  return calls
    .slice(0, last)
    .filter(({ record }) => record.reuse_decision?.kept === false)
    .map(({ agent, role: agentRole, record }) => ({
      timestamp: record.timestamp,
      agent,
      role: agentRole,
      method: record.method_name,
      callId: record.call_id,
      reason: (record.reuse_decision as { reason: string }).reason,
      program: record.program ?? null,
    }));
}
