/**
 * What a call tells the application as it goes (`Agent.call(…, { onEvent })`), for a UI that
 * shows progress: asking the provider, a program ready, running it, each tool call and fetch, an
 * attempt that failed, and the end. A listener that throws is ignored: it never changes the call.
 */
import type { ErrorType, OutcomeStatus } from "../shared/index.ts";
import type { ProgramSource } from "../history/index.ts";

/** Every event names its call, and when it happened: milliseconds since the call began. */
interface EventBase {
  readonly callId: string;
  readonly role: string;
  readonly method: string;
  /** @unit ms since the call began */
  readonly atMs: number;
}

/** What a call's steps tell: each event, without what every event has. */
export type CallStep =
  | { readonly type: "asking"; readonly attempt: number }
  | { readonly type: "program"; readonly attempt: number; readonly source: ProgramSource }
  | { readonly type: "running"; readonly attempt: number }
  | { readonly type: "tool"; readonly tool: string; readonly effect: "read" | "write" }
  | { readonly type: "fetch"; readonly method: string; readonly url: string }
  | { readonly type: "attempt_failed"; readonly attempt: number; readonly errorType: ErrorType; readonly errorMessage: string }
  | { readonly type: "done"; readonly status: OutcomeStatus; readonly errorType: ErrorType | null };

/** One step of a call, as `onEvent` is told it. */
export type CallEvent = EventBase & CallStep;

/** The listener a call was given, or one that does nothing. */
export type EmitEvent = (step: CallStep) => void;

export const NO_EVENTS: EmitEvent = () => undefined;

/** An emitter for one call: each step stamped with the call and its time, given to `listener`; a listener that throws is ignored. */
export function eventsFor(listener: ((event: CallEvent) => void) | undefined, call: { readonly callId: string; readonly role: string; readonly method: string; readonly startedMs: number }): EmitEvent {
  if (listener === undefined) return NO_EVENTS;
  return (step) => {
    try {
      listener({ ...step, callId: call.callId, role: call.role, method: call.method, atMs: Math.round((performance.now() - call.startedMs) * 1000) / 1000 } as CallEvent);
    } catch {
      // The application's listener is told; what it does with the news is its own.
    }
  };
}
