import { randomUUID } from "node:crypto";
import type { AgentState } from "../agent-state.ts";
import type { Speaker } from "../history/record.ts";
import { Outcome, type ErrorType } from "../outcome.ts";
import type { Generation, GenerationRequest, Provider } from "../providers/provider.ts";
import { runProgram } from "../sandbox/host/run-program.ts";
import { findUncloneable, splitArguments } from "./arguments.ts";
import { handleContent, handleDelegate } from "./delegation.ts";
import { CONFLICT, finalize, type CallDraft } from "./finalize.ts";
import { PROMPT_VERSION, renderPrompts } from "./prompt.ts";
import { choosePreview } from "./preview.ts";
import { feedbackBlock, type AttemptFailure } from "./repair.ts";
import { isOwnMistake, positionInProgram, type RunFailure } from "../programs/mistake.ts";
import { prepareProgram, type PreparedProgram } from "../programs/shape.ts";
import { keepDecision, takesPartInReuse, whyNotReused, type ReuseDecision } from "../programs/cacheable.ts";
import { programKey, shelfFor, type KeptProgram, type ProgramShelf } from "../programs/kept.ts";
import { OpenAIProvider } from "../providers/openai.ts";
import { ScriptedProvider } from "../providers/scripted.ts";
import { endSpan, startSpan, type Span } from "../tracing/tracing.ts";

/** Where a call came from. */
export interface CallOrigin {
  readonly speaker: Speaker;
  readonly parentCallId?: string;
  readonly traceId?: string;
  /** The calling program's `execute_tool` span, for a delegated call. */
  readonly parentSpan?: Span | undefined;
}

/**
 * One dynamic call, start to finish: check the arguments, render the prompts, ask the
 * provider (with retries), run the program in the sandbox, and finalize exactly once.
 * Never throws: every path ends in an {@link Outcome}.
 */
export async function performCall(state: AgentState, method: string, rawArgs: readonly unknown[], origin: CallOrigin): Promise<Outcome> {
  const draft: CallDraft = {
    callId: randomUUID(),
    role: state.role,
    method,
    speaker: origin.speaker,
    traceId: origin.traceId ?? state.options.traceId ?? randomUUID(),
    parentCallId: origin.parentCallId,
    depth: state.depth,
    startedAt: new Date(),
    startedMs: performance.now(),
    args: rawArgs,
    kwargs: {},
    code: null,
    programSource: "generated",
    artifactHit: false,
    reuseDecision: undefined,
    parsed: undefined,
    model: undefined,
    attempts: 0,
    system: undefined,
    user: undefined,
    console: [],
    valueText: undefined,
    tokens: null,
    failures: [],
    finalized: false,
    span: undefined,
    toolSpan: undefined,
  };
  draft.span = startSpan(
    `invoke_agent ${state.role}`,
    "internal",
    { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": state.role, "gen_ai.conversation.id": draft.traceId, "improv.call_id": draft.callId, "improv.method": method, "improv.depth": state.depth },
    origin.parentSpan,
  );
  let outcome: Outcome;
  try {
    outcome = await execute(state, draft);
  } catch (error) {
    outcome = Outcome.failure(draft.callId, "execution", `improv failed while handling this call: ${error instanceof Error ? error.message : String(error)}`);
  }
  // A call that ran a program was finalized in its agent's queue. Any other is finalized here:
  // a durable agent's in the queue too, so its records reach the store in order; a memory-only
  // agent's at once, not behind a program that is running. Without a context there is no conflict.
  if (!draft.finalized) outcome = (await (state.link === undefined ? finalize(state, draft, outcome) : state.queue.run(() => finalize(state, draft, outcome)))) as Outcome;
  endSpan(
    draft.span,
    {
      "improv.artifact_hit": draft.artifactHit,
      "improv.program_source": draft.code === null ? undefined : draft.programSource,
      "improv.outcome.status": outcome.status,
      "improv.error_type": outcome.errorType,
      "improv.attempts": draft.attempts,
    },
    outcome.errorType,
    outcome.errorMessage,
  );
  return outcome;
}

async function execute(state: AgentState, draft: CallDraft): Promise<Outcome> {
  const fail = (errorType: ErrorType, message: string): Outcome => Outcome.failure(draft.callId, errorType, message);
  let split;
  try {
    split = splitArguments(draft.args);
  } catch (error) {
    return fail("invalid_input", (error as Error).message);
  }
  draft.args = split.args;
  draft.kwargs = split.kwargs;
  const problem = findUncloneable(split.args, "args") ?? findUncloneable(split.kwargs, "kwargs");
  if (problem !== undefined) return fail("invalid_input", `Argument ${problem} and cannot enter the sandbox. Pass plain data.`);
  if (state.options.signal?.aborted) return fail("cancelled", "The call was cancelled before it started.");
  const provider = state.provider();
  const reuse = reuseFor(state, draft, provider);
  // A kept program's failure, when it was its own mistake: the provider is asked to repair it.
  let keptFailure: Outcome | undefined;
  if (reuse !== undefined) {
    const kept = await runKept(state, draft, reuse, fail);
    if (kept !== undefined && kept.mistake === undefined) return kept.outcome;
    keptFailure = kept?.outcome;
  }
  if (!provider) {
    if (keptFailure === undefined) return fail("provider", "No provider configured. Pass { provider } to Agent.for() or set OPENAI_API_KEY.");
    // Nothing can repair it here: the kept program's own failure is the call's outcome.
    draft.artifactHit = true;
    return keptFailure;
  }
  // A durable agent sees what other processes committed before it renders its prompts.
  const pullProblem = await pullFailure(state, draft);
  if (pullProblem !== undefined) return pullProblem;

  const promptInput = {
    role: state.role,
    method: draft.method,
    args: split.args,
    kwargs: split.kwargs,
    contextKeys: Object.keys(state.context),
    historyCount: state.history.length,
    historyPreview: choosePreview(state.history, state.options.historyPreview, { method: draft.method, args: split.args, kwargs: split.kwargs }),
    previewMaxChars: state.options.historyPreview.maxChars,
  };
  const prompts = renderPrompts(promptInput);
  draft.system = prompts.system;
  draft.user = prompts.user;

  let last = fail("invalid_code", "The provider produced no usable program.");
  for (let attempt = 1; attempt <= state.options.maxGenerationAttempts; attempt += 1) {
    draft.attempts = attempt;
    // The latest failure that had a program to show (a provider failure after it has none).
    const failed = draft.failures.findLast((failure) => failure.code !== undefined);
    const feedback = failed === undefined ? "" : feedbackBlock(failed);
    const user = feedback === "" ? prompts.user : renderPrompts({ ...promptInput, feedback }).user;
    draft.user = user;
    const request: GenerationRequest = {
      role: state.role,
      method: draft.method,
      attempt,
      system: prompts.system,
      user,
      ...(state.options.model === undefined ? {} : { model: state.options.model }),
    };
    const generated = await generate(provider, request, state, draft, fail);
    if (generated instanceof Outcome) {
      last = generated;
      if (generated.errorType === "cancelled") return generated;
      draft.failures.push({ attempt, errorType: generated.errorType ?? "provider", message: generated.errorMessage ?? "" });
      continue;
    }
    draft.code = generated.code;
    draft.model = generated.model;
    // Written after a failure's feedback, it is a repair of what failed.
    draft.programSource = draft.failures.some((failure) => failure.code !== undefined) ? "repaired" : "generated";
    const { outcome, mistake } = await runAttempt(state, draft, generated.code, attempt, fail);
    if (mistake === undefined) {
      if (outcome.ok && reuse !== undefined) await keepIfReusable(reuse, draft, generated.code);
      return outcome;
    }
    draft.failures.push(mistake);
    last = outcome;
  }
  return last;
}

/**
 * Prepares one attempt's program (shapes, TypeScript) and runs it. A failure that is the
 * program's own mistake comes back as `mistake`, for the next attempt's feedback.
 */
async function runAttempt(
  state: AgentState,
  draft: CallDraft,
  code: string,
  attempt: number,
  fail: (errorType: ErrorType, message: string) => Outcome,
): Promise<{ outcome: Outcome; mistake?: AttemptFailure }> {
  const prepared = prepareProgram(code, draft.method);
  draft.parsed = prepared.parsed;
  if (!prepared.ok) {
    return { outcome: fail("invalid_code", prepared.message), mistake: { attempt, errorType: "invalid_code", message: prepared.message, code } };
  }
  return state.queue.run(async () => {
    // Processes sharing a durable agent take turns where the store has per-agent locks.
    const release = state.link === undefined ? undefined : await state.link.lock(lockWaitMs(state));
    try {
      return await runAndCommit(state, draft, prepared, code, attempt, fail);
    } finally {
      if (release !== undefined) await release();
    }
  });
}

/** Where this call's kept programs are, and its key there; undefined when the call takes no part in reuse. */
interface Reuse {
  readonly shelf: ProgramShelf;
  readonly key: string;
}

function reuseFor(state: AgentState, draft: CallDraft, provider: Provider | undefined): Reuse | undefined {
  if (!takesPartInReuse(draft.method, state.options.reuse)) return undefined;
  const shelf = shelfFor(state.options.store, provider);
  return shelf === undefined ? undefined : { shelf, key: programKey(state.role, draft.method, draft.args, draft.kwargs, PROMPT_VERSION) };
}

/**
 * Runs the program kept for this call's key, if there is one (undefined when there is none):
 * no prompt, no provider. Its outcome is the call's, unless it failed by its own mistake
 * (`mistake` set): then the call goes on to generate a program with that failure as feedback,
 * and the kept program is charged the failure (dropped after `maxReuseFailures` in a row).
 * Timeouts, cancellations and the like are not the program's doing and are not charged.
 */
async function runKept(
  state: AgentState,
  draft: CallDraft,
  reuse: Reuse,
  fail: (errorType: ErrorType, message: string) => Outcome,
): Promise<{ outcome: Outcome; mistake?: AttemptFailure } | undefined> {
  let kept: KeptProgram | undefined;
  try {
    const found = reuse.shelf.get(reuse.key);
    kept = isPending(found) ? await found : found;
  } catch {
    // A store that cannot say: generate instead; the call's own commit reports a failing store.
    return undefined;
  }
  if (kept === undefined) return undefined;
  draft.code = kept.code;
  draft.programSource = "reused";
  const { outcome, mistake } = await runAttempt(state, draft, kept.code, 0, fail);
  const charged = mistake !== undefined ? "mistake" : outcome.ok || outcome.errorType === "execution" ? "ok" : undefined;
  if (charged !== undefined) {
    try {
      const counted = reuse.shelf.ran(reuse.key, kept.code, charged, state.options.maxReuseFailures);
      if (isPending(counted)) await counted;
    } catch {
      // Counts are kept on a best-effort basis: a store that cannot count does not fail the call.
    }
  }
  if (mistake === undefined) return { outcome };
  draft.artifactHit = false;
  draft.failures.push(mistake);
  return { outcome, mistake };
}

/** Whether a shelf's answer is still to come: an in-memory shelf answers at once, and is not awaited (an await costs the call a turn). */
function isPending<T>(answer: T | Promise<T>): answer is Promise<T> {
  return typeof (answer as { then?: unknown } | null | undefined)?.then === "function";
}

/** Keeps a program that worked, when the call's decision (made before its record was written) says so. */
async function keepIfReusable(reuse: Reuse, draft: CallDraft, code: string): Promise<void> {
  if (draft.reuseDecision?.kept !== true) return;
  await Promise.resolve(reuse.shelf.keep({ key: reuse.key, role: draft.role, method: draft.method, code, why: draft.reuseDecision.reason })).catch(() => undefined);
}

/** Whether this call's program, which worked, is kept for later calls, and why. */
function decideReuse(state: AgentState, draft: CallDraft, prepared: Extract<PreparedProgram, { ok: true }>): ReuseDecision {
  const refused = whyNotReused(draft.method, state.options.reuse);
  return refused === undefined ? keepDecision(prepared, draft.args, draft.kwargs) : { kept: false, reason: refused };
}

/** How long a run waits for its agent's lock held by another process: that process's run and commit, with room to spare. */
function lockWaitMs(state: AgentState): number {
  return state.options.executionTimeoutMs * 3 + 10_000;
}

async function runAndCommit(
  state: AgentState,
  draft: CallDraft,
  prepared: Extract<PreparedProgram, { ok: true }>,
  code: string,
  attempt: number,
  fail: (errorType: ErrorType, message: string) => Outcome,
): Promise<{ outcome: Outcome; mistake?: AttemptFailure }> {
  for (let run = 1; ; run += 1) {
    // Up to date with the store before the run, so the program sees the latest context.
    const pullProblem = state.link === undefined ? undefined : await pullFailure(state, draft);
    if (pullProblem !== undefined) return { outcome: (await finalize(state, draft, pullProblem)) as Outcome };
    const baseVersion = state.link?.view.version ?? 0;
    const { outcome, failure, context } = await runInSandbox(state, draft, prepared.source, fail);
    if (failure !== undefined && isOwnMistake(prepared, failure)) return describeMistake(prepared, code, attempt, outcome, failure, fail);
    // Decided before the record is written, so the record and the log line can say it; once, as a re-run after a conflict runs the same program.
    if (outcome.ok && draft.programSource !== "reused") draft.reuseDecision ??= decideReuse(state, draft, prepared);
    const final = await finalize(state, draft, outcome, context === undefined ? undefined : { context, baseVersion });
    if (final !== CONFLICT) return { outcome: final };
    if (run >= MAX_CONFLICT_RUNS) {
      const message = `The agent's context kept changing in other processes while this program ran (${run} runs); the program's changes were not kept. Call again.`;
      return { outcome: (await finalize(state, draft, fail("store", message))) as Outcome };
    }
    // Another process committed first: wait a little (more each time, at random, so the
    // processes fall out of step), then run again on its context.
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * run));
  }
}

/** Runs of one attempt's program when other processes keep committing to the same agent first. */
const MAX_CONFLICT_RUNS = 8;

/** A `store` outcome when a durable agent cannot be brought up to date, else undefined. */
async function pullFailure(state: AgentState, draft: CallDraft): Promise<Outcome | undefined> {
  try {
    await state.pull();
    return undefined;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return Outcome.failure(draft.callId, "store", `The agent could not be brought up to date with its store, so no program ran (${message}). Call again.`);
  }
}

/** A failed run that was the program's own mistake, for the next attempt's feedback. */
function describeMistake(
  prepared: Extract<PreparedProgram, { ok: true }>,
  code: string,
  attempt: number,
  outcome: Outcome,
  failure: RunFailure,
  fail: (errorType: ErrorType, message: string) => Outcome,
): { outcome: Outcome; mistake: AttemptFailure } {
  if (outcome.errorType === "invalid_code") {
    // The sandbox's compiler is the judge of what parses; the host's parser says where it failed.
    const { parsed } = prepared;
    const position = !parsed.ok && parsed.line !== undefined && parsed.column !== undefined ? { line: parsed.line, column: parsed.column } : undefined;
    const message = parsed.ok ? (outcome.errorMessage ?? "") : `SyntaxError: ${parsed.message}`;
    const where = position === undefined ? "" : ` (line ${position.line}, column ${position.column})`;
    return {
      outcome: fail("invalid_code", `The program does not parse (attempt ${attempt}): ${message}${where}`),
      mistake: { attempt, errorType: "invalid_code", message, code, ...(position ? { position } : {}) },
    };
  }
  const position = failure.location === undefined ? undefined : positionInProgram(prepared, code, failure.location);
  return { outcome, mistake: { attempt, errorType: outcome.errorType ?? "execution", message: outcome.errorMessage ?? "", code, ...(position ? { position } : {}) } };
}

async function generate(
  provider: Provider,
  request: GenerationRequest,
  state: AgentState,
  draft: CallDraft,
  fail: (errorType: ErrorType, message: string) => Outcome,
): Promise<Outcome | { code: string; model: string }> {
  const { providerTimeoutMs, signal } = state.options;
  const configured = (provider as { model?: unknown }).model;
  const requestModel = request.model ?? (typeof configured === "string" ? configured : undefined);
  const span = startSpan(
    requestModel === undefined ? "chat" : `chat ${requestModel}`,
    "client",
    { "gen_ai.operation.name": "chat", "gen_ai.provider.name": providerName(provider), "gen_ai.request.model": requestModel, "improv.call_id": draft.callId, "improv.attempt": request.attempt },
    draft.span,
  );
  const answer = await generateOnce(provider, request, state, draft, fail);
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
async function generateOnce(
  provider: Provider,
  request: GenerationRequest,
  state: AgentState,
  draft: CallDraft,
  fail: (errorType: ErrorType, message: string) => Outcome,
): Promise<Outcome | { code: string; model: string; usage?: Generation["usage"] }> {
  const { providerTimeoutMs, signal } = state.options;
  const controller = new AbortController();
  const timeoutMessage = `The provider did not answer within providerTimeoutMs (${providerTimeoutMs} ms).`;
  let timedOut = false;
  // The Error is made only when the time is up: capturing a stack costs more than the rest of this setup.
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error(timeoutMessage));
  }, providerTimeoutMs);
  const onAbort = () => controller.abort(signal?.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    // Race the abort too: a provider that ignores its signal must not hold the call.
    const stopped = new Promise<never>((_, reject) => controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true }));
    const pending = Promise.resolve(provider.generate(request, controller.signal));
    pending.catch(() => undefined); // It may reject after the race is lost; that must not go unhandled.
    const generation = (await Promise.race([pending, stopped])) as Generation | undefined;
    if (typeof generation !== "object" || generation === null) return fail("provider", "The provider returned nothing; generate() must resolve to { code, model }.");
    countTokens(draft, generation.usage);
    const { code } = generation;
    if (typeof code !== "string" || code.trim() === "") {
      return fail("invalid_code", `The provider returned ${code === null || code === undefined ? "no program" : "a blank program"} (attempt ${request.attempt}).`);
    }
    return { code, model: typeof generation.model === "string" ? generation.model : "unknown", ...(generation.usage === undefined ? {} : { usage: generation.usage }) };
  } catch (error) {
    if (timedOut) {
      return fail("timeout", timeoutMessage);
    }
    if (signal?.aborted) return fail("cancelled", "The call was cancelled while waiting for the provider.");
    return fail("provider", `The provider failed: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}

async function runInSandbox(
  state: AgentState,
  draft: CallDraft,
  code: string,
  fail: (errorType: ErrorType, message: string) => Outcome,
): Promise<{ outcome: Outcome; failure?: RunFailure; context?: Record<string, unknown> }> {
  const { signal } = state.options;
  if (signal?.aborted) return { outcome: fail("cancelled", "The call was cancelled before its program ran.") };
  const contextProblem = findUncloneable(state.context, "context");
  if (contextProblem !== undefined) {
    return { outcome: fail("invalid_input", `The agent's ${contextProblem} and cannot enter the sandbox. Keep plain data in context.`) };
  }
  draft.toolSpan = startSpan(
    `execute_tool ${draft.method}`,
    "internal",
    { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": draft.method, "improv.call_id": draft.callId, "improv.program_source": draft.programSource },
    draft.span,
  );
  const result = await runProgram({
    agentId: state.id,
    callId: draft.callId,
    code,
    args: draft.args as unknown[],
    kwargs: draft.kwargs as Record<string, unknown>,
    context: state.context,
    depth: state.depth,
    maxDelegationDepth: state.options.maxDelegationDepth,
    timeoutMs: state.options.executionTimeoutMs,
    memoryLimitMb: state.options.memoryLimitMb,
    history: state.history,
    onBridge: (request) => (request.kind === "content" ? handleContent(state, request.ref) : handleDelegate(state, draft, request, performCall)),
    signal,
  });
  draft.console = result.console;
  // A kept program that ran ends the call, unless its failure turns out to be its own mistake (then runKept says otherwise).
  if (draft.programSource === "reused") draft.artifactHit = true;
  endSpan(draft.toolSpan, {}, result.status === "error" ? result.errorType : undefined, result.status === "error" ? result.message : undefined);
  if (result.status === "error") {
    const outcome = Outcome.failure(draft.callId, result.errorType, result.message, { retriable: result.retriable });
    return { outcome, failure: { errorType: result.errorType, ...(result.thrownName === undefined ? {} : { thrownName: result.thrownName }), ...(result.location ? { location: result.location } : {}) } };
  }
  draft.valueText = result.valueText;
  return { outcome: Outcome.success(draft.callId, result.value), context: result.context };
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
