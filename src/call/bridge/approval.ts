import type { AskingRun } from "../../sandbox/index.ts";
import { type Call, withinCallCode } from "../draft.ts";
import { safeMessage } from "../../shared/index.ts";

/** What `toolApproval` said of a call that may change the world. */
export type Approval = { readonly approved: true } | { readonly approved: false; readonly ended: true } | { readonly approved: false; readonly ended: false; readonly why: string };

/**
 * Asks the agent's `toolApproval` (in the caller's async context, as the call's code) about a
 * call of `tool` that may change the world: approved (also when no approval is set), denied
 * (`why`: by the application, or the approval failed), or the run ended while it was asked. An
 * approval that never answers does not hold the call: it is waited for until the run ends.
 */
export async function askApproval(call: Call, run: AskingRun, kind: "tool" | "fetch", tool: string, input: unknown): Promise<Approval> {
  const { state, draft } = call;
  const ask = state.options.toolApproval;
  if (ask === undefined) return { approved: true };
  const request = { kind, tool, input, role: state.role, lineage: state.lineage, rootAgentId: state.scopeId, agentId: state.agentId, callId: draft.callId };
  const asked = await withinCallCode(state, draft, Number.POSITIVE_INFINITY, run.signal, () => undefined, () => ask(request));
  if (!asked.ok) return asked.why === "threw" ? { approved: false, ended: false, why: `(the approval failed: ${safeMessage(asked.error)})` } : { approved: false, ended: true };
  return asked.value === true ? { approved: true } : { approved: false, ended: false, why: "by the application" };
}
