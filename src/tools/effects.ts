/**
 * Undoing a call's effects: the writes in its ledger that were applied, or whose
 * outcome is unknown, each given to its tool's `revert` once, newest first, within the tool's
 * `timeoutMs`. A revert that throws, hangs or is cut off is recorded as `revert_failed` with
 * why; an effect whose tool has no `revert` (a fetch never has) is left as it is.
 */
import { safeMessage, within } from "../shared/index.ts";
import { endSpan, inSpan, type Span, startSpan } from "../tracing/index.ts";
import type { EffectState, ToolCallEntry } from "./tool-calls.ts";

/** One effect of a failed call, as `onFailure` sees it. */
export interface Effect {
  /** `order`, `shop.order`, or `fetch`. */
  readonly tool: string;
  /** What the tool was given (for a fetch: its method and URL). */
  readonly input: unknown;
  /** What the tool returned; undefined unless the effect was applied. */
  readonly result: unknown;
  readonly state: EffectState;
  /** Whether the tool has a `revert` (a fetch never has). */
  readonly undoable: boolean;
  /** The key the tool was given, `<callId>:<n>`; undefined for a fetch. */
  readonly idempotencyKey: string | undefined;
  /** With state `revert_failed`: why. */
  readonly revertError: string | undefined;
}

/** What a function given as `onFailure` receives: the call that failed, and the effects its programs left. */
export interface CallFailure {
  readonly callId: string;
  readonly role: string;
  readonly method: string;
  readonly errorType: string;
  readonly errorMessage: string;
  /** The call's writes that reached their tool, oldest first, as they stood when the call failed. */
  readonly effects: readonly Effect[];
  /** Undoes the applied and unknown effects that can be undone, newest first, once (later calls return the same); resolves with the effects as they then stand. */
  revert(): Promise<readonly Effect[]>;
}

/** What happens to a call's effects when it fails: left (`keep`), undone (`revert`), or the application's to decide. */
export type OnFailure = "keep" | "revert" | ((failure: CallFailure) => void | Promise<void>);

/** How an undo runs the application's code: in the call's caller's context, knowing which agents wait on it. */
export type RunRevert = <T>(work: () => T) => { readonly result: T; readonly ended: () => void };

/** The effects as `onFailure` sees them. */
export function effectsOf(entries: readonly ToolCallEntry[]): Effect[] {
  return entries.map((entry) => ({
    tool: entry.tool,
    input: entry.write?.input ?? entry.input,
    result: entry.state === "applied" || entry.state === "reverted" || entry.state === "revert_failed" ? entry.write?.result : undefined,
    state: entry.state ?? "unknown",
    undoable: entry.write?.revert !== undefined,
    idempotencyKey: entry.write?.idempotencyKey,
    revertError: entry.revertError,
  }));
}

/** Undoes `entries`' applied and unknown effects that have a `revert`, newest first, one at a time; each revert is a `revert_tool {tool}` span under `parent`. */
export async function undoEffects(entries: readonly ToolCallEntry[], callId: string, run: RunRevert, parent?: Span): Promise<void> {
  for (const entry of [...entries].reverse()) await undoOne(entry, callId, run, parent);
}

async function undoOne(entry: ToolCallEntry, callId: string, run: RunRevert, parent: Span | undefined): Promise<void> {
  const { write } = entry;
  if (write?.revert === undefined || (entry.state !== "applied" && entry.state !== "unknown")) return;
  const { revert, timeoutMs } = write;
  // A write that had not answered gets its time again to say what it did, so its undo does not come before it.
  if (entry.state === "unknown" && write.late !== undefined) await within(timeoutMs, undefined, () => undefined, () => write.late as Promise<void>);
  const state = entry.state as EffectState;
  if (state !== "applied" && state !== "unknown") return;
  const result = state === "applied" ? write.result : undefined;
  const timeoutMessage = `its revert did not answer within the tool's timeoutMs (${timeoutMs} ms)`;
  const span = startSpan(`revert_tool ${entry.tool}`, "internal", { "gen_ai.tool.name": entry.tool, "gen_ai.tool.call.id": write.toolCallId, "improv.call_id": callId, "improv.effect.state": state }, parent);
  let ended: (() => void) | undefined;
  const answer = await within(timeoutMs, undefined, () => new Error(timeoutMessage), (signal) => {
    const running = run(() => inSpan(span, () => revert(write.input, result, { signal, callId, toolCallId: write.toolCallId, idempotencyKey: write.idempotencyKey })));
    ended = running.ended;
    return running.result;
  });
  ended?.();
  if (answer.ok) {
    entry.state = "reverted";
    endSpan(span);
    return;
  }
  entry.state = "revert_failed";
  entry.revertError = answer.why === "timeout" ? timeoutMessage : `its revert threw: ${safeMessage(answer.error)}`;
  endSpan(span, {}, "revert_failed", entry.revertError);
}
