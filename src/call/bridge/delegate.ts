import type { AgentOptions, AgentState } from "../../state/index.ts";
import { ImprovError, MAX_NAME_LENGTH, type Outcome, RESERVED_NAMES } from "../../shared/index.ts";
import { type AgentReference, type AskingRun, type BridgeAnswer, bridgeFailure, type BridgeOutcome, type DelegateRequest, readDelegateInput, readHandedBackOptions } from "../../sandbox/index.ts";
import type { Call } from "../draft.ts";
import { kw } from "../arguments.ts";
import { withAgents } from "../../tools/index.ts";
import { markProgramMethods } from "../../contracts/index.ts";

/** Options generated code may pass to `delegate(role, options)`; limits can only be lowered. */
const PROGRAM_OPTION_NAMES = new Set(["model", "debug", "historyPreviewLimit", "maxGenerationAttempts", "providerTimeoutMs", "executionTimeoutMs", "callTimeoutMs", "memoryLimitMb", "purpose", "methods"]);
const LOWER_ONLY = ["maxGenerationAttempts", "providerTimeoutMs", "executionTimeoutMs", "callTimeoutMs", "memoryLimitMb"] as const;

/**
 * A program's `delegate(role).method(...args)`: validated here (the request is untrusted),
 * then run as a full dynamic call of the child agent, recorded in the child's history with
 * speaker `tool`, and answered with a plain Outcome. A request refused here is a failure the
 * program sees as an error Outcome.
 */
export async function answerDelegate(request: DelegateRequest, call: Call, run: AskingRun): Promise<BridgeAnswer<"delegate">> {
  const { state, draft } = call;
  const { role, method } = request;
  if (role.trim() === "" || role.length > MAX_NAME_LENGTH) return bridgeFailure("invalid_input", "delegate(role) needs a non-empty role of at most 200 characters.");
  if (method === "" || method.length > MAX_NAME_LENGTH) return bridgeFailure("invalid_input", "A delegated method name must be 1 to 200 characters long.");
  if (RESERVED_NAMES.has(method)) return bridgeFailure("invalid_input", `"${method}" is a reserved name on agents and cannot be called through delegate.`);
  // Names are kept as they are (agent ids in a store, spans): none may carry a credential the tree sent.
  if (draft.tree.redact(role) !== role || draft.tree.redact(method) !== method) {
    return bridgeFailure("invalid_input", "delegate(role).method(): the role or method name holds a credential this call sent (egress.headers), and names are kept as they are. Name roles and methods with fixed words.");
  }
  if (state.depth + 1 > state.options.maxDelegationDepth) {
    return bridgeFailure("budget_exceeded", `delegate("${role}") would reach depth ${state.depth + 1}, beyond maxDelegationDepth ${state.options.maxDelegationDepth}.`);
  }
  const input = readDelegateInput(request);
  if (!input.ok) return bridgeFailure("invalid_input", input.message);
  const options = programOptions(state, input.options);
  if (typeof options === "string") return bridgeFailure("invalid_input", options);
  let child: AgentState;
  try {
    child = state.child(role, options);
  } catch (error) {
    return bridgeFailure(error instanceof ImprovError ? error.errorType : "invalid_input", (error as Error).message);
  }
  // The child's call ends with the calling program's run, and by the end of the calling call at the latest.
  const origin = {
    speaker: "tool",
    parentCallId: draft.callId,
    traceId: draft.traceId,
    parentSpan: draft.program.runSpan,
    signal: run.signal,
    endsAtMs: draft.endsAtMs,
    waitingAgents: withAgents(draft.waitingAgents, state.id),
    parentTools: draft.tools,
    inCaller: draft.inCaller,
    tree: draft.tree,
  } as const;
  const began = performance.now();
  const outcome = await call.perform(child, method, input.kwargs === undefined ? input.args : [...input.args, kw(input.kwargs)], origin);
  draft.time.delegatedMs += performance.now() - began;
  // Its value was decoded from the child's run against the result limit: measured already.
  return { ok: true, value: toBridgeOutcome(outcome), measured: true };
}

/**
 * The child a program's `delegate(role, options)` made and handed back in its value, as the
 * agent it is on the host (the same one the program's calls reached); undefined when it cannot
 * be (its options no longer pass, or it would be too deep).
 */
export function handedBackChild(state: AgentState, reference: AgentReference): AgentState | undefined {
  if (state.depth + 1 > state.options.maxDelegationDepth || reference.role.trim() === "" || reference.role.length > MAX_NAME_LENGTH) return undefined;
  const options = readHandedBackOptions(reference.options);
  if (options === null) return undefined;
  const checked = programOptions(state, options);
  if (typeof checked === "string") return undefined;
  try {
    return state.child(reference.role, checked);
  } catch {
    return undefined;
  }
}

/** An Outcome in the field names generated code sees. */
function toBridgeOutcome(outcome: Outcome): BridgeOutcome {
  return outcome.ok
    ? { status: "ok", ok: true, value: outcome.value, retriable: false }
    : { status: "error", ok: false, error_type: outcome.errorType ?? "execution", error_message: outcome.errorMessage ?? "", retriable: outcome.retriable };
}

/** Options a program gave `delegate(role, options)`, checked, with limits lowered to the parent's; or why they are refused. */
function programOptions(state: AgentState, options: Record<string, unknown> | undefined): AgentOptions | string | undefined {
  if (options === undefined) return undefined;
  for (const name of Object.keys(options)) {
    if (!PROGRAM_OPTION_NAMES.has(name)) return `delegate option "${name}" is not allowed from generated code. Allowed: ${[...PROGRAM_OPTION_NAMES].join(", ")}.`;
  }
  for (const name of LOWER_ONLY) {
    const given = options[name];
    if (typeof given === "number" && given > state.options[name]) options[name] = state.options[name];
  }
  markProgramMethods(options.methods);
  return options as AgentOptions;
}
