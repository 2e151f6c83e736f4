/**
 * Asking the provider for a program: the prompts of a call, each attempt's request (carrying the
 * latest failure's feedback, so a retry is a repair and not the same request again), and one
 * attempt bounded by `providerTimeoutMs` and the call's signal, on a `chat` span, its tokens
 * counted.
 */
import type { AgentState } from "../agent-state.ts";
import { Outcome } from "../outcome.ts";
import { ProviderError, type Generation, type GenerationRequest, type Provider } from "../providers/provider.ts";
import { OpenAIProvider } from "../providers/openai.ts";
import { ScriptedProvider } from "../providers/scripted.ts";
import { endSpan, startSpan } from "../tracing/tracing.ts";
import { callTimeLeftMs, callTimeoutMessage, failed, type CallDraft } from "./draft.ts";
import { choosePreview } from "./preview.ts";
import { renderPrompts, type PromptInput } from "./prompt.ts";
import { within } from "./within.ts";
import { feedbackBlock } from "./repair.ts";

/** A program the provider wrote for one attempt. */
export interface WrittenProgram {
  readonly code: string;
  readonly model: string;
}

/** The call's prompts, rendered once; each attempt's request from them. */
export interface CallPrompts {
  /** The request of `attempt` (1-based), with the feedback of the latest failure that had a program to show. */
  request(attempt: number): GenerationRequest;
}

/** Renders the call's prompts (the draft keeps them for the log line). */
export function renderCallPrompts(state: AgentState, draft: CallDraft): CallPrompts {
  const { method, args, kwargs } = draft;
  const input: PromptInput = {
    role: state.role,
    tools: state.options.tools,
    egress: state.options.egress,
    contract: state.options.contract,
    method,
    args,
    kwargs,
    contextKeys: Object.keys(state.context),
    historyCount: state.history.length,
    historyPreview: choosePreview(state.history, state.options.historyPreview, { method, args, kwargs }),
    previewMaxChars: state.options.historyPreview.maxChars,
  };
  const prompts = renderPrompts(input);
  draft.system = prompts.system;
  draft.user = prompts.user;
  return {
    request(attempt) {
      // The latest failure that had a program to show (a provider failure after it has none).
      const latest = draft.failures.findLast((failure) => failure.code !== undefined);
      const feedback = latest === undefined ? "" : feedbackBlock(latest);
      const user = feedback === "" ? prompts.user : renderPrompts({ ...input, feedback }).user;
      draft.user = user;
      return {
        role: state.role,
        method,
        attempt,
        system: prompts.system,
        user,
        args,
        kwargs,
        ...(latest?.code === undefined ? {} : { feedback: { code: latest.code, error: latest.message } }),
        ...(state.options.model === undefined ? {} : { model: state.options.model }),
      };
    },
  };
}

/** One attempt: the program the provider wrote, or the attempt's error outcome. */
export async function askProvider(provider: Provider, request: GenerationRequest, state: AgentState, draft: CallDraft): Promise<Outcome | WrittenProgram> {
  const configured = (provider as { model?: unknown }).model;
  const requestModel = request.model ?? (typeof configured === "string" ? configured : undefined);
  const span = startSpan(
    requestModel === undefined ? "chat" : `chat ${requestModel}`,
    "client",
    { "gen_ai.operation.name": "chat", "gen_ai.provider.name": providerName(provider), "gen_ai.request.model": requestModel, "improv.call_id": draft.callId, "improv.attempt": request.attempt },
    draft.span,
  );
  const answer = await askOnce(provider, request, state, draft);
  endSpan(
    span,
    answer instanceof Outcome ? {} : { "gen_ai.response.model": answer.model, "gen_ai.usage.input_tokens": answer.usage?.promptTokens, "gen_ai.usage.output_tokens": answer.usage?.completionTokens },
    answer instanceof Outcome ? answer.errorType : undefined,
    answer instanceof Outcome ? answer.errorMessage : undefined,
  );
  return answer instanceof Outcome ? answer : { code: answer.code, model: answer.model };
}

/** How a provider is named on spans (`gen_ai.provider.name`). */
function providerName(provider: Provider): string {
  if (provider instanceof OpenAIProvider) return "openai";
  if (provider instanceof ScriptedProvider) return "improv.scripted";
  const named = (provider as { name?: unknown }).name;
  return typeof named === "string" && named !== "" ? named : "custom";
}

/** One provider attempt, bounded by providerTimeoutMs and the call's signal. */
async function askOnce(provider: Provider, request: GenerationRequest, state: AgentState, draft: CallDraft): Promise<Outcome | (WrittenProgram & { usage?: Generation["usage"] })> {
  const { providerTimeoutMs } = state.options;
  // Within providerTimeoutMs, and within what is left of the call's callTimeoutMs.
  const limitMs = Math.min(providerTimeoutMs, callTimeLeftMs(draft));
  const timeoutMessage = limitMs < providerTimeoutMs ? callTimeoutMessage(draft) : `The provider did not answer within providerTimeoutMs (${providerTimeoutMs} ms).`;
  const began = performance.now();
  const answer = await within(limitMs, draft.signal, () => new Error(timeoutMessage), (signal) => provider.generate(request, signal));
  draft.providerMs += performance.now() - began;
  if (!answer.ok) {
    if (answer.why === "timeout") return failed(draft, "timeout", limitMs < providerTimeoutMs ? callTimeoutMessage(draft) : timeoutMessage);
    if (answer.why === "aborted") return failed(draft, "cancelled", "The call was cancelled while waiting for the provider.");
    // A failure the provider says cannot pass (a refused key) is not asked again.
    const final = answer.error instanceof ProviderError && !answer.error.retriable;
    return failed(draft, "provider", `The provider failed: ${answer.error instanceof Error ? answer.error.message : String(answer.error)}`, final ? { retriable: false } : {});
  }
  try {
    return readGeneration(answer.value as Generation | undefined, draft, request.attempt);
  } catch (error) {
    // A generation whose fields throw when read is the provider's failure too.
    return failed(draft, "provider", `The provider failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The program a provider's answer holds, or the attempt's error outcome. */
function readGeneration(generation: Generation | undefined, draft: CallDraft, attempt: number): Outcome | (WrittenProgram & { usage?: Generation["usage"] }) {
  if (typeof generation !== "object" || generation === null) return failed(draft, "provider", "The provider returned nothing; generate() must resolve to { code, model }.");
  countTokens(draft, generation.usage);
  const { code } = generation;
  if (typeof code !== "string" || code.trim() === "") {
    return failed(draft, "invalid_code", `The provider returned ${code === null || code === undefined ? "no program" : "a blank program"} (attempt ${attempt}).`);
  }
  return { code, model: typeof generation.model === "string" ? generation.model : "unknown", ...(generation.usage === undefined ? {} : { usage: generation.usage }) };
}

/** Adds the tokens a provider reported for one attempt to the call's totals (whole numbers ≥ 0 only: the report is the provider's). */
function countTokens(draft: CallDraft, usage: Generation["usage"]): void {
  if (typeof usage !== "object" || usage === null) return;
  const count = (value: unknown) => (typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined);
  const prompt = count(usage.promptTokens);
  const completion = count(usage.completionTokens);
  if (prompt === undefined && completion === undefined) return;
  draft.tokens = { prompt: (draft.tokens?.prompt ?? 0) + (prompt ?? 0), completion: (draft.tokens?.completion ?? 0) + (completion ?? 0) };
}
