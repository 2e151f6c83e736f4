import { randomUUID } from "node:crypto";
import { readToolInput } from "../../sandbox/host/inbound.ts";
import { SANDBOX_LIMITS } from "../../sandbox/limits.ts";
import { bridgeFailure, type BridgeAnswer, type ToolRequest } from "../../sandbox/protocol.ts";
import type { AskingRun } from "../../sandbox/host/pending-run.ts";
import { endSpan, startSpan } from "../../tracing/tracing.ts";
import type { GrantedTool } from "../../tools/grant.ts";
import type { Tool } from "../../tools/tool.ts";
import { runWhileWaiting, withAgents } from "../../tools/reentry.ts";
import { copyToolResult } from "../../tools/result.ts";
import type { ToolCallEntry } from "../../tools/tool-calls.ts";
import type { ErrorType } from "../../outcome.ts";
import type { Call } from "../draft.ts";

/**
 * A program's `tools.name(input)`: the input read and checked against the tool's schema (a
 * failure is the program's mistake: a `TypeError` in the program), approval asked for a tool
 * that may change the world, `execute` run in the host within the tool's `timeoutMs` and the
 * call's end, and the result copied as plain data. Every call is listed in the call's record,
 * and is an `execute_tool {tool}` span under the run's.
 */
export async function answerTool(request: ToolRequest, call: Call, run: AskingRun): Promise<BridgeAnswer<"tool">> {
  const { state, draft } = call;
  const granted = state.options.tools.byPath.get(request.tool);
  if (granted === undefined) return bridgeFailure("invalid_input", `tools.${request.tool.slice(0, 200)} is not a granted tool.`);
  const input = readToolInput(request);
  const entry = draft.tools.start(granted.path, input.ok ? input.value : null, granted.effect, draft.attempts);
  const toolCallId = randomUUID();
  const span = startSpan(
    `execute_tool ${granted.path}`,
    "internal",
    { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": granted.path, "gen_ai.tool.call.id": toolCallId, "improv.call_id": draft.callId, "improv.tool.effect": granted.effect },
    draft.runSpan,
  );
  const answer = await runTool(call, run, granted, entry, input, toolCallId);
  endSpan(span, {}, answer.ok ? undefined : answer.failure.errorType, answer.ok ? undefined : answer.failure.message);
  return answer;
}

type Input = ReturnType<typeof readToolInput>;

async function runTool(call: Call, run: AskingRun, granted: GrantedTool, entry: ToolCallEntry, input: Input, toolCallId: string): Promise<BridgeAnswer<"tool">> {
  const { draft } = call;
  const fail = (errorType: ErrorType, message: string, retriable = false) => {
    draft.tools.end(entry, false, { errorType, message });
    return bridgeFailure(errorType, message, retriable);
  };
  if (!input.ok) return fail("invalid_input", input.message);
  let checked;
  try {
    checked = await granted.input.check(input.value);
  } catch (error) {
    return fail("tool", `tools.${granted.path}: its input schema failed while checking the input (${safeMessage(error)}).`);
  }
  if (!checked.ok) return fail("invalid_input", `tools.${granted.path}(input): the input does not match the tool's schema: ${checked.problems}`);
  if (granted.effect === "write") {
    const approved = await untilEnded(approve(call, granted, checked.value), run.signal);
    if (approved === ENDED) return fail("cancelled", "the call ended while the application was asked to approve the tool call.");
    if (approved !== true) return fail("tool", `tools.${granted.path}: denied${approved === false ? " by the application" : ` (the approval failed: ${approved.problem})`}.`);
    // From here the world may change: the call's programs are not run again on their own.
    draft.tools.markWrote(granted.path);
  }
  const outcome = await execute(call, run, granted, checked.value, toolCallId);
  if (!outcome.ok) return fail(outcome.errorType, `tools.${granted.path}: ${outcome.message}`, true);
  const copied = copyToolResult(outcome.value, SANDBOX_LIMITS.maxAnswerChars);
  if (!copied.ok) return fail("tool", `tools.${granted.path} returned a value a program cannot receive: ${copied.message}.`);
  draft.tools.end(entry, true);
  // Copied within the limit for what a program receives: measured already.
  return { ok: true, value: copied.value, measured: true };
}

/** `toolApproval`'s answer: true, false, or why it could not answer (which refuses the call too). */
async function approve(call: Call, granted: GrantedTool, input: unknown): Promise<boolean | { problem: string }> {
  const { state, draft } = call;
  const ask = state.options.toolApproval;
  if (ask === undefined) return true;
  try {
    const answer = await ask({ tool: granted.path, input, role: state.role, agentId: state.agentId, callId: draft.callId });
    return answer === true;
  } catch (error) {
    return { problem: safeMessage(error) };
  }
}

const ENDED = Symbol("ended");

/** `pending`, or {@link ENDED} once `signal` aborts (an approval that never answers does not hold the call). */
function untilEnded<T>(pending: Promise<T>, signal: AbortSignal): Promise<T | typeof ENDED> {
  if (signal.aborted) return Promise.resolve(ENDED);
  return new Promise((resolve) => {
    const onAbort = () => resolve(ENDED);
    signal.addEventListener("abort", onAbort, { once: true });
    pending.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      () => resolve(ENDED),
    );
  });
}

type Executed = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly errorType: ErrorType; readonly message: string };

/**
 * Runs the tool's `execute` with a signal that aborts when the run ends or the tool's time is
 * up; a tool that ignores its signal does not hold the call (its late result is ignored).
 */
async function execute(call: Call, run: AskingRun, granted: GrantedTool, input: unknown, toolCallId: string): Promise<Executed> {
  const { state, draft } = call;
  const limitMs = Math.min(granted.timeoutMs, Math.max(0, run.timeLeftMs()));
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error(`The tool did not answer within ${granted.timeoutMs} ms.`));
  }, limitMs);
  const onEnd = () => controller.abort(run.signal.reason);
  if (run.signal.aborted) onEnd();
  else run.signal.addEventListener("abort", onEnd, { once: true });
  const waiting = withAgents(draft.waitingAgents, state.id);
  const stopped = new Promise<never>((_, reject) => controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true }));
  const running = runWhileWaiting(waiting, () => {
    try {
      const options = { signal: controller.signal, abortSignal: controller.signal, callId: draft.callId, toolCallId, messages: [], context: {} };
      return Promise.resolve((granted.tool as Required<Pick<Tool, "execute">>).execute(input, options));
    } catch (error) {
      return Promise.reject(error);
    }
  });
  running.result.catch(() => undefined); // It may reject after the race is lost; that must not go unhandled.
  try {
    return { ok: true, value: await Promise.race([running.result, stopped]) };
  } catch (error) {
    if (timedOut) return { ok: false, errorType: "timeout", message: `did not answer within its timeoutMs (${granted.timeoutMs} ms).` };
    if (controller.signal.aborted) return { ok: false, errorType: "cancelled", message: "the call ended before the tool answered." };
    return { ok: false, errorType: "tool", message: safeMessage(error) };
  } finally {
    clearTimeout(timer);
    run.signal.removeEventListener("abort", onEnd);
    running.ended();
  }
}

const HOST_PATH = /(?:file:\/\/)?(?:[A-Za-z]:)?(?:[\\/][\w.@%+~-]+){2,}(?::\d+){0,2}/g;
const MAX_TOOL_MESSAGE_CHARS = 1_000;

/** A tool's failure as the program may read it: its message only (no stack), with host paths taken out, bounded. */
function safeMessage(error: unknown): string {
  let text: string;
  try {
    text = error instanceof Error ? String(error.message) : typeof error === "string" ? error : "it failed with a value that is not an Error";
  } catch {
    text = "it failed with an error that could not be read";
  }
  text = text.replace(HOST_PATH, "[path]").replace(/\s+/g, " ").trim();
  if (text === "") text = "it failed without a message";
  return text.length > MAX_TOOL_MESSAGE_CHARS ? `${text.slice(0, MAX_TOOL_MESSAGE_CHARS)}…` : text;
}
