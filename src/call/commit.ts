/**
 * One attempt's program, run and committed: prepared (shapes, TypeScript), run in the agent's
 * queue (one program of an agent at a time, and for a durable agent under its lock where the
 * store has one), and finalized with the context it left, run again when another process
 * committed to the agent first. A failure that is the program's own mistake is not committed:
 * it comes back for the next attempt's feedback.
 */
import { Outcome } from "../outcome.ts";
import { decideReuse } from "../programs/keep-decision.ts";
import { isOwnMistake, positionInProgram, type RunFailure } from "../programs/mistake.ts";
import { prepareProgram, type PreparedProgram } from "../programs/shape.ts";
import type { AgentState } from "../agent-state.ts";
import type { AgentView } from "../store/store.ts";
import { failed, type Call, type CallDraft } from "./draft.ts";
import { CONFLICT, finalize } from "./finalize.ts";
import type { AttemptFailure } from "./repair.ts";
import { runInSandbox } from "./run.ts";

/** How an attempt ended: its outcome (committed unless `mistake` is set), or the program's own mistake. */
export interface AttemptEnd {
  readonly outcome: Outcome;
  readonly mistake?: AttemptFailure;
}

type Prepared = Extract<PreparedProgram, { ok: true }>;

/** Runs of one attempt's program when other processes keep committing to the same agent first. */
const MAX_CONFLICT_RUNS = 8;

/** A kept program the store no longer holds under the call's key (another process dropped or replaced it): it was not run. */
export const STALE = Symbol("stale");

/**
 * Prepares and runs one attempt's program (`attempt` 0: a kept program, kept under `keptKey`),
 * and commits what it did unless it was its own mistake. A durable agent's run and commit are
 * one turn in its store; for a kept program, the turn also says whether the store still keeps
 * it ({@link STALE} when not).
 */
export async function runAttempt(call: Call, code: string, attempt: number): Promise<AttemptEnd>;
export async function runAttempt(call: Call, code: string, attempt: number, keptKey: string): Promise<AttemptEnd | typeof STALE>;
export async function runAttempt(call: Call, code: string, attempt: number, keptKey?: string): Promise<AttemptEnd | typeof STALE> {
  const { state, draft } = call;
  const prepared = prepareProgram(code, draft.method);
  draft.parsed = prepared.parsed;
  if (!prepared.ok) {
    return { outcome: failed(draft, "invalid_code", prepared.message), mistake: { attempt, errorType: "invalid_code", message: prepared.message, code } };
  }
  return state.queue.run(async () => {
    const { link } = state;
    if (link === undefined) return runAndCommit(call, prepared, code, attempt, undefined);
    // Processes sharing a durable agent take turns where the store has per-agent locks.
    const turn = await link.turn({ waitMs: lockWaitMs(state), programKey: keptKey });
    try {
      if (keptKey !== undefined && turn.program !== undefined && turn.program !== code) return STALE;
      draft.turn = turn;
      return await runAndCommit(call, prepared, code, attempt, turn.stand);
    } finally {
      draft.turn = undefined;
      await turn.end();
    }
  });
}

/** How long a run waits for its agent's lock held by another process: that process's run and commit, with room to spare. */
function lockWaitMs(state: AgentState): number {
  return state.options.executionTimeoutMs * 3 + 10_000;
}

async function runAndCommit(call: Call, prepared: Prepared, code: string, attempt: number, stand: AgentView | undefined): Promise<AttemptEnd> {
  const { state, draft } = call;
  for (let run = 1; ; run += 1) {
    // Up to date with the store before the run, so the program sees the latest context; on the
    // first run, nothing is read when the turn found the agent where this copy already is.
    const pullProblem = state.link === undefined ? undefined : await pullFailure(state, draft, run === 1 ? stand : undefined);
    if (pullProblem !== undefined) return { outcome: (await finalize(state, draft, pullProblem)) as Outcome };
    const baseVersion = state.link?.view.version ?? 0;
    const { outcome, failure, context } = await runInSandbox(call, prepared.source);
    if (failure !== undefined && isOwnMistake(prepared, failure)) return describeMistake(draft, prepared, code, attempt, outcome, failure);
    // Decided before the record is written, so the record and the log line can say it; once, as a re-run after a conflict runs the same program.
    if (outcome.ok && draft.programSource !== "reused") draft.reuseDecision ??= decideReuse(draft.method, state.options.reuse, prepared, draft.args, draft.kwargs);
    const final = await finalize(state, draft, outcome, context === undefined ? undefined : { context, baseVersion });
    if (final !== CONFLICT) return { outcome: final };
    if (draft.tools.wrote) {
      const message = `The agent's context changed in another process while this program ran, and the program called tools that may change the world (${draft.tools.wroteWith.map((name) => `tools.${name}`).join(", ")}), so it was not run again; its changes to context were not kept. Call again if repeating those tool calls is safe.`;
      return { outcome: (await finalize(state, draft, failed(draft, "store", message))) as Outcome };
    }
    if (run >= MAX_CONFLICT_RUNS) {
      const message = `The agent's context kept changing in other processes while this program ran (${run} runs); the program's changes were not kept. Call again.`;
      return { outcome: (await finalize(state, draft, failed(draft, "store", message))) as Outcome };
    }
    // Another process committed first: wait a little (more each time, at random, so the
    // processes fall out of step), then run again on its context.
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * run));
  }
}

/** A `store` outcome when a durable agent cannot be brought up to date (from `stand`, where its turn found it, when known), else undefined. */
export async function pullFailure(state: AgentState, draft: CallDraft, stand?: AgentView): Promise<Outcome | undefined> {
  try {
    await (stand === undefined ? state.pull() : state.link?.catchUp(stand));
    return undefined;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return failed(draft, "store", `The agent could not be brought up to date with its store, so no program ran (${message}). Call again.`);
  }
}

/** A failed run that was the program's own mistake, for the next attempt's feedback. */
function describeMistake(draft: CallDraft, prepared: Prepared, code: string, attempt: number, outcome: Outcome, failure: RunFailure): Required<AttemptEnd> {
  if (outcome.errorType === "invalid_code") {
    // The sandbox's compiler is the judge of what parses; the host's parser says where it failed.
    const { parsed } = prepared;
    const position = !parsed.ok && parsed.line !== undefined && parsed.column !== undefined ? { line: parsed.line, column: parsed.column } : undefined;
    const message = parsed.ok ? (outcome.errorMessage ?? "") : `SyntaxError: ${parsed.message}`;
    const where = position === undefined ? "" : ` (line ${position.line}, column ${position.column})`;
    const unparsed = failed(draft, "invalid_code", `The program does not parse (attempt ${attempt}): ${message}${where}`);
    if (draft.runOutcome === outcome) draft.runOutcome = unparsed;
    return {
      outcome: unparsed,
      mistake: { attempt, errorType: "invalid_code", message, code, ...(position ? { position } : {}) },
    };
  }
  const position = failure.location === undefined ? undefined : positionInProgram(prepared, code, failure.location);
  return { outcome, mistake: { attempt, errorType: outcome.errorType ?? "execution", message: outcome.errorMessage ?? "", code, ...(position ? { position } : {}) } };
}
