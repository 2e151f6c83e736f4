/**
 * The story of one dynamic call, start to finish. The parts it tells are in their own modules:
 * the call's draft (`draft.ts`), reuse of a kept program (`reuse.ts`), asking the provider with
 * repair (`ask.ts`), running and committing a program (`commit.ts`, `run.ts`, `finalize.ts`).
 */
import { randomUUID } from "node:crypto";
import type { AgentState } from "../state/index.ts";
import { Outcome } from "../shared/index.ts";
import { type AgentReference, findUncloneable, replaceAgentReferences } from "../sandbox/index.ts";
import { endSpan, startSpan } from "../tracing/index.ts";
import { splitArguments } from "./arguments.ts";
import { askProvider, renderCallPrompts, spentBudget } from "./ask.ts";
import { pullFailure, runAttempt } from "./commit.ts";
import { beginStoreCall, endStoreCall } from "../store/index.ts";
import { callOverdue, failed, newDraft, waitsForItself, type Call, type CallDraft, type CallOrigin } from "./draft.ts";
import { settleEffects } from "./effects.ts";
import { finalize } from "./finalize.ts";
import { gatherKnowledge } from "./knowledge.ts";
import { keepIfDecided, reuseFor, runKept } from "./reuse.ts";

export type { CallOrigin } from "./draft.ts";

/**
 * One dynamic call: check the arguments, run a kept program if there is one, else render the
 * prompts and ask the provider (attempts, each one's program run and committed, a mistake fed
 * back to the next), and finalize exactly once. Never throws: every path ends in an
 * {@link Outcome}.
 */
export async function performCall(state: AgentState, method: string, rawArgs: readonly unknown[], origin: CallOrigin): Promise<Outcome> {
  // Closing waits for the application's calls in flight (their delegated calls included) and refuses new ones.
  if (origin.speaker !== "user") return performOpenCall(state, method, rawArgs, origin);
  const store = state.link?.store;
  if (!state.calls.enter()) return closedOutcome("cancelled", "This agent was closed (Agent.close()): it takes no more calls. Make a new one with Agent.for() or Agent.open().");
  if (store !== undefined && !beginStoreCall(store)) {
    state.calls.leave();
    return closedOutcome("store", `The store ${store.label} was closed (store.close()): its agents take no more calls. Open the store and the agent again (Agent.open()) to go on.`);
  }
  // A record written after its caller was answered keeps the call in flight until it is written: closing waits for it.
  let written: Promise<unknown> | undefined;
  try {
    return await performOpenCall(state, method, rawArgs, origin, (write) => (written = write));
  } finally {
    const leave = () => {
      endStoreCall(store);
      state.calls.leave();
    };
    if (written === undefined) leave();
    else void written.finally(leave);
  }
}

/** A call refused before it began, because its agent or store was closed: no record (there is no agent to keep one), not retriable. */
function closedOutcome(errorType: "cancelled" | "store", message: string): Outcome {
  return Outcome.failure(randomUUID(), errorType, message, { retriable: false });
}

async function performOpenCall(state: AgentState, method: string, rawArgs: readonly unknown[], origin: CallOrigin, writtenLater?: (write: Promise<unknown>) => void): Promise<Outcome> {
  const draft = newDraft(state, method, rawArgs, origin);
  draft.span = startSpan(
    `invoke_agent ${state.role}`,
    "internal",
    { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": state.role, "gen_ai.conversation.id": draft.traceId, "improv.call_id": draft.callId, "improv.method": method, "improv.depth": state.depth },
    origin.parentSpan,
  );
  let outcome: Outcome;
  try {
    outcome = await tellCall({ state, draft, perform: performCall });
  } catch (error) {
    outcome = failed(draft, "execution", `improv failed while handling this call: ${error instanceof Error ? error.message : String(error)}`);
  }
  // A call that ran a program was finalized in its agent's queue. Any other is finalized here:
  // a durable agent's in the queue too, so its records reach the store in order; a memory-only
  // agent's at once, not behind a program that is running. Without a context there is no conflict.
  if (!draft.finalized) {
    // A failure's effects are kept or undone before its caller is answered, whenever its record is written.
    await settleEffects(state, draft, outcome, false);
    if (state.link === undefined) outcome = (await finalize(state, draft, outcome)) as Outcome;
    else if (answersBeforeWriting(state, draft, outcome)) {
      // The record is committed after the program that holds the queue, and the caller is answered now.
      draft.time.answeredMs = performance.now();
      const write = state.queue.run(() => finalize(state, draft, outcome)).catch(() => undefined);
      writtenLater?.(write);
    } else outcome = (await state.queue.run(() => finalize(state, draft, outcome))) as Outcome;
  }
  draft.emit({ type: "done", status: outcome.status, errorType: outcome.errorType ?? null });
  // Agents the program handed back: live ones for the application, their text for a program.
  if (outcome.ok && draft.program.agentsInValue) {
    const handOut = origin.handOutAgent ?? ((reference: AgentReference) => reference.text);
    outcome = Outcome.success(outcome.callId, replaceAgentReferences(outcome.value, handOut));
  }
  endSpan(
    draft.span,
    {
      "improv.artifact_hit": draft.reuse.artifactHit,
      "improv.program_source": draft.program.code === null ? undefined : draft.program.programSource,
      "improv.outcome.status": outcome.status,
      "improv.error_type": outcome.errorType,
      "improv.attempts": draft.asked.attempts,
    },
    outcome.errorType,
    outcome.errorMessage,
  );
  return outcome;
}

/**
 * Whether a durable agent's call is answered before its record is committed, because committing
 * it now would wait for a program of the agent that is running: when that program waits for
 * this very call (a tool calling back into its agent), or when the call ended at its
 * `callTimeoutMs` or was cancelled, which answer the caller then and there.
 */
function answersBeforeWriting(state: AgentState, draft: CallDraft, outcome: Outcome): boolean {
  if (draft.waitingAgents.has(state.id)) return true;
  return (outcome.errorType === "timeout" || outcome.errorType === "cancelled") && state.queue.busy;
}

async function tellCall(call: Call): Promise<Outcome> {
  const { state, draft } = call;
  const waits = waitsForItself(state, draft);
  if (waits !== undefined) return waits;
  // 1. The arguments: split into args and kwargs, and able to enter the sandbox.
  let split;
  try {
    split = splitArguments(draft.args);
  } catch (error) {
    return failed(draft, "invalid_input", (error as Error).message);
  }
  draft.args = split.args;
  draft.kwargs = split.kwargs;
  const problem = findUncloneable(split.args, "args") ?? findUncloneable(split.kwargs, "kwargs");
  if (problem !== undefined) return failed(draft, "invalid_input", `Argument ${problem} and cannot enter the sandbox. Pass plain data.`);
  if (draft.signal?.aborted) return failed(draft, "cancelled", "The call was cancelled before it started.");
  const knowledgeEnded = await gatherKnowledge(call);
  if (knowledgeEnded !== undefined) return knowledgeEnded;

  // 2. A kept program for calls of this shape ends the call, unless its own mistake can be repaired.
  const providers = state.providers();
  const asked = "missing" in providers ? undefined : providers;
  const reuse = reuseFor(state, draft, asked?.[0]);
  const kept = reuse === undefined ? undefined : await runKept(call, reuse);
  // A kept program that may have changed the world is not followed by another program.
  if (kept !== undefined && (kept.mistake === undefined || asked === undefined || draft.tools.wrote)) return kept.outcome;
  if (asked === undefined) return failed(draft, "provider", "missing" in providers ? providers.missing : "No provider configured.");

  // 3. The prompts, rendered once a durable agent has seen what other processes committed.
  const pullProblem = await pullFailure(state, draft);
  if (pullProblem !== undefined) return pullProblem;
  const prompts = renderCallPrompts(state, draft);

  // 4. Attempts: ask the provider, run and commit its program; a mistake of the program's own goes to the next attempt as feedback.
  let last = failed(draft, "invalid_code", "The provider produced no usable program.");
  for (let attempt = 1; attempt <= state.options.maxGenerationAttempts; attempt += 1) {
    const overdue = callOverdue(state, draft);
    if (overdue !== undefined) return overdue;
    // A spent budget sends no request: no attempt is made, nor counted.
    const refused = spentBudget(state, draft);
    if (refused !== undefined) return refused;
    draft.asked.attempts = attempt;
    draft.attemptLog.begin(attempt);
    draft.emit({ type: "asking", attempt });
    const written = await askProvider(asked, prompts.request(attempt), state, draft);
    if (written instanceof Outcome) {
      draft.attemptLog.end(written);
      draft.emit({ type: "attempt_failed", attempt, errorType: written.errorType ?? "provider", errorMessage: draft.tree.redact(written.errorMessage ?? "") });
      // Cancelled, a spent token budget, or a failure the provider says asking again cannot help with.
      if (written.errorType === "cancelled" || written.errorType === "budget_exceeded" || (written.errorType === "provider" && !written.retriable)) return written;
      draft.asked.failures.push({ attempt, errorType: written.errorType ?? "provider", message: written.errorMessage ?? "" });
      last = written;
      continue;
    }
    draft.program.code = written.code;
    draft.asked.model = written.model;
    draft.asked.provider = written.provider;
    // Written after a failure's feedback, it is a repair of what failed.
    draft.program.programSource = draft.asked.failures.some((failure) => failure.code !== undefined) ? "repaired" : "generated";
    draft.attemptLog.wrote(written.code, draft.program.programSource, written);
    draft.emit({ type: "program", attempt, source: draft.program.programSource });
    const { outcome, mistake } = await runAttempt(call, written.code, attempt);
    draft.attemptLog.end(outcome, mistake === undefined ? undefined : { errorType: mistake.errorType, message: mistake.message });
    if (mistake !== undefined) draft.emit({ type: "attempt_failed", attempt, errorType: mistake.errorType, errorMessage: draft.tree.redact(mistake.message) });
    if (mistake === undefined) {
      if (outcome.ok && reuse !== undefined) await keepIfDecided(reuse, draft, written.code);
      return outcome;
    }
    draft.asked.failures.push(mistake);
    // Its tool calls may have changed the world: no other program runs on its own after it.
    if (draft.tools.wrote) return outcome;
    last = outcome;
  }
  return last;
}
