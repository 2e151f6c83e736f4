/**
 * A value checked against its method's `returns` before the call ends: the schema's
 * output (a Standard Schema may transform it), the problems found (the program's mistake,
 * repaired like one), or why the schema itself could not say (it threw, never settled, took
 * longer than its time, or answered with something that is not a result). A JSON Schema checks
 * JSON data only, so what the caller gets is what it passed; a program's JSON Schema is checked
 * on a schema thread, within the call's time.
 */
import { type Call, withinCallCode } from "./draft.ts";
import { safeMessage, within } from "../shared/index.ts";
import { JSON_DATA_HINT, jsonDataProblem } from "../contracts/index.ts";

/** How long a `returns` schema may take to check one value. @unit ms */
export const RETURNS_CHECK_LIMIT_MS = 10_000;

export type ReturnsCheck =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly mismatch: true; readonly problems: string }
  | { readonly ok: false; readonly mismatch: false; readonly problem: string };

/** The value checked against the method's `returns`; undefined when the method declares none. */
export async function checkReturns(call: Call, value: unknown): Promise<ReturnsCheck | undefined> {
  const { state, draft } = call;
  const method = state.options.contract.methods.get(draft.method);
  const schema = method?.returns;
  if (schema === undefined) return undefined;
  if (method?.returnsJson === true) {
    const notJson = jsonDataProblem(value);
    if (notJson !== undefined) return { ok: false, mismatch: true, problems: `${notJson}. ${JSON_DATA_HINT}` };
  }
  const callLeftMs = Math.max(0, Math.ceil(draft.endsAtMs - performance.now()));
  const limitMs = Math.min(RETURNS_CHECK_LIMIT_MS, callLeftMs);
  const late = limitMs < RETURNS_CHECK_LIMIT_MS ? `the call's callTimeoutMs ran out while it checked (${limitMs} ms left)` : `it did not answer within ${limitMs} ms`;
  // The application's schema code and a program's schema run bounded (the application's in the caller's async context); improv's own check of the application's JSON Schema needs neither.
  const checked = schema.ownCheck
    ? await within(Number.POSITIVE_INFINITY, undefined, () => undefined, () => schema.check(value))
    : await withinCallCode(call.state, draft, limitMs, draft.signal, () => new Error(late), (signal) => schema.check(value, signal));
  if (!checked.ok) {
    const problem = checked.why === "timeout" ? late : checked.why === "aborted" ? "the call was cancelled while it checked" : safeMessage(checked.error);
    return { ok: false, mismatch: false, problem };
  }
  return checked.value.ok ? { ok: true, value: checked.value.value } : { ok: false, mismatch: true, problems: checked.value.problems };
}
