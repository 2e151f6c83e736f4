/**
 * Reuse of kept programs (docs/programs.md): where a call's kept programs are and its key there,
 * running the program kept for that key instead of asking the provider, and keeping a new
 * program that worked when the call's decision says so.
 */
import { PROMPT_VERSION } from "./prompt.ts";
import type { Provider } from "../providers/index.ts";
import { programKey, type ProgramShelf, shelfFor, takesPartInReuse } from "../programs/index.ts";
import type { KeptProgram } from "../store/index.ts";
import type { Call, CallDraft } from "./draft.ts";
import { runAttempt, STALE, type AttemptEnd } from "./commit.ts";
import type { AgentState } from "../state/index.ts";

/** Where this call's kept programs are, and its key there. */
export interface Reuse {
  readonly shelf: ProgramShelf;
  readonly key: string;
}

/** The call's place among kept programs; undefined when it takes no part in reuse. */
export function reuseFor(state: AgentState, draft: CallDraft, provider: Provider | undefined): Reuse | undefined {
  if (!takesPartInReuse(draft.method, state.options.reuse)) return undefined;
  const shelf = shelfFor(state.options.store, provider);
  // Programs written for other tools, or another egress policy, are not run with these: the
  // fingerprints of the grant and the policy are part of the key.
  const { fingerprint } = state.options.tools;
  const egress = state.options.egress?.fingerprint;
  const contract = state.options.contract.fingerprint;
  // A program reads `knowledge` by its sources' names and kinds, never by what they returned.
  const knowledge = state.options.knowledge.map((source) => `${source.name}:${source.kind}`).join(",");
  const version = `${PROMPT_VERSION}${fingerprint === "" ? "" : `+tools.${fingerprint}`}${egress === undefined ? "" : `+egress.${egress}`}${contract === "" ? "" : `+contract.${contract}`}${knowledge === "" ? "" : `+knowledge.${knowledge}`}`;
  const scope = state.options.reuse.scope === "agent" ? state.scopeId : undefined;
  return shelf === undefined ? undefined : { shelf, key: programKey(state.lineage, draft.method, draft.args, draft.kwargs, version, scope) };
}

/**
 * Runs the program kept for this call's key, if there is one (undefined when there is none):
 * no prompt, no provider. Its outcome is the call's, unless it failed by its own mistake
 * (`mistake` set): then the call goes on to generate a program with that failure as feedback,
 * and the kept program is charged the failure (dropped after `maxReuseFailures` in a row).
 * Timeouts, cancellations and the like are not the program's doing and are not charged.
 */
export async function runKept(call: Call, reuse: Reuse): Promise<AttemptEnd | undefined> {
  const { state, draft } = call;
  let end: AttemptEnd | typeof STALE = STALE;
  let kept: KeptProgram | undefined;
  // A store's turn may find the program it was asked about dropped or replaced by another
  // process since this one read it: then the store's program now, once more.
  for (let look = 1; end === STALE && look <= 2; look += 1) {
    try {
      const found = look === 1 ? reuse.shelf.get(reuse.key) : reuse.shelf.reload(reuse.key);
      kept = isPending(found) ? await found : found;
    } catch {
      // A store that cannot say: generate instead; the call's own commit reports a failing store.
      return undefined;
    }
    if (kept === undefined) return undefined;
    draft.program.code = kept.code;
    draft.program.programSource = "reused";
    draft.reuse.keptRun = { key: reuse.key, code: kept.code, counted: false };
    draft.attemptLog.begin(0, "reused");
    draft.attemptLog.wrote(kept.code, "reused");
    draft.emit({ type: "program", attempt: 0, source: "reused" });
    end = await runAttempt(call, kept.code, 0, reuse.key);
    if (end === STALE) draft.attemptLog.drop();
    else draft.attemptLog.end(end.outcome, end.mistake === undefined ? undefined : { errorType: end.mistake.errorType, message: end.mistake.message });
  }
  if (end === STALE || kept === undefined) {
    draft.program.code = null;
    draft.program.programSource = "generated";
    draft.reuse.keptRun = undefined;
    return undefined;
  }
  const charged = end.mistake !== undefined ? "mistake" : end.outcome.ok || end.outcome.errorType === "execution" ? "ok" : undefined;
  if (charged !== undefined && !draft.reuse.keptRun?.counted) {
    try {
      const counted = reuse.shelf.ran(reuse.key, kept.code, charged, state.options.maxReuseFailures);
      draft.reuse.keptProgramDropped = isPending(counted) ? await counted : counted;
    } catch {
      // Counts are kept on a best-effort basis: a store that cannot count does not fail the call.
    }
  }
  if (end.mistake !== undefined) {
    draft.asked.failures.push(end.mistake);
    draft.emit({ type: "attempt_failed", attempt: 0, errorType: end.mistake.errorType, errorMessage: end.mistake.message });
  }
  return end;
}

/** Keeps a program that worked, when the call's decision (made before its record was written) says so. */
export async function keepIfDecided(reuse: Reuse, draft: CallDraft, code: string): Promise<void> {
  if (draft.reuse.reuseDecision?.kept !== true) return;
  await Promise.resolve(reuse.shelf.keep({ key: reuse.key, role: draft.role, method: draft.method, code, why: draft.reuse.reuseDecision.reason })).catch(() => undefined);
}

/** Whether a shelf's answer is still to come: an in-memory shelf answers at once, and is not awaited (an await costs the call a turn). */
function isPending<T>(answer: T | Promise<T>): answer is Promise<T> {
  return typeof (answer as { then?: unknown } | null | undefined)?.then === "function";
}
