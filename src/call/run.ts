/**
 * One run of a call's program in the sandbox: the context checked, the run on its span, the
 * program's requests answered by the bridge handlers, and the result read into an outcome.
 */
import { Outcome } from "../outcome.ts";
import type { RunFailure } from "../programs/mistake.ts";
import { runProgram } from "../sandbox/host/run-program.ts";
import { endSpan, startSpan } from "../tracing/tracing.ts";
import { findUncloneable } from "./arguments.ts";
import { answerBridge } from "./bridge/handlers.ts";
import { callOverdue, failed, type Call } from "./draft.ts";

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
  // Named for what it is: `execute_tool` is the conventions' name for tool calls, which are its children.
  draft.runSpan = startSpan(`run_program ${draft.method}`, "internal", { "improv.operation": "run_program", "improv.method": draft.method, "improv.call_id": draft.callId, "improv.program_source": draft.programSource }, draft.span);
  const result = await runProgram({
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
    timeoutMs: state.options.executionTimeoutMs,
    callEndsAt: draft.endsAtMs,
    memoryLimitMb: state.options.memoryLimitMb,
    history: state.history,
    onBridge: (request, run) => answerBridge(request, call, run),
    signal,
  });
  draft.console = result.console;
  endSpan(draft.runSpan, {}, result.status === "error" ? result.errorType : undefined, result.status === "error" ? result.message : undefined);
  let end: RunEnd;
  // An outcome reached past the call's time is not the call's: the call ends timeout, and what the program left is not kept.
  const endedLate = result.status === "error" && result.errorType === "timeout" ? undefined : callOverdue(state, draft);
  if (endedLate !== undefined) {
    end = { outcome: endedLate };
  } else if (result.status === "error") {
    const outcome = Outcome.failure(draft.callId, result.errorType, result.message, { retriable: result.retriable });
    end = { outcome, failure: { errorType: result.errorType, ...(result.thrownName === undefined ? {} : { thrownName: result.thrownName }), ...(result.location ? { location: result.location } : {}) } };
  } else {
    draft.valueText = result.valueText;
    end = { outcome: Outcome.success(draft.callId, result.value), context: result.context };
  }
  draft.runOutcome = end.outcome;
  return end;
}
