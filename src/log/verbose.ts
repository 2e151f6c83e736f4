/**
 * The `verbose` option (`IMPROV_VERBOSE`): each program as it is about to run, and each call's
 * outcome, written to stderr as calls go, for a person watching. Bounded, shown as text (what
 * a model or a server wrote may hold escape sequences meant for the terminal), and never a
 * failure of the call: a stderr that cannot be written to is ignored.
 */
import { type Outcome, terminalText, truncateString } from "../shared/index.ts";
import { stringify } from "safe-stable-stringify";

const MAX_PROGRAM_CHARS = 4_000;
const MAX_VALUE_CHARS = 300;

function write(text: string): void {
  try {
    process.stderr.write(terminalText(text));
  } catch {
    // Not the call's failure.
  }
}

/** A call's label: `role.method #callid` (the id's first 8 characters). */
function label(role: string, method: string, callId: string): string {
  return `${role}.${method} #${callId.slice(0, 8)}`;
}

/** The program a call is about to run, with where it came from. */
export function showProgram(role: string, method: string, callId: string, attempt: number, source: string, code: string): void {
  const body = truncateString(code, MAX_PROGRAM_CHARS)
    .split("\n")
    .map((line) => `  │ ${line}`)
    .join("\n");
  write(`improv ▸ ${label(role, method, callId)} runs a ${source} program${attempt > 0 ? ` (attempt ${attempt})` : ""}:\n${body}\n`);
}

/** How a call ended. */
export function showOutcome(role: string, method: string, callId: string, outcome: Outcome, durationMs: number): void {
  const ended = outcome.ok ? `ok → ${truncateString(stringify(outcome.value) ?? String(outcome.value), MAX_VALUE_CHARS)}` : `${outcome.errorType}: ${truncateString(outcome.errorMessage, MAX_VALUE_CHARS)}`;
  write(`improv ◂ ${label(role, method, callId)} ${ended} (${Math.round(durationMs)} ms)\n`);
}
