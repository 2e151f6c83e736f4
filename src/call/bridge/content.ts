import type { AgentState } from "../../state/index.ts";
import { type BridgeAnswer, bridgeFailure, type ContentRequest, readKeptValue, replaceAgentReferences } from "../../sandbox/index.ts";
import type { Call } from "../draft.ts";

/**
 * A program's `content(ref)`: a copy of a value the agent keeps (in this process, or for a
 * durable agent in its store, where another process may have kept it), or a failure (the
 * program gets `undefined`) when it keeps none under `ref`.
 */
export async function answerContent(request: ContentRequest, call: Call): Promise<BridgeAnswer<"content">> {
  const found = await keptValue(call.state, request.ref);
  // A kept value is decoded from its text against the result limit: measured already. An agent in it is its text for a program.
  return found.kept ? { ok: true, value: replaceAgentReferences(found.value, (reference) => reference.text), measured: true } : bridgeFailure("invalid_input", `No value is kept under "${request.ref}".`);
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
