import type { HistoryRecord } from "../history/index.ts";
import type { Store } from "../store/index.ts";
import { readRecords, type StoredRecord } from "./record-lines.ts";

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
 * given), newest first, and the records read that are not history records (`skipped`). Each agent
 * gives at most its latest `last` records, so the work is bounded by the number of agents times
 * `last`, never by the length of their histories.
 */
export async function refusedPrograms(store: Store, last: number, role?: string): Promise<{ refused: RefusedProgram[]; skipped: StoredRecord[] }> {
  const agents = (await store.agents()).filter((agent) => role === undefined || agent.role === role);
  const calls: { readonly agent: string; readonly role: string; readonly record: HistoryRecord }[] = [];
  const skipped: StoredRecord[] = [];
  for (const agent of agents) {
    for (const read of await readRecords(store, agent, last)) {
      if ("record" in read) calls.push({ agent: agent.id, role: agent.role, record: read.record });
      else skipped.push(read);
    }
  }
  calls.sort((a, b) => (a.record.timestamp < b.record.timestamp ? 1 : a.record.timestamp > b.record.timestamp ? -1 : 0));
  const refused = calls
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
  return { refused, skipped };
}
