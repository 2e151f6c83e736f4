/**
 * One attempt's program, run and committed: prepared (shapes, TypeScript), run in the agent's
 * queue (one program of an agent at a time, and for a durable agent in its turn in the store:
 * under its lock, or its lease once another process held it), and finalized with the context it
 * left, run again when another process committed to the agent first (under the agent's lease,
 * where the store has leases, so the re-run does not lose again). A failure that is the
 * program's own mistake is not committed: it comes back for the next attempt's feedback.
 */
import { Outcome } from "../shared/index.ts";
import { decideReuse, isOwnMistake, positionInProgram, type PreparedProgram, prepareProgram, type RunFailure } from "../programs/index.ts";
import type { AgentState } from "../state/index.ts";
import type { AgentTurn, AgentView } from "../store/index.ts";
import { callTimeLeftMs, failed, timeSpent, type Call, type CallDraft } from "./draft.ts";
import { CONFLICT, finalize } from "./finalize.ts";
import type { AttemptFailure } from "./repair.ts";
import { runInSandbox } from "./run.ts";

/** How an attempt ended: its outcome (committed unless `mistake` is set), or the program's own mistake. */
export interface AttemptEnd {
  readonly outcome: Outcome;
  readonly mistake?: AttemptFailure;
}

type Prepared = Extract<PreparedProgram, { ok: true }>;

/** Runs of one attempt's program when other processes keep committing to the same agent first, on a store without leases. */
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
  draft.program.parsed = prepared.parsed;
  if (!prepared.ok) {
    return { outcome: failed(draft, "invalid_code", prepared.message), mistake: { attempt, errorType: "invalid_code", message: prepared.message, code } };
  }
  const turn = await inTurn(call, async () => {
    const { link } = state;
    if (link === undefined) return runAndCommit(call, prepared, code, attempt, undefined);
    // Processes sharing a durable agent take turns where the store has per-agent locks.
    // Past the call's time the run would not start anyway (it ends timeout): no longer wait for the lock than that.
    const waitBegan = performance.now();
    const turn = await link.turn({ waitMs: Math.min(lockWaitMs(state), callTimeLeftMs(draft)), programKey: keptKey, leaseMs: leaseMs(state) });
    draft.time.turnWaitMs += performance.now() - waitBegan;
    try {
      if (keptKey !== undefined && turn.program !== undefined && turn.program !== code) return STALE;
      draft.turn = turn;
      return await runAndCommit(call, prepared, code, attempt, turn);
    } finally {
      draft.turn = undefined;
      await turn.end();
    }
  });
  return turn.ran ? turn.value : { outcome: turn.outcome };
}

type Turn<T> = { readonly ran: true; readonly value: T } | { readonly ran: false; readonly outcome: Outcome };

/**
 * Runs `task` in its agent's queue (one program of an agent at a time). A call that waits there
 * behind the agent's earlier calls still ends at its `callTimeoutMs`, or when it is cancelled:
 * its task never runs, and its caller is answered at once (see `performOpenCall`). Once
 * the task has started, the run's own limits apply.
 */
async function inTurn<T>(call: Call, task: () => Promise<T>): Promise<Turn<T>> {
  const { state, draft } = call;
  if (!state.queue.busy) return { ran: true, value: await state.queue.run(task) };
  const began = performance.now();
  let phase: "waiting" | "started" | "ended" = "waiting";
  let end!: (outcome: Outcome) => void;
  const ended = new Promise<Outcome>((resolve) => (end = resolve));
  const endWaiting = (errorType: "timeout" | "cancelled", message: () => string) => {
    if (phase !== "waiting") return;
    phase = "ended";
    end(failed(draft, errorType, message()));
  };
  const waited = () => `${Math.round(performance.now() - began)} ms`;
  const timer = setTimeout(
    () => endWaiting("timeout", () => `The call took longer than callTimeoutMs (${draft.callTimeoutMs} ms), ${waited()} of it waiting for this agent's earlier calls to end (an agent runs one program at a time), so its program did not run${timeSpent(draft)}.`),
    callTimeLeftMs(draft),
  );
  const onAbort = () => endWaiting("cancelled", () => `The call was cancelled after waiting ${waited()} for this agent's earlier calls to end; its program did not run.`);
  if (draft.signal?.aborted) onAbort();
  else draft.signal?.addEventListener("abort", onAbort, { once: true });
  const turn = state.queue.run(async (): Promise<Turn<T>> => {
    if (phase === "ended") return { ran: false, outcome: await ended };
    phase = "started";
    return { ran: true, value: await task() };
  });
  try {
    return await Promise.race([turn, ended.then((outcome): Turn<T> => ({ ran: false, outcome }))]);
  } finally {
    clearTimeout(timer);
    draft.signal?.removeEventListener("abort", onAbort);
  }
}

/** How long a run waits for its agent's lock held by another process: that process's run and commit, with room to spare. */
function lockWaitMs(state: AgentState): number {
  return state.options.executionTimeoutMs * 3 + 10_000;
}

/** How long the agent's lease lasts unless renewed (its holder renews it while its run lasts): a few times the program's time limit, so a dead holder's lapses soon. */
function leaseMs(state: AgentState): number {
  return Math.max(2_000, state.options.executionTimeoutMs * 3);
}

/**
 * A program whose own text holds a credential its call tree sent is never kept: kept programs are
 * stored and served again, and nothing improv writes may hold one. The record
 * shows the program redacted; a kept copy could not be, since it would no longer be the program.
 */
const CREDENTIAL_IN_TEXT = { kept: false, reason: "its text holds a credential this call sent (egress.headers), and a kept program is stored" } as const;

function holdsCredential(draft: CallDraft, code: string): boolean {
  return draft.tree.redact(code) !== code;
}

async function runAndCommit(call: Call, prepared: Prepared, code: string, attempt: number, turn: AgentTurn | undefined): Promise<AttemptEnd> {
  const { state, draft } = call;
  for (let run = 1; ; run += 1) {
    // Up to date with the store before the run, so the program sees the latest context; on the
    // first run, nothing is read when the turn found the agent where this copy already is.
    const pullProblem = state.link === undefined ? undefined : await pullFailure(state, draft, run === 1 ? turn?.stand : undefined);
    if (pullProblem !== undefined) return { outcome: (await finalize(state, draft, pullProblem)) as Outcome };
    const baseVersion = state.link?.view.version ?? 0;
    const requestsBefore = draft.tree.requests;
    const { outcome, failure, context } = await runInSandbox(call, prepared.source);
    if (failure !== undefined && isOwnMistake(prepared, failure)) return describeMistake(draft, prepared, code, attempt, outcome, failure);
    // Decided before the record is written, so the record and the log line can say it; once, as a
    // re-run after a conflict runs the same program, except that a re-run may send credentials the
    // first did not, so what its text holds is looked at after every run.
    if (outcome.ok && draft.program.programSource !== "reused") {
      if (holdsCredential(draft, code)) draft.reuse.reuseDecision = CREDENTIAL_IN_TEXT;
      else draft.reuse.reuseDecision ??= decideReuse(draft.method, state.options.reuse, prepared, draft.args, draft.kwargs, knowledgeTexts(draft));
    }
    const final = await finalize(state, draft, outcome, context === undefined ? undefined : { context, baseVersion });
    if (final !== CONFLICT) return { outcome: final };
    state.link?.conflicted();
    draft.tree.rewindRequests(requestsBefore);
    if (draft.tools.wrote) {
      const message = `The agent's context changed in another process while this program ran, and the program called tools that may change the world (${draft.tools.wroteWith.map((name) => `tools.${name}`).join(", ")}), so it was not run again; its changes to context were not kept. Call again if repeating those tool calls is safe.`;
      return { outcome: (await finalize(state, draft, failed(draft, "store", message))) as Outcome };
    }
    if (run >= MAX_CONFLICT_RUNS) {
      const message = `The agent's context kept changing in other processes while this program ran (${run} runs); the program's changes were not kept. Call again.`;
      return { outcome: (await finalize(state, draft, failed(draft, "store", message))) as Outcome };
    }
    if (turn?.take !== undefined) {
      // Another process committed first: run again on its context, holding the agent's lease.
      const waitBegan = performance.now();
      const taken = await turn.take(callTimeLeftMs(draft));
      draft.time.turnWaitMs += performance.now() - waitBegan;
      if (taken) continue;
      if (callTimeLeftMs(draft) <= 0) {
        const message = `The call took longer than callTimeoutMs (${draft.callTimeoutMs} ms) waiting for this agent's turn: another process committed to the agent while its program ran (${run} ${run === 1 ? "run" : "runs"}), and the process holding the agent's turn did not end it in time, so the program's changes were not kept${timeSpent(draft)}. Call again, or give the call more time.`;
        return { outcome: (await finalize(state, draft, failed(draft, "timeout", message))) as Outcome };
      }
      // The lease could not be taken (the store failed): the next pull or commit says how.
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
    if (draft.program.runOutcome === outcome) draft.program.runOutcome = unparsed;
    return {
      outcome: unparsed,
      mistake: { attempt, errorType: "invalid_code", message, code, ...(position ? { position } : {}) },
    };
  }
  const position = failure.location === undefined ? undefined : positionInProgram(prepared, code, failure.location);
  return { outcome, mistake: { attempt, errorType: outcome.errorType ?? "execution", message: outcome.errorMessage ?? "", code, ...(position ? { position } : {}) } };
}

/** What the call's knowledge brought that varies from call to call: retrieved passages and state values (a literal source is the same for every call). */
function knowledgeTexts(draft: CallDraft): string[] {
  return (draft.knowledge?.segments ?? []).flatMap((segment) => (segment.kind === "literal" ? [] : segment.results === undefined ? [segment.text] : segment.results.map((found) => found.content)));
}
