/**
 * A call's attempts, for its record and log line: a kept program's run (`n: 0`),
 * and each provider attempt (its request, the program it wrote and that program's run), with
 * when each began and ended, who wrote it, its tokens and how it failed; and why a failed call
 * was not repaired.
 */
import type { AttemptRecord, ProgramSource, RepairSkipped } from "../history/index.ts";
import { MAX_RECORDED_ATTEMPTS, programHash } from "../history/index.ts";
import { type ErrorType, type Outcome, truncateString } from "../shared/index.ts";
import type { ToolCallLog } from "../tools/index.ts";

/** Longest error message an attempt keeps. @unit characters */
const MAX_ATTEMPT_ERROR_CHARS = 1_000;
/** Longest program text a log line's attempt carries. @unit characters */
export const MAX_LOGGED_PROGRAM_CHARS = 20_000;

interface Attempt {
  readonly n: number;
  readonly startedAt: Date;
  completedAt: Date | undefined;
  programSource: ProgramSource | undefined;
  provider: string | undefined;
  model: string | undefined;
  code: string | undefined;
  /** `code`'s hash, once asked for. */
  hash?: string;
  tokens: { prompt: number; completion: number; cached?: number; cacheWrite?: number } | undefined;
  error: { readonly errorType: ErrorType; readonly message: string } | undefined;
  /** It failed by the program's own mistake (fed to the next attempt, when there is one). */
  mistake: boolean;
}

/** One log line's attempt: the record's, with the program's text. */
export type LoggedAttempt = AttemptRecord & { readonly program?: string };

/** The attempts of one call, in order; each begun, given its program, and ended once. */
export class AttemptLog {
  readonly #attempts: Attempt[] = [];

  /** Begins attempt `n` (0: a kept program's run). */
  begin(n: number, programSource?: ProgramSource): void {
    this.#attempts.push({ n, startedAt: new Date(), completedAt: undefined, programSource, provider: undefined, model: undefined, code: undefined, tokens: undefined, error: undefined, mistake: false });
  }

  /** Forgets the attempt just begun: it did not happen (a kept program another process had replaced). */
  drop(): void {
    this.#attempts.pop();
  }

  /** The program the current attempt runs, and who wrote it. */
  wrote(code: string, programSource: ProgramSource, writer?: { readonly provider: string; readonly model: string }): void {
    const attempt = this.#attempts.at(-1);
    if (attempt === undefined) return;
    attempt.code = code;
    attempt.programSource = programSource;
    if (writer !== undefined) {
      attempt.provider = writer.provider;
      attempt.model = writer.model;
    }
  }

  /** Adds one request's reported tokens to the current attempt. */
  countTokens(prompt: number | undefined, completion: number | undefined, cached: number | undefined, cacheWrite: number | undefined): void {
    const attempt = this.#attempts.at(-1);
    if (attempt === undefined) return;
    const before = attempt.tokens;
    attempt.tokens = {
      prompt: (before?.prompt ?? 0) + (prompt ?? 0),
      completion: (before?.completion ?? 0) + (completion ?? 0),
      ...(cached === undefined && before?.cached === undefined ? {} : { cached: (before?.cached ?? 0) + (cached ?? 0) }),
      ...(cacheWrite === undefined && before?.cacheWrite === undefined ? {} : { cacheWrite: (before?.cacheWrite ?? 0) + (cacheWrite ?? 0) }),
    };
  }

  /**
   * Ends the current attempt with its outcome, or the mistake fed to the next one. The call's
   * record may be written before its attempt is seen to end (the commit is part of the run), so
   * a later end with the outcome the call settled on replaces an earlier ok one (a commit that
   * failed, say); a failure is final: what ended the call after it (its time, say) is the call's.
   */
  end(outcome: Outcome, mistake?: { readonly errorType: ErrorType; readonly message: string }): void {
    const attempt = this.#attempts.at(-1);
    if (attempt === undefined || attempt.mistake || (attempt.completedAt !== undefined && attempt.error !== undefined)) return;
    attempt.completedAt = new Date();
    if (mistake !== undefined) {
      attempt.error = mistake;
      attempt.mistake = true;
    } else attempt.error = outcome.ok ? undefined : { errorType: outcome.errorType ?? "execution", message: outcome.errorMessage ?? "" };
  }

  /** The record's `attempts`: the last {@link MAX_RECORDED_ATTEMPTS}, an unfinished one ended now. */
  records(tools: ToolCallLog): AttemptRecord[] {
    const now = new Date();
    return this.#attempts.slice(-MAX_RECORDED_ATTEMPTS).map((attempt) => recordOf(attempt, tools, now));
  }

  /** The log line's `attempts`: the records, each with its program's text (bounded), but for one whose program is the line's `code` already. */
  logged(tools: ToolCallLog, lineCode: string | null): LoggedAttempt[] {
    const now = new Date();
    return this.#attempts
      .slice(-MAX_RECORDED_ATTEMPTS)
      .map((attempt) => ({ ...recordOf(attempt, tools, now), ...(attempt.code === undefined || attempt.code === lineCode ? {} : { program: truncateString(attempt.code, MAX_LOGGED_PROGRAM_CHARS) }) }));
  }

  /**
   * Why a failed call whose last attempt ran a program was not repaired: its program had
   * written (`effects`), the attempts were used up (`exhausted`), or what ended the call was not
   * the program's own mistake (a time-out, a spent budget after a mistake, say). Undefined for a
   * call that ended ok, or whose last attempt ran no program.
   */
  repairSkipped(outcome: Outcome, wrote: boolean, exhausted: () => boolean): RepairSkipped | undefined {
    const last = this.#attempts.at(-1);
    if (outcome.ok || last?.code === undefined) return undefined;
    if (!last.mistake) return "not_a_mistake";
    if (wrote) return "effects";
    return exhausted() ? "attempts_used" : "not_a_mistake";
  }
}

function recordOf(attempt: Attempt, tools: ToolCallLog, now: Date): AttemptRecord {
  const { tokens, error } = attempt;
  return {
    n: attempt.n,
    ...(attempt.programSource === undefined || attempt.code === undefined ? {} : { program_source: attempt.programSource }),
    started_at: attempt.startedAt.toISOString(),
    completed_at: (attempt.completedAt ?? now).toISOString(),
    ...(attempt.provider === undefined ? {} : { provider: truncateString(attempt.provider, 200) }),
    ...(attempt.model === undefined ? {} : { model: truncateString(attempt.model, 200) }),
    ...(tokens === undefined ? {} : { tokens: { prompt: tokens.prompt, completion: tokens.completion, ...(tokens.cached === undefined ? {} : { cached: tokens.cached }), ...(tokens.cacheWrite === undefined ? {} : { cache_write: tokens.cacheWrite }) } }),
    ...(error === undefined ? {} : { error_type: error.errorType, error_message: truncateString(error.message, MAX_ATTEMPT_ERROR_CHARS) }),
    tool_call_count: tools.countIn(attempt.n),
    ...(attempt.code === undefined ? {} : { program_hash: (attempt.hash ??= programHash(attempt.code)) }),
  };
}
