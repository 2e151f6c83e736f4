/**
 * Repair with feedback: when an attempt fails, the next attempt of the same call tells the
 * model what it sent and how that failed, so a retry is not the same request again.
 */
import { type ErrorType, truncateString } from "../shared/index.ts";
import type { TextPosition } from "../programs/index.ts";

/** Longest program shown back to the model. @unit characters */
const MAX_FEEDBACK_PROGRAM_CHARS = 4_000;
/** Longest error message shown back to the model, and kept per attempt in the log line. @unit characters */
const MAX_FEEDBACK_ERROR_CHARS = 1_000;

/** One failed attempt of a call. */
export interface AttemptFailure {
  /** 1 for the first provider attempt; 0 for a kept program run again. */
  readonly attempt: number;
  readonly errorType: ErrorType;
  readonly message: string;
  /** The program the attempt ran, when it got that far. */
  readonly code?: string;
  /** Where in that program it failed, when known. */
  readonly position?: TextPosition;
}

/** The feedback block of the next attempt's user prompt, or "" when the failure had no program to show. */
export function feedbackBlock(failure: AttemptFailure): string {
  if (failure.code === undefined) return "";
  const where = failure.position === undefined ? "" : ` (line ${failure.position.line}, column ${failure.position.column} of that program)`;
  const fence = failure.code.includes("```") ? "~~~" : "```";
  return [
    failure.attempt === 0 ? "The program kept from an earlier call did not work this time. It was:" : `Your previous answer (attempt ${failure.attempt}) did not work. It was:`,
    `${fence}js`,
    truncateString(failure.code, MAX_FEEDBACK_PROGRAM_CHARS),
    fence,
    `It failed with: ${truncateString(failure.message, MAX_FEEDBACK_ERROR_CHARS)}${where}.`,
    "Correct the mistake and answer with the whole corrected body.",
    "",
    "",
  ].join("\n");
}

/** The failed attempts as the log line carries them. */
export function attemptErrors(failures: readonly AttemptFailure[]): { attempt: number; error_type: ErrorType; error_message: string }[] {
  return failures.map((failure) => ({ attempt: failure.attempt, error_type: failure.errorType, error_message: truncateString(failure.message, MAX_FEEDBACK_ERROR_CHARS) }));
}
