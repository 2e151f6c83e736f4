/**
 * A failed call's effects: once a call is known to have failed after its programs'
 * writes reached their tools, the agent's `onFailure` is applied, once, before the call
 * resolves and its record is written: `keep` leaves the effects, `revert` undoes them, a
 * function decides (bounded in time; its failure is logged, never thrown at the caller).
 */
import { type CallFailure, DEFAULT_TOOL_TIMEOUT_MS, effectsOf, undoEffects } from "../tools/index.ts";
import { type Outcome, safeMessage } from "../shared/index.ts";
import type { AgentState } from "../state/index.ts";
import { type CallCode, type CallDraft, runForCall, withinCallCode } from "./draft.ts";

/**
 * Applies the agent's `onFailure` to the call's effects when `outcome` is a failure and there are
 * some; at most once per call. `holdsAgent`: whether the call holds its agent's turn meanwhile (a
 * call of the agent from `onFailure` or a revert would then wait for itself, and is refused).
 */
export function settleEffects(state: AgentState, draft: CallDraft, outcome: Outcome, holdsAgent: boolean): Promise<void> {
  const { undo, tools } = draft;
  if (undo.settled !== undefined) return undo.settled;
  if (outcome.ok || tools.effects.length === 0) return Promise.resolve();
  const rule = state.options.onFailure;
  undo.rule = typeof rule === "function" ? "function" : rule;
  undo.settled = rule === "keep" ? Promise.resolve() : applyRule(state, draft, outcome, rule, { agentWaits: holdsAgent, tree: draft.tree.forCleanUp() });
  return undo.settled;
}

async function applyRule(state: AgentState, draft: CallDraft, outcome: Outcome, rule: Exclude<AgentState["options"]["onFailure"], "keep">, code: CallCode): Promise<void> {
  let undone: Promise<void> | undefined;
  const revert = () => (undone ??= undoEffects(draft.tools.effects, draft.callId, (work) => runForCall(state, draft, work, code), draft.span));
  if (rule === "revert") return revert();
  // Once the function is done (or its time is up), the record is written: an undo it had not begun is refused, never made unrecorded.
  let settled = false;
  const failure: CallFailure = {
    callId: draft.callId,
    role: draft.role,
    method: draft.method,
    errorType: outcome.errorType ?? "execution",
    // As the caller is told it: without a credential the call's tree sent.
    errorMessage: draft.tree.redact(outcome.errorMessage ?? ""),
    effects: Object.freeze(effectsOf(draft.tools.effects)),
    revert: async () => {
      if (settled && undone === undefined) throw new Error("failure.revert() was called after onFailure had settled (or its time was up): the call's record is written, and nothing was undone.");
      await revert();
      return Object.freeze(effectsOf(draft.tools.effects));
    },
  };
  const limitMs = handlerLimitMs(draft);
  const answer = await withinCallCode(state, draft, limitMs, undefined, () => new Error(`it did not settle within ${limitMs} ms`), () => rule(failure), code);
  settled = true;
  if (!answer.ok) draft.undo.handlerError = answer.why === "timeout" ? `onFailure did not settle within ${limitMs} ms` : `onFailure threw: ${safeMessage(answer.error)}`;
  // A revert the function began ends before the record says what became of the effects.
  await undone;
}

/** How long a function given as `onFailure` may take: a tool's default time, and room to wait for each effect and undo it. @unit ms */
function handlerLimitMs(draft: CallDraft): number {
  return draft.tools.effects.reduce((sum, entry) => sum + 2 * (entry.write?.timeoutMs ?? 0), DEFAULT_TOOL_TIMEOUT_MS);
}
