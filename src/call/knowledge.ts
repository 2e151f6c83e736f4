/**
 * A step of the call: its knowledge, assembled once before its kept program runs or its first
 * provider request, so repair attempts and conflict re-runs see the same segments.
 */
import { assembleKnowledge } from "../knowledge/index.ts";
import type { Outcome } from "../shared/index.ts";
import { callOverdue, callTimeLeftMs, failed, type Call } from "./draft.ts";

/** The call's outcome when its knowledge ends it (a source failed, the call was cancelled or ran out of time); undefined when it goes on. */
export async function gatherKnowledge(call: Call): Promise<Outcome | undefined> {
  const { state, draft } = call;
  const sources = state.options.knowledge;
  if (sources.length === 0) return undefined;
  draft.knowledge = await assembleKnowledge(sources, {
    role: state.role,
    method: draft.method,
    args: draft.args,
    kwargs: draft.kwargs,
    context: state.context,
    signal: draft.signal,
    timeLeftMs: callTimeLeftMs(draft),
    span: draft.span,
  });
  if (draft.signal?.aborted) return failed(draft, "cancelled", "The call was cancelled while its knowledge was gathered; no program ran.");
  const overdue = callOverdue(state, draft);
  if (overdue !== undefined) return overdue;
  const { failure } = draft.knowledge;
  if (failure === undefined) return undefined;
  const todo = failure.missingValue === true ? "Set the value on the agent before calling" : "Call again";
  return failed(draft, "knowledge", `${failure.message} No program ran. ${todo}, or give the source optional: true so that calls go on without it.`, { retriable: failure.missingValue !== true });
}
