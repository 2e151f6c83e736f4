/**
 * One run of a call's program in the sandbox: the context checked, the run on its span, the
 * program's requests answered by the bridge handlers, and the result read into an outcome.
 */
import { Outcome } from "../shared/index.ts";
import type { RunFailure } from "../programs/index.ts";
import { findUncloneable, mayHoldAgents, type ProgramResult, rewriteResult, runProgram } from "../sandbox/index.ts";
import { endSpan, startSpan } from "../tracing/index.ts";
import { answerBridge } from "./bridge/handlers.ts";
import { callOverdue, failed, timeSpent, type Call } from "./draft.ts";
import { checkReturns } from "./returns.ts";
import { showProgram } from "../log/index.ts";
import { redactEncoded, type Redactor } from "../egress/index.ts";

/** How a run ended: its outcome; why it failed (for the mistake rule), or the context it left. */
export interface RunEnd {
  readonly outcome: Outcome;
  readonly failure?: RunFailure;
  readonly context?: Record<string, unknown>;
}

export async function runInSandbox(call: Call, code: string): Promise<RunEnd> {
  const { state, draft } = call;
  const { signal } = draft;
  if (signal?.aborted) return { outcome: failed(draft, "cancelled", "The call was cancelled before its program ran.") };
  const overdue = callOverdue(state, draft);
  if (overdue !== undefined) return { outcome: overdue };
  const contextProblem = findUncloneable(state.context, "context");
  if (contextProblem !== undefined) {
    return { outcome: failed(draft, "invalid_input", `The agent's ${contextProblem} and cannot enter the sandbox. Keep plain data in context.`) };
  }
  if (state.options.verbose) showProgram(state.role, draft.method, draft.callId, draft.asked.attempts, draft.program.programSource, code);
  // Named for what it is: `execute_tool` is the conventions' name for tool calls, which are its children.
  draft.program.runSpan = startSpan(`run_program ${draft.method}`, "internal", { "improv.operation": "run_program", "improv.method": draft.method, "improv.call_id": draft.callId, "improv.program_source": draft.program.programSource }, draft.span);
  draft.emit({ type: "running", attempt: draft.asked.attempts });
  const runBegan = performance.now();
  const ran = await runProgram({
    agentId: state.id,
    callId: draft.callId,
    code,
    args: draft.args as unknown[],
    kwargs: draft.kwargs as Record<string, unknown>,
    context: state.context,
    depth: state.depth,
    maxDelegationDepth: state.options.maxDelegationDepth,
    tools: state.options.tools.names,
    fetch: state.options.egress !== undefined,
    knowledge: draft.knowledge?.segmentsJson ?? "[]",
    timeoutMs: draft.executionTimeoutMs,
    callEndsAt: draft.endsAtMs,
    memoryLimitMb: state.options.memoryLimitMb,
    history: state.history,
    onBridge: (request, run) => answerBridge(request, call, run),
    signal,
  });
  draft.time.runMs += performance.now() - runBegan;
  // Only a call whose tree sent credentials has a redactor: the others pay nothing here.
  const redactor = draft.tree.egress.redactor;
  const result = redactor === undefined ? ran : withoutCredentials(ran, redactor);
  draft.program.console = result.console;
  endSpan(draft.program.runSpan, {}, result.status === "error" ? result.errorType : undefined, result.status === "error" ? result.message : undefined);
  let end: RunEnd;
  // An outcome reached past the call's time is not the call's: the call ends timeout, and what the program left is not kept.
  const endedLate = result.status === "error" && result.errorType === "timeout" ? undefined : callOverdue(state, draft);
  if (endedLate !== undefined) {
    end = { outcome: endedLate };
  } else if (result.status === "error") {
    // A run stopped at the call's time limit says where the call's time went.
    const message = result.errorType === "timeout" && result.message.includes("callTimeoutMs") ? `${result.message.replace(/\.$/, "")}${timeSpent(draft)}.` : result.message;
    const outcome = Outcome.failure(draft.callId, result.errorType, message, { retriable: result.retriable });
    end = { outcome, failure: { errorType: result.errorType, ...(result.thrownName === undefined ? {} : { thrownName: result.thrownName }), ...(result.location ? { location: result.location } : {}) } };
  } else {
    // A context the next run (or the store) could not take is refused now, as this program's failure: the agent stays as it was.
    const unkept = findUncloneable(result.context, "context");
    end = unkept === undefined ? await checkedEnd(call, result.value, result.valueText, result.context) : { outcome: failed(draft, "execution", `The program left context the agent cannot keep: ${unkept}. Keep context to plain data, less deeply nested.`) };
  }
  draft.program.runOutcome = end.outcome;
  return end;
}

/**
 * A run's result with every recognizable copy of the credentials its call tree sent taken out
 *: the value (the caller's, the one checked against `returns` and the one kept),
 * the context to be committed, the console lines and the error message.
 */
function withoutCredentials(result: ProgramResult, redactor: Redactor): ProgramResult {
  return rewriteResult(result, (encoded) => redactEncoded(encoded, redactor), (text) => redactor.redact(text), "with the credentials this call sent (egress.headers) taken out");
}

/**
 * A run that succeeded, its value checked against the method's `returns` (where declared): the
 * schema's output for the caller; a mismatch is the program's mistake (`invalid_output`,
 * repaired with the problems as feedback); a schema that could not check ends the call
 * `invalid_output` as it is. The value kept for `content(ref)` is the program's own.
 */
async function checkedEnd(call: Call, value: unknown, valueText: string, context: Record<string, unknown>): Promise<RunEnd> {
  const { draft } = call;
  const checked = await checkReturns(call, value);
  if (checked === undefined || checked.ok) {
    draft.program.valueText = valueText;
    draft.program.agentsInValue = mayHoldAgents(valueText);
    return { outcome: Outcome.success(draft.callId, checked === undefined ? value : checked.value), context };
  }
  if (checked.mismatch) {
    const outcome = failed(draft, "invalid_output", `The value ${draft.method} returned does not match its returns schema: ${checked.problems}`);
    return { outcome, failure: { errorType: "invalid_output" } };
  }
  return { outcome: failed(draft, "invalid_output", `The returns schema of ${draft.method} could not check the value: ${checked.problem}.`) };
}
