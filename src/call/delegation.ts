import type { AgentState } from "../agent-state.ts";
import type { AgentOptions } from "../options.ts";
import type { Outcome } from "../outcome.ts";
import { MAX_NAME_LENGTH, RESERVED_NAMES } from "../reserved-names.ts";
import type { BridgeOutcome, DelegateRequest } from "../sandbox/protocol.ts";
import { readDelegateInput, readKeptValue } from "../sandbox/host/inbound.ts";
import type { CallOrigin } from "./lifecycle.ts";
import type { CallDraft } from "./finalize.ts";

type PerformCall = (state: AgentState, method: string, args: readonly unknown[], origin: CallOrigin) => Promise<Outcome>;

/** Options generated code may pass to `delegate(role, options)`; limits can only be lowered. */
const PROGRAM_OPTION_NAMES = new Set(["model", "debug", "historyPreviewLimit", "maxGenerationAttempts", "providerTimeoutMs", "executionTimeoutMs", "memoryLimitMb"]);
const LOWER_ONLY = ["maxGenerationAttempts", "providerTimeoutMs", "executionTimeoutMs", "memoryLimitMb"] as const;

function refuse(errorType: "invalid_input" | "budget_exceeded", message: string): BridgeOutcome {
  return { status: "error", ok: false, error_type: errorType, error_message: message, retriable: false };
}

/** An Outcome in the field names generated code sees. */
export function toBridgeOutcome(outcome: Outcome): BridgeOutcome {
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
  return options as AgentOptions;
}

/**
 * A program's `delegate(role).method(...args)`: validated here (the request is untrusted),
 * then run as a full dynamic call of the child agent, recorded in the child's history with
 * speaker `tool`, and answered with a plain Outcome.
 */
export async function handleDelegate(state: AgentState, draft: CallDraft, request: DelegateRequest, performCall: PerformCall): Promise<BridgeOutcome> {
  const { role, method } = request;
  if (role.trim() === "" || role.length > MAX_NAME_LENGTH) return refuse("invalid_input", "delegate(role) needs a non-empty role of at most 200 characters.");
  if (method === "" || method.length > MAX_NAME_LENGTH) return refuse("invalid_input", "A delegated method name must be 1 to 200 characters long.");
  if (RESERVED_NAMES.has(method)) return refuse("invalid_input", `"${method}" is a reserved name on agents and cannot be called through delegate.`);
  if (state.depth + 1 > state.options.maxDelegationDepth) {
    return refuse("budget_exceeded", `delegate("${role}") would reach depth ${state.depth + 1}, beyond maxDelegationDepth ${state.options.maxDelegationDepth}.`);
  }
  const input = readDelegateInput(request);
  if (!input.ok) return refuse("invalid_input", input.message);
  const options = programOptions(state, input.options);
  if (typeof options === "string") return refuse("invalid_input", options);
  let child: AgentState;
  try {
    child = state.child(role, options);
  } catch (error) {
    return refuse("invalid_input", (error as Error).message);
  }
  const outcome = await performCall(child, method, input.args, { speaker: "tool", parentCallId: draft.callId, traceId: draft.traceId, parentSpan: draft.toolSpan });
  return toBridgeOutcome(outcome);
}

/**
 * A program's `content(ref)`: a copy of a value the agent keeps (in this process, or for a
 * durable agent in its store, where another process may have kept it), or no value
 * (`ok: false`) when it keeps none under `ref`.
 */
export async function handleContent(state: AgentState, ref: string): Promise<BridgeOutcome> {
  const found = await keptValue(state, ref);
  return found.kept ? { status: "ok", ok: true, value: found.value, retriable: false } : { status: "error", ok: false, error_type: "invalid_input", error_message: `No value is kept under "${ref}".`, retriable: false };
}

/** The value `ref` names, from this process's copy or the agent's store; a value that no longer decodes counts as not kept. */
export async function keptValue(state: AgentState, ref: string): Promise<{ kept: boolean; value?: unknown }> {
  try {
    if (state.values.has(ref)) return { kept: true, value: state.values.get(ref) };
    if (state.link === undefined || state.options.keepValues.count === 0) return { kept: false };
    const text = await state.link.store.value(state.link.id, ref);
    return text === undefined ? { kept: false } : { kept: true, value: readKeptValue(text) };
  } catch {
    return { kept: false };
  }
}
