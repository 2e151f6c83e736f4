import { createRecord, KeptValues, type RecordInput, type RepairSkipped, type SerializedRecord } from "../history/index.ts";
import { asJsonSafe, type JsonValue, Outcome, truncateString } from "../shared/index.ts";
import { redactData, type Redactor } from "../egress/index.ts";
import type { AgentState } from "../state/index.ts";
import { buildLogLine, showOutcome, writeLogLine, type LogLineInput } from "../log/index.ts";
import type { AgentWrite, WriteResult } from "../store/index.ts";
import type { ReuseDecision } from "../programs/index.ts";
import { type KnowledgeAssembly, sourceNames } from "../knowledge/index.ts";
import { attemptErrors } from "./repair.ts";
import { settleEffects } from "./effects.ts";
import { spanIds } from "../tracing/index.ts";
import { endedByKeptProgram, type CallDraft } from "./draft.ts";

/** What committing a call changes: the agent's history and context, and where both are kept. */
export type FinalizeTarget = AgentState;

/** A context write refused because another process changed the agent first: the program must run again. */
export const CONFLICT = Symbol("conflict");

/**
 * The single end of every dynamic call, on every path: commit exactly one history record (and,
 * for a program that succeeded, its context) — to the store first when the agent is durable,
 * in one transaction — then write one log line. Running it twice for one call is a bug, so it
 * refuses to. With `changed`, a durable agent's write can meet a {@link CONFLICT}: another
 * process changed the context since `baseVersion`, nothing was written, and the caller runs
 * the program again on the newer context. A store that fails turns the outcome into a `store`
 * error: nothing of the call is kept, and the log line says so.
 */
export async function finalize(
  target: FinalizeTarget,
  draft: CallDraft,
  outcome: Outcome,
  changed?: { readonly context: Record<string, unknown>; readonly baseVersion: number },
): Promise<Outcome | typeof CONFLICT> {
  if (draft.finalized) return outcome;
  // A failure's effects are kept or undone first: the record says what became of them.
  // In the agent's turn: a call finalized outside it settled its effects before (performOpenCall).
  await settleEffects(target, draft, outcome, true);
  draft.reuse.artifactHit = endedByKeptProgram(draft, outcome);
  // The attempt that ran ends with the outcome being committed (a store failure below replaces it).
  draft.attemptLog.end(outcome);
  // One duration for both, so the record and the log line agree.
  const durationMs = (draft.time.answeredMs ?? performance.now()) - draft.startedMs;
  // Once the call's tree sent credentials, nothing of it is written with a recognizable copy (the run's value and context were cleaned as it ended).
  const redactor = draft.tree.egress.redactor;
  let final = redactor === undefined ? outcome : redactOutcome(outcome, redactor);
  const keepValue = final.ok && draft.program.valueText !== undefined && KeptValues.fits(target.options.keepValues, draft.program.valueText);
  let serialized = buildRecord(target, draft, final, durationMs, keepValue, redactor);
  let appended = true;
  const { link } = target;
  if (link === undefined) {
    target.history.append(serialized);
    if (changed !== undefined) target.commitContext(changed.context);
    if (keepValue) target.values.keep(target.options.keepValues, draft.callId, draft.program.valueText as string);
  } else {
    let result: WriteResult | undefined;
    try {
      // The version check is against the context the program ran on, not whatever the copy holds now.
      const { keepValues } = target.options;
      // A kept program's use is counted in the same transaction, when its run served the call.
      const counted = draft.reuse.keptRun !== undefined && servedByKept(draft, final) ? { key: draft.reuse.keptRun.key, code: draft.reuse.keptRun.code } : undefined;
      const write: AgentWrite = {
        record: serialized.json,
        ...(keepValue ? { value: { ref: draft.callId, text: draft.program.valueText as string, count: keepValues.count, maxBytes: keepValues.maxBytes } } : {}),
        ...(changed === undefined ? {} : { context: target.storedContext(changed.context), baseVersion: changed.baseVersion }),
        ...(counted === undefined ? {} : { ranProgram: counted }),
      };
      result = await (draft.turn === undefined ? link.write(write) : draft.turn.commit(write));
      if (result.ok && counted !== undefined) draft.reuse.keptRun!.counted = true;
    } catch (error) {
      final = Outcome.failure(draft.callId, "store", storeFailure(error));
      // Nothing of the call is kept: its effects are kept or undone as for any failure, and the log line says which.
      await settleEffects(target, draft, final, true);
      draft.attemptLog.end(final);
      serialized = buildRecord(target, draft, final, durationMs, false, redactor);
      appended = false;
    }
    if (result !== undefined) {
      if (!result.ok) return CONFLICT;
      await link.committed(serialized, changed?.context, result);
      if (keepValue) target.values.keep(target.options.keepValues, draft.callId, draft.program.valueText as string);
    }
  }
  draft.finalized = true;
  if (target.options.log !== false) writeLogLine(target.options.log, logLine(target, draft, final, durationMs, appended, redactor));
  if (target.options.verbose) showOutcome(draft.role, draft.method, draft.callId, final, durationMs);
  return final;
}

/** Whether the call's outcome is a run of its kept program that served it: ok, or the program's own thrown error (a mistake is not committed). */
export function servedByKept(draft: CallDraft, outcome: Outcome): boolean {
  return draft.program.programSource === "reused" && draft.program.runOutcome === outcome && (outcome.ok || outcome.errorType === "execution");
}

/** A store's failure, as a call's outcome says it. */
export function storeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return `The store failed, so nothing of this call was kept (${message}). Call again.`;
}

function buildRecord(target: FinalizeTarget, draft: CallDraft, outcome: Outcome, durationMs: number, keepsValue: boolean, redactor: Redactor | undefined): SerializedRecord {
  const input: RecordInput = {
    contentRef: keepsValue ? draft.callId : undefined,
    callId: draft.callId,
    startedAt: draft.startedAt,
    speaker: draft.speaker,
    method: draft.method,
    args: draft.args,
    kwargs: draft.kwargs,
    outcome,
    traceId: draft.traceId,
    parentCallId: draft.parentCallId,
    depth: draft.depth,
    durationMs,
    program: draft.program.code === null ? null : { code: draft.program.code, source: draft.program.programSource },
    writer: draft.asked.provider === undefined || draft.asked.model === undefined || draft.program.programSource === "reused" ? undefined : { provider: draft.asked.provider, model: draft.asked.model },
    artifactHit: draft.reuse.artifactHit,
    reuseDecision: decisionOf(draft, outcome),
    toolCalls: draft.tools.recordFields(),
    sources: draft.tools.sourcesOf(draft.asked.attempts),
    knowledge: draft.knowledge?.records,
    attempts: draft.attemptLog.records(draft.tools),
    repairSkipped: repairSkippedOf(target, draft, outcome),
    costUsd: costOfCall(target, draft) ?? undefined,
  };
  return createRecord(redactor === undefined ? input : redactRecordInput(input, redactor));
}

/**
 * What the call cost in US dollars (to a millionth of a cent): 0 for a call that asked no
 * provider; null when it is not known (no pricing, or a model without a price).
 */
function costOfCall(target: FinalizeTarget, draft: CallDraft): number | null {
  const { costUsd, unpriced } = draft.asked;
  if (target.options.pricing === undefined || unpriced) return null;
  return Math.round((costUsd ?? 0) * 1e8) / 1e8;
}

/** Why the call's failed program was not repaired, for its record and log line (see `AttemptLog.repairSkipped`). */
function repairSkippedOf(target: FinalizeTarget, draft: CallDraft, outcome: Outcome): RepairSkipped | undefined {
  return draft.attemptLog.repairSkipped(outcome, draft.tools.wrote, () => draft.asked.attempts >= target.options.maxGenerationAttempts || "missing" in target.providers());
}

/** What the program could have put in a record (its arguments, method name, program text, tool calls, sources, messages), without a recognizable copy of a credential. */
function redactRecordInput(input: RecordInput, redactor: Redactor): RecordInput {
  const { program, reuseDecision } = input;
  return {
    ...input,
    method: redactor.redact(input.method),
    args: redactData(asArray(asJsonSafe(input.args)), redactor),
    kwargs: redactData(asJsonSafe(input.kwargs), redactor) as Record<string, JsonValue>,
    program: program === null ? null : { ...program, code: redactor.redact(program.code) },
    reuseDecision: reuseDecision === undefined ? undefined : { ...reuseDecision, reason: redactor.redact(reuseDecision.reason) },
    toolCalls: redactData(input.toolCalls, redactor),
    attempts: input.attempts === undefined ? undefined : redactData(input.attempts, redactor),
    sources: redactData(input.sources, redactor),
  };
}

function asArray(value: JsonValue): JsonValue[] {
  return Array.isArray(value) ? value : [value];
}

/** The outcome with its error message cleaned; the outcome itself when there was nothing to take out (a run's value was cleaned already). */
function redactOutcome(outcome: Outcome, redactor: Redactor): Outcome {
  if (outcome.ok || outcome.errorType === undefined || outcome.errorMessage === undefined) return outcome;
  const message = redactor.redact(outcome.errorMessage);
  return message === outcome.errorMessage ? outcome : Outcome.failure(outcome.callId, outcome.errorType, message, { retriable: outcome.retriable });
}

/** The reuse decision of a call that ends ok (a store failure at commit undoes the keeping too). */
function decisionOf(draft: CallDraft, outcome: Outcome): ReuseDecision | undefined {
  return outcome.ok ? draft.reuse.reuseDecision : undefined;
}

function logLine(target: FinalizeTarget, draft: CallDraft, outcome: Outcome, durationMs: number, appended: boolean, redactor: Redactor | undefined): Record<string, unknown> {
  const { options, history } = target;
  return buildLogLine({
    role: target.role,
    model: draft.asked.model ?? options.model ?? null,
    provider: draft.asked.provider ?? null,
    method: draft.method,
    args: draft.args,
    kwargs: draft.kwargs,
    code: draft.program.code,
    parsed: draft.program.parsed,
    durationMs,
    attempts: draft.asked.attempts,
    tokens: draft.asked.tokens ?? (draft.asked.attempts === 0 ? { prompt: 0, completion: 0, cached: null, cacheWrite: null } : null),
    costUsd: costOfCall(target, draft),
    programSource: draft.program.code === null ? null : draft.program.programSource,
    artifactHit: draft.reuse.artifactHit,
    reuseDecision: decisionOf(draft, outcome),
    keptProgramDropped: draft.reuse.keptProgramDropped,
    attemptErrors: attemptErrors(draft.asked.failures),
    status: outcome.status,
    errorType: outcome.errorType ?? null,
    errorMessage: outcome.ok ? null : (outcome.errorMessage ?? ""),
    traceId: draft.traceId,
    callId: draft.callId,
    parentCallId: draft.parentCallId,
    depth: draft.depth,
    historySize: history.length,
    recordAppended: appended,
    tools: draft.tools.logFields(),
    attemptDetails: { attempts: draft.attemptLog.logged(draft.tools, loggedCode(draft.program.code)), repair_skipped: repairSkippedOf(target, draft, outcome) ?? null },
    effects: { effects: draft.tools.effectCounts(), on_failure: draft.undo.rule ?? null, on_failure_error: draft.undo.handlerError ?? null },
    knowledge: draft.knowledge === undefined ? undefined : knowledgeFields(draft.knowledge),
    otel: spanIds(draft.span),
    redactor,
    ...(options.debug
      ? {
          debug: {
            system: draft.asked.system,
            user: draft.asked.user,
            console: draft.program.console,
            context: target.context,
            historyPreview: history.latest(options.historyPreview.limit),
          },
        }
      : {}),
  });
}

/** The log line's knowledge fields: every source, the retrievals that found nothing, the sources that failed, what was retrieved and how long it took. */
function knowledgeFields(assembly: KnowledgeAssembly): NonNullable<LogLineInput["knowledge"]> {
  const names = sourceNames(assembly.records);
  return {
    knowledge_sources: names.all,
    knowledge_empty: names.empty,
    knowledge_failed: names.failed,
    retrieved_count: assembly.retrieved,
    knowledge_ms: assembly.ms,
  };
}

/** The program as the log line's `code` has it (cut as the record's `program` is): an attempt whose program it holds whole is not written twice. */
function loggedCode(code: string | null): string | null {
  return code === null ? null : truncateString(code);
}
