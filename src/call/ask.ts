/**
 * Asking the provider for a program: the prompts of a call, each attempt's request (carrying the
 * latest failure's feedback, so a retry is a repair and not the same request again), and one
 * attempt bounded by `providerTimeoutMs` and the call's signal, on a `chat` span, its tokens
 * counted.
 */
import type { AgentState } from "../state/index.ts";
import { asJsonSafe, causesOf, errorCode, type ErrorType, Outcome, truncateString, within } from "../shared/index.ts";
import { costOf, delay, gateOf, MAX_PAUSE_MS, type Generation, type GenerationRequest, type GenerationUsage, type ModelPrice, type Provider, ProviderError, providerModel, providerName } from "../providers/index.ts";
import { endSpan, startSpan } from "../tracing/index.ts";
import { callTimeLeftMs, callTimeoutMessage, failed, type CallDraft } from "./draft.ts";
import { choosePreview } from "../history/index.ts";
import { renderPrompts, type PromptInput } from "./prompt.ts";
import { feedbackBlock } from "./repair.ts";
import { redactData } from "../egress/index.ts";

/** A program a provider wrote for one attempt. */
export interface WrittenProgram {
  readonly code: string;
  readonly model: string;
  /** The name of the provider that wrote it (`openai`, `anthropic`, …). */
  readonly provider: string;
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
    knowledge: draft.knowledge?.segments,
  };
  const prompts = renderPrompts(input);
  draft.asked.system = prompts.system;
  draft.asked.user = prompts.user;
  return {
    request(attempt) {
      // The latest failure that had a program to show (a provider failure after it has none).
      const latest = draft.asked.failures.findLast((failure) => failure.code !== undefined);
      const feedback = latest === undefined ? "" : feedbackBlock(latest);
      const user = feedback === "" ? prompts.user : renderPrompts({ ...input, feedback }).user;
      draft.asked.user = user;
      const request: GenerationRequest = {
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
      // Once the call's tree sent credentials, the provider is one more place its text goes (a
      // delegated call's arguments as the program passed them): it gets what the record holds,
      // the arguments as JSON data (a Map's or an Error's text is redacted too).
      const redactor = draft.tree.egress.redactor;
      return redactor === undefined ? request : redactData({ ...request, args: asJsonSafe(args), kwargs: asJsonSafe(kwargs) }, redactor) as GenerationRequest;
    },
  };
}

/**
 * A rate limit that asks to wait longer than this sends the request to the next provider, when
 * there is one. @unit ms
 */
export const LONG_RATE_LIMIT_WAIT_MS = 10_000;
/** The wait after a rate limit that did not say how long. @unit ms */
const UNSAID_RATE_LIMIT_WAIT_MS = 1_000;
const NEVER_ABORTED = new AbortController().signal;
/** Rate limits one attempt waits out before it ends `provider` (each already after the SDK's own retries). */
const MAX_RATE_LIMIT_WAITS = 5;

/**
 * One attempt: the program a provider wrote, or the attempt's error outcome. The providers are
 * asked in order: the next one when a provider could not be reached, failed itself (5xx) or
 * asked to wait long; a rate limit is otherwise waited out as the server says, within the call's
 * limit. Before each request, the token budget is checked.
 */
export async function askProvider(providers: readonly Provider[], request: GenerationRequest, state: AgentState, draft: CallDraft): Promise<Outcome | WrittenProgram> {
  let index = 0;
  let waits = 0;
  for (;;) {
    const refused = spentBudget(state, draft);
    if (refused !== undefined) return refused;
    const provider = providers[index]!;
    const another = index + 1 < providers.length;
    // A provider a server asked to wait long is passed over while another follows; alone, it ends
    // the call at once when the wait is longer than the call has left, rather than queue for it.
    const pausedMs = gateOf(provider).pausedForMs();
    if (another && pausedMs > LONG_RATE_LIMIT_WAIT_MS) {
      index += 1;
      continue;
    }
    if (!another && pausedMs > 0 && pausedMs >= callTimeLeftMs(draft)) {
      return failed(draft, "provider", `The provider ${providerName(provider)} is limiting the rate of requests: its server asked to wait ${Math.ceil(pausedMs / 1000)} s more. That is longer than the call has left (${Math.round(callTimeLeftMs(draft))} ms of callTimeoutMs). Call again later.`);
    }
    const answer = await askOnSpan(provider, request, state, draft);
    if (!("failure" in answer)) return answer;
    const { failure } = answer;
    const error = failure.cause;
    if (error?.kind === "rate_limit") {
      const said = error.retryAfterMs;
      // A wait that is no number is one not said; none is longer than a pause is kept.
      const waitMs = Math.min(Math.max(typeof said === "number" && Number.isFinite(said) ? said : UNSAID_RATE_LIMIT_WAIT_MS, 1), MAX_PAUSE_MS);
      gateOf(provider).pauseFor(waitMs);
      if (another && waitMs > LONG_RATE_LIMIT_WAIT_MS) {
        index += 1;
        continue;
      }
      if (waits < MAX_RATE_LIMIT_WAITS && waitMs < callTimeLeftMs(draft)) {
        waits += 1;
        const began = performance.now();
        const waited = await delay(waitMs, draft.signal ?? NEVER_ABORTED).then(() => true, () => false);
        draft.time.providerMs += performance.now() - began;
        if (!waited) return failed(draft, "cancelled", "The call was cancelled while waiting out the provider's rate limit.");
        continue;
      }
      if (another) {
        index += 1;
        continue;
      }
      const why = waits >= MAX_RATE_LIMIT_WAITS ? `It was waited out ${waits} times in this attempt already.` : `That is longer than the call has left (${Math.round(callTimeLeftMs(draft))} ms of callTimeoutMs).`;
      return failed(draft, "provider", `${failure.outcome.errorMessage ?? ""} ${why} Call again later.`);
    }
    if (another && (error?.kind === "connection" || error?.kind === "server")) {
      index += 1;
      continue;
    }
    return failure.outcome;
  }
}

/** The call's `budget_exceeded` outcome when its token or money budget is spent (no request may be sent); undefined while neither is. */
export function spentBudget(state: AgentState, draft: CallDraft): Outcome | undefined {
  const { budget, costBudget } = state.options;
  if (budget?.spent) return failed(draft, "budget_exceeded", budget.refusal(), { retriable: false });
  if (costBudget?.spent) return failed(draft, "budget_exceeded", costBudget.refusal(), { retriable: false });
  return undefined;
}

/** An attempt's failure, with the provider's own error when it reported one. */
interface AskFailure {
  readonly failure: { readonly outcome: Outcome; readonly cause: ProviderError | undefined };
}

/** One request to one provider, on its `chat` span. */
async function askOnSpan(provider: Provider, request: GenerationRequest, state: AgentState, draft: CallDraft): Promise<AskFailure | WrittenProgram> {
  const requestModel = request.model ?? providerModel(provider);
  const name = providerName(provider);
  const span = startSpan(
    requestModel === undefined ? "chat" : `chat ${requestModel}`,
    "client",
    { "gen_ai.operation.name": "chat", "gen_ai.provider.name": name, "gen_ai.request.model": requestModel, "improv.call_id": draft.callId, "improv.attempt": request.attempt },
    draft.span,
  );
  const costBefore = draft.asked.costUsd;
  const answer = await askOnce(provider, request, state, draft);
  if ("failure" in answer) {
    endSpan(span, {}, answer.failure.outcome.errorType, answer.failure.outcome.errorMessage);
    return answer;
  }
  const { usage } = answer;
  endSpan(span, {
    "gen_ai.response.model": answer.model,
    "gen_ai.usage.input_tokens": usage?.promptTokens,
    "gen_ai.usage.output_tokens": usage?.completionTokens,
    "gen_ai.usage.cache_read.input_tokens": usage?.cachedTokens,
    "gen_ai.usage.cache_creation.input_tokens": usage?.cacheWriteTokens,
    "improv.cost_usd": draft.asked.costUsd === costBefore || draft.asked.costUsd === null ? undefined : draft.asked.costUsd - (costBefore ?? 0),
  });
  return { code: answer.code, model: answer.model, provider: name };
}

/** One request, in its turn at the provider's gate, bounded by providerTimeoutMs and the call's signal. */
async function askOnce(provider: Provider, request: GenerationRequest, state: AgentState, draft: CallDraft): Promise<AskFailure | (Omit<WrittenProgram, "provider"> & { usage?: Generation["usage"] })> {
  const { providerTimeoutMs } = state.options;
  const began = performance.now();
  const gate = gateOf(provider);
  let release = gate.tryAcquire();
  if (release === undefined) {
    const turn = await within(callTimeLeftMs(draft), draft.signal, () => undefined, (signal) => gate.acquire(signal));
    if (!turn.ok) {
      draft.time.providerMs += performance.now() - began;
      return turn.why === "aborted" ? fail(draft, "cancelled", "The call was cancelled while waiting its turn at the provider.") : fail(draft, "timeout", callTimeoutMessage(draft));
    }
    release = turn.value;
  }
  // Within providerTimeoutMs, and within what is left of the call's callTimeoutMs.
  const limitMs = Math.min(providerTimeoutMs, callTimeLeftMs(draft));
  const timeoutMessage = limitMs < providerTimeoutMs ? callTimeoutMessage(draft) : `The provider did not answer within providerTimeoutMs (${providerTimeoutMs} ms).`;
  let answer;
  try {
    answer = await within(limitMs, draft.signal, () => new Error(timeoutMessage), (signal) => provider.generate(request, signal));
  } finally {
    release();
  }
  draft.time.providerMs += performance.now() - began;
  if (!answer.ok) {
    if (!refusedUnbilled(answer)) costUnknown(draft, state);
    if (answer.why === "timeout") return fail(draft, "timeout", limitMs < providerTimeoutMs ? callTimeoutMessage(draft) : timeoutMessage);
    if (answer.why === "aborted") return fail(draft, "cancelled", "The call was cancelled while waiting for the provider.");
    const cause = answer.error instanceof ProviderError ? answer.error : undefined;
    // A failure the provider says cannot pass (a refused key) is not asked again.
    const final = cause !== undefined && !cause.retriable;
    return fail(draft, "provider", `The provider failed: ${answer.error instanceof Error ? answer.error.message : String(answer.error)}`, final ? { retriable: false } : {}, cause);
  }
  try {
    const read = readGeneration(answer.value as Generation | undefined, draft, request.attempt, state, request.model ?? providerModel(provider));
    return read instanceof Outcome ? { failure: { outcome: read, cause: undefined } } : read;
  } catch (error) {
    // A generation whose fields throw when read is the provider's failure too.
    costUnknown(draft, state);
    return fail(draft, "provider", `The provider failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Failures a server answers with before any work is billed: its refusal (HTTP 4xx, 429) or its error (5xx). */
const UNBILLED_FAILURES: ReadonlySet<string | undefined> = new Set(["auth", "rate_limit", "request", "server"]);

/**
 * What the network says when no server was reached. A `connection` failure is one of those, or
 * a timeout, or a reply cut off as it was read, after which the server may have done the work.
 */
const NOT_REACHED_CODES: ReadonlySet<string> = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL", "ERR_INVALID_URL"]);

/** Whether a request that failed cost nothing: the server refused it, failed, or was never reached; not one that timed out, was cancelled in flight, or whose reply was cut off or could not be read. */
function refusedUnbilled(answer: { readonly why: string; readonly error?: unknown }): boolean {
  if (answer.why !== "threw" || !(answer.error instanceof ProviderError)) return false;
  if (UNBILLED_FAILURES.has(answer.error.kind)) return true;
  return answer.error.kind === "connection" && causesOf(answer.error).some((cause) => NOT_REACHED_CODES.has(errorCode(cause) ?? ""));
}

/** With `pricing`, makes the call's cost unknown: a request may have been billed for tokens nobody reported. */
function costUnknown(draft: CallDraft, state: AgentState): void {
  if (state.options.pricing !== undefined) draft.asked.unpriced = true;
}

function fail(draft: CallDraft, errorType: ErrorType, message: string, options: { retriable?: boolean } = {}, cause?: ProviderError): AskFailure {
  return { failure: { outcome: failed(draft, errorType, message, options), cause } };
}

/** The program a provider's answer holds, or the attempt's error outcome. */
function readGeneration(generation: Generation | undefined, draft: CallDraft, attempt: number, state: AgentState, requestedModel: string | undefined): Outcome | (Omit<WrittenProgram, "provider"> & { usage?: Generation["usage"] }) {
  if (typeof generation !== "object" || generation === null) return failed(draft, "provider", "The provider returned nothing; generate() must resolve to { code, model }.");
  const usage = checkedUsage(generation.usage);
  countTokens(draft, usage, state, typeof generation.model === "string" ? generation.model : undefined, requestedModel);
  const { code } = generation;
  if (typeof code !== "string" || code.trim() === "") {
    return failed(draft, "invalid_code", `The provider returned ${code === null || code === undefined ? "no program" : "a blank program"} (attempt ${attempt}).`);
  }
  // Cut once here, so the record, the log line and the span name the same model.
  const model = typeof generation.model === "string" ? truncateString(generation.model, MAX_MODEL_CHARS) : "unknown";
  return { code, model, ...(usage === undefined ? {} : { usage }) };
}

/** The most tokens of one kind one request is believed to have used: past it, a count is none. */
const MAX_REQUEST_TOKENS = 1_000_000_000;

/**
 * The usage a provider reported, as the record, the log line, the span and the budgets take it:
 * whole numbers from 0 to {@link MAX_REQUEST_TOKENS}, the cache's reads and writes within the
 * prompt; undefined when neither the prompt's nor the completion's count is usable.
 */
function checkedUsage(reported: unknown): GenerationUsage | undefined {
  if (typeof reported !== "object" || reported === null) return undefined;
  const given = reported as GenerationUsage;
  const count = (value: unknown) => (typeof value === "number" && Number.isSafeInteger(value) && value >= 0 && value <= MAX_REQUEST_TOKENS ? value : undefined);
  const prompt = count(given.promptTokens);
  const completion = count(given.completionTokens);
  if (prompt === undefined && completion === undefined) return undefined;
  const within = (value: number | undefined, room: number | undefined) => (value === undefined || room === undefined ? value : Math.min(value, room));
  const cached = within(count(given.cachedTokens), prompt);
  const cacheWrite = within(count(given.cacheWriteTokens), prompt === undefined ? undefined : prompt - (cached ?? 0));
  return {
    ...(prompt === undefined ? {} : { promptTokens: prompt }),
    ...(completion === undefined ? {} : { completionTokens: completion }),
    ...(cached === undefined ? {} : { cachedTokens: cached }),
    ...(cacheWrite === undefined ? {} : { cacheWriteTokens: cacheWrite }),
  };
}

/** The longest model name kept as a server gives it: cut with its marker, it stays within the record's 200 characters. */
const MAX_MODEL_CHARS = 160;

/** A dated snapshot's suffix, as servers name the model that answered (`gpt-4.1-mini-2025-04-14`, `claude-…-20241022`). */
const SNAPSHOT_DATE = /-(?:\d{4}-\d{2}-\d{2}|\d{8})$/;

/**
 * The price of a request: of the model the server says answered, as `pricing` names it, or
 * without its snapshot date; else of the model asked for (a server that names its model
 * otherwise is not a way around `maxCostUsd`).
 */
function priceOf(pricing: Readonly<Record<string, ModelPrice>>, model: string | undefined, requestedModel: string | undefined): ModelPrice | undefined {
  const reported = model?.trim();
  for (const name of [model, reported, reported?.replace(SNAPSHOT_DATE, ""), requestedModel]) {
    if (name !== undefined && Object.hasOwn(pricing, name)) return pricing[name];
  }
  return undefined;
}

/**
 * Adds the tokens a provider reported for one request (checked) to the call's totals and the
 * agent's token budget. With `pricing`, a request whose tokens are not known, or whose model has
 * no price, makes the call's cost unknown.
 */
function countTokens(draft: CallDraft, usage: GenerationUsage | undefined, state: AgentState, model: string | undefined, requestedModel: string | undefined): void {
  if (usage === undefined) {
    costUnknown(draft, state);
    return;
  }
  const { promptTokens: prompt, completionTokens: completion, cachedTokens: cached, cacheWriteTokens: cacheWrite } = usage;
  const before = draft.asked.tokens;
  draft.asked.tokens = {
    prompt: (before?.prompt ?? 0) + (prompt ?? 0),
    completion: (before?.completion ?? 0) + (completion ?? 0),
    cached: cached === undefined ? (before?.cached ?? null) : (before?.cached ?? 0) + cached,
    cacheWrite: cacheWrite === undefined ? (before?.cacheWrite ?? null) : (before?.cacheWrite ?? 0) + cacheWrite,
  };
  draft.attemptLog.countTokens(prompt, completion, cached, cacheWrite);
  state.options.budget?.charge((prompt ?? 0) + (completion ?? 0));
  const { pricing, costBudget } = state.options;
  if (pricing === undefined) return;
  const price = priceOf(pricing, model, requestedModel);
  if (price === undefined) {
    draft.asked.unpriced = true;
    return;
  }
  const cost = costOf({ prompt: prompt ?? 0, completion: completion ?? 0, cached: cached ?? 0, cacheWrite: cacheWrite ?? 0 }, price);
  draft.asked.costUsd = (draft.asked.costUsd ?? 0) + cost;
  costBudget?.charge(cost);
}
