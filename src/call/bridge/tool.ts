import { randomUUID } from "node:crypto";
import { type AskingRun, type BridgeAnswer, bridgeFailure, readToolInput, SANDBOX_LIMITS, type ToolRequest } from "../../sandbox/index.ts";
import { endSpan, inSpan, type Span, startSpan } from "../../tracing/index.ts";
import { copyToolInput, copyToolResult, type GrantedTool, type SchemaCheck, type Tool, type ToolCallEntry, type WriteEffect } from "../../tools/index.ts";
import { type ErrorType, safeMessage } from "../../shared/index.ts";
import { type Call, withinCallCode } from "../draft.ts";
import { askApproval } from "./approval.ts";
import { checkInThread } from "../../contracts/index.ts";

/**
 * A program's `tools.name(input)`: the input read, copied as JSON data and checked against the
 * tool's schema (a failure is the program's mistake: a `TypeError` in the program), approval
 * asked for a tool that may change the world, `execute` run in the host within the tool's
 * `timeoutMs` and the call's end, and the result copied as plain data. Every call is listed in
 * the call's record, and is an `execute_tool {tool}` span under the run's.
 */
export async function answerTool(request: ToolRequest, call: Call, run: AskingRun): Promise<BridgeAnswer<"tool">> {
  const { state, draft } = call;
  const granted = state.options.tools.byPath.get(request.tool);
  if (granted === undefined) return bridgeFailure("invalid_input", `tools.${request.tool.slice(0, 200)} is not a granted tool.`);
  const decoded = readToolInput(request);
  const input = decoded.ok ? asJson(granted, decoded.value) : decoded;
  // The record shows what the tool is given; an input refused shows as decoded, with stand-ins for what JSON cannot hold.
  draft.emit({ type: "tool", tool: granted.path, effect: granted.effect });
  // An input refused is recorded as decoded, what the sandbox could only write as text as that text.
  const shown = input.ok ? input.value : decoded.ok ? (readToolInput(request, false) as { readonly value?: unknown }).value : null;
  const entry = draft.tools.start(granted.path, shown, granted.effect, draft.asked.attempts);
  const toolCallId = randomUUID();
  const span = startSpan(
    `execute_tool ${granted.path}`,
    "internal",
    { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": granted.path, "gen_ai.tool.call.id": toolCallId, "improv.call_id": draft.callId, "improv.tool.effect": granted.effect },
    draft.program.runSpan,
  );
  const answer = await runTool(call, run, granted, entry, input, toolCallId, span);
  // A tool's message may quote its input: once the tree sent credentials, the span's is cleaned of them.
  endSpan(span, {}, answer.ok ? undefined : answer.failure.errorType, answer.ok ? undefined : draft.tree.redact(answer.failure.message));
  return answer;
}

type Input = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly message: string };

/** The input as JSON data, as the schema checks it and the tool is given it (see `copyToolInput`). */
function asJson(granted: GrantedTool, value: unknown): Input {
  const copied = copyToolInput(value, SANDBOX_LIMITS.maxToolInputChars);
  return copied.ok ? copied : { ok: false, message: `tools.${granted.path}(input): ${copied.message}` };
}

async function runTool(call: Call, run: AskingRun, granted: GrantedTool, entry: ToolCallEntry, input: Input, toolCallId: string, span: Span | undefined): Promise<BridgeAnswer<"tool">> {
  const { draft } = call;
  const fail = (errorType: ErrorType, message: string, retriable = false) => {
    draft.tools.end(entry, false, { errorType, message });
    return bridgeFailure(errorType, message, retriable);
  };
  const ended = () => fail("cancelled", `tools.${granted.path}: the call ended before the tool ran.`);
  if (!input.ok) return fail("invalid_input", input.message);
  if (run.signal.aborted) return ended();
  const checked = await checkInput(call, run, granted, input.value);
  if (!checked.ok) return checked.errorType === "tool" ? fail("tool", `tools.${granted.path}: its input schema failed while checking the input (${checked.message}).`) : fail(checked.errorType, `tools.${granted.path}: ${checked.message}`, true);
  if (!checked.value.ok) return fail("invalid_input", `tools.${granted.path}(input): the input does not match the tool's schema: ${checked.value.problems}`);
  const value = checked.value.value;
  let write: WriteEffect | undefined;
  if (granted.effect === "write") {
    if (run.signal.aborted) return ended();
    const { maxWriteCalls } = call.state.options;
    // Held before the wait for approval, so that writes made in parallel cannot all pass the limit.
    if (!draft.tools.holdWrite(maxWriteCalls)) return fail("tool", `tools.${granted.path}: ${draft.tools.writeLimitReached(maxWriteCalls)}; this one was not made.`);
    try {
      const approval = await askApproval(call, run, "tool", granted.path, value);
      if (!approval.approved) {
        return approval.ended ? fail("cancelled", `tools.${granted.path}: the call ended while the application was asked to approve the tool call.`) : fail("tool", `tools.${granted.path}: denied ${approval.why}.`);
      }
      // A run that ended meanwhile does not start the tool: nothing of an ended call runs on.
      if (run.signal.aborted) return ended();
      // From here the world may change: the call's programs are not run again on their own.
      write = startWrite(call, granted, entry, value, toolCallId);
    } finally {
      draft.tools.letGoWrite();
    }
  }
  // A run that ended meanwhile does not start the tool: nothing of an ended call runs on.
  if (run.signal.aborted) return ended();
  const options = { callId: draft.callId, toolCallId, messages: [], context: {}, ...(write === undefined ? {} : { idempotencyKey: write.idempotencyKey }) };
  let answer: unknown;
  // The tool's span is the active one while it runs: spans its own code starts are its children.
  const outcome = await bounded(call, run, granted, (signal) => (answer = inSpan(span, () => (granted.tool as Required<Pick<Tool, "execute">>).execute(value, { ...options, signal, abortSignal: signal }))));
  if (write !== undefined) settleWrite(entry, write, outcome, answer);
  if (!outcome.ok) return fail(outcome.errorType, `tools.${granted.path}: ${outcome.message}`, true);
  const copied = copyToolResult(outcome.value, SANDBOX_LIMITS.maxAnswerChars);
  // A getter's error may name host paths: taken out, as from any error of the tool.
  if (!copied.ok) return fail("tool", `tools.${granted.path} returned a value a program cannot receive: ${safeMessage(copied.message)}.`);
  draft.tools.end(entry, true);
  // Copied within the limit for what a program receives: measured already.
  return { ok: true, value: copied.value, measured: true };
}

/** A write about to reach its tool: counted, keyed, and in the call's effect ledger with what undoing it needs. */
function startWrite(call: Call, granted: GrantedTool, entry: ToolCallEntry, input: unknown, toolCallId: string): WriteEffect {
  const { draft } = call;
  draft.tools.markWrote(granted.path);
  const { tool } = granted;
  const write: WriteEffect = {
    input,
    toolCallId,
    idempotencyKey: `${draft.callId}:${draft.tools.writes}`,
    revert: granted.undoable ? (...args) => (tool.revert as NonNullable<Tool["revert"]>).call(tool, ...args) : undefined,
    timeoutMs: granted.timeoutMs,
  };
  draft.tools.addEffect(entry, write);
  return write;
}

/**
 * What became of a write: `applied` when its tool answered, `failed` when it threw, else
 * `unknown`; an `execute` that had not answered is followed, so an undo can learn what it did.
 */
function settleWrite(entry: ToolCallEntry, write: WriteEffect, outcome: Bounded<unknown>, answer: unknown): void {
  if (outcome.ok) {
    entry.state = "applied";
    write.result = outcome.value;
    return;
  }
  if (outcome.errorType === "tool") {
    entry.state = "failed";
    return;
  }
  if (answer === null || (typeof answer !== "object" && typeof answer !== "function")) return;
  write.late = Promise.resolve(answer as PromiseLike<unknown>).then(
    (result) => {
      if (entry.state !== "unknown") return;
      entry.state = "applied";
      write.result = result;
    },
    () => {
      if (entry.state === "unknown") entry.state = "failed";
    },
  );
}

/**
 * The input checked against the tool's schema. The application's schema code runs bounded, in
 * the caller's context; improv's own JSON Schema check of the application's schema needs
 * neither. A server's JSON Schema is hostile input too (`$ref`s that fan out cost time
 * exponential in their depth for one value): it is checked on a schema thread, within
 * {@link toolTimings}' time of its own (the tool's `timeoutMs` is for its call), which ends the
 * thread when it passes.
 */
async function checkInput(call: Call, run: AskingRun, granted: GrantedTool, value: unknown): Promise<Bounded<SchemaCheck>> {
  const { input } = granted;
  if (!input.ownCheck) return bounded(call, run, granted, () => input.check(value));
  if (!granted.untrusted || input.jsonSchema === undefined) return ownCheck(granted, value);
  const schema = serverSchemas.get(granted) ?? JSON.stringify(input.jsonSchema);
  serverSchemas.set(granted, schema);
  // Its own time, not the tool's timeoutMs (for its execute), which a thread starting would eat.
  const limitMs = toolTimings.serverSchemaCheckMs;
  return bounded(call, run, granted, (signal) => checkInThread(schema, value, signal), { limitMs, late: `its input was not checked against the server's schema within ${limitMs} ms, so the tool was not called (a schema that costly is the server's)` });
}

/** How long a server's JSON Schema may take to check one input, on its thread. A setting of the library; tests lower it. @unit ms */
export const toolTimings = { serverSchemaCheckMs: 5_000 };

/** Servers' JSON Schemas as the schema threads take them, made once per granted tool. */
const serverSchemas = new WeakMap<GrantedTool, string>();

/** improv's own check of an input (a deeply nested one may still exhaust the stack). */
async function ownCheck(granted: GrantedTool, value: unknown): Promise<Bounded<SchemaCheck>> {
  try {
    return { ok: true, value: await granted.input.check(value) };
  } catch (error) {
    return { ok: false, errorType: "tool", message: safeMessage(error) };
  }
}

type Bounded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly errorType: ErrorType; readonly message: string };

/**
 * Runs the application's code for a tool call (its schema's check, its `execute`) in the
 * caller's async context, knowing which agents wait on it, within the tool's `timeoutMs` and
 * the run's end (see `within`).
 */
async function bounded<T>(call: Call, run: AskingRun, granted: GrantedTool, work: (signal: AbortSignal) => T | PromiseLike<T>, own?: { readonly limitMs: number; readonly late: string }): Promise<Bounded<Awaited<T>>> {
  const { state, draft } = call;
  const ownLimitMs = own?.limitMs ?? granted.timeoutMs;
  const limitMs = Math.min(ownLimitMs, Math.max(0, run.timeLeftMs()));
  const timeoutMessage = limitMs < ownLimitMs ? "the call's callTimeoutMs ran out before the tool answered." : `${own?.late ?? `did not answer within its timeoutMs (${granted.timeoutMs} ms)`}.`;
  const answer = await withinCallCode(state, draft, limitMs, run.signal, () => new Error(timeoutMessage), work);
  if (answer.ok) return answer;
  if (answer.why === "timeout") return { ok: false, errorType: "timeout", message: timeoutMessage };
  if (answer.why === "aborted") return { ok: false, errorType: "cancelled", message: "the call ended before the tool answered." };
  return { ok: false, errorType: "tool", message: safeMessage(answer.error) };
}
