/**
 * In the isolate: what a program shows as text, bounded: its `console` (lines kept per call, past
 * a limit dropped with a marker) and what it throws (read into a plain `{ name, message }`,
 * whatever the thrown value's getters do). Sent into the isolate as source text (composed with
 * the other pieces in `child/agent-isolate.ts`), so it must use nothing from its module scope.
 */
import type { SandboxLimits } from "../limits.ts";

/** What a call's console keeps, held by the call. */
export interface ConsoleState {
  readonly ended: boolean;
  readonly console: string[];
  consoleChars: number;
  consoleTruncated: boolean;
}

export interface ConsoleParts {
  readonly print: (value: unknown, maxChars: number) => string;
  readonly limits: SandboxLimits;
}

export interface ProgramText {
  /** A value as text of at most `limit` characters (then marked as truncated); never throws. */
  capText(value: unknown, limit: number): string;
  /** What a program threw, as a plain name and message; never throws. */
  describeThrown(thrown: unknown): { name: string; message: string };
  /** The `console` a call's program gets. */
  consoleFor(call: ConsoleState): object;
}

export function createConsole(parts: ConsoleParts): ProgramText {
  "use strict";
  const { print, limits } = parts;
  const { freeze } = Object;
  const apply = Reflect.apply;
  const isArray = Array.isArray;
  const arrayToString = Array.prototype.toString;
  const arrayPush = Array.prototype.push;
  const StringCtor = String;

  function convertsAsArray(value: unknown): boolean {
    return typeof value === "object" && value !== null && (isArray(value) || (value as { toString?: unknown }).toString === arrayToString);
  }

  function capText(value: unknown, limit: number): string {
    let text: string;
    try {
      // An array's own string conversion expands every shared element without bound (so does
      // an array-like's that inherits it); the printer stops at the limit.
      text = typeof value === "string" ? value : value === undefined || value === null ? "" : convertsAsArray(value) ? print(value, limit) : StringCtor(value);
    } catch {
      return "[unprintable]";
    }
    return text.length > limit ? `${text.slice(0, limit)}… [truncated]` : text;
  }

  function describeThrown(thrown: unknown): { name: string; message: string } {
    if (typeof thrown === "object" && thrown !== null) {
      let name: unknown;
      let message: unknown;
      try {
        name = (thrown as { name?: unknown }).name;
      } catch {
        name = "Error";
      }
      try {
        message = (thrown as { message?: unknown }).message;
      } catch {
        message = "[message could not be read]";
      }
      return { name: capText(name, 200) || "Error", message: capText(message, limits.maxErrorMessageChars) };
    }
    return { name: "Thrown", message: capText(thrown, limits.maxErrorMessageChars) };
  }

  function itemText(item: unknown): string {
    if (typeof item === "string") return item;
    try {
      return typeof item !== "object" || item === null ? capText(item, 1000) : print(item, 2000);
    } catch {
      return capText(item, 1000);
    }
  }

  function consoleFor(call: ConsoleState): object {
    const write = (...items: unknown[]) => {
      if (call.ended || call.consoleTruncated) return;
      let line = "";
      for (let index = 0; index < items.length; index += 1) {
        line += (index === 0 ? "" : " ") + itemText(items[index]);
        if (line.length > limits.maxConsoleChars) break;
      }
      if (call.console.length >= limits.maxConsoleLines || call.consoleChars + line.length > limits.maxConsoleChars) {
        call.consoleTruncated = true;
        apply(arrayPush, call.console, ["… console output truncated"]);
        return;
      }
      call.consoleChars += line.length;
      apply(arrayPush, call.console, [line]);
    };
    return freeze({ log: write, info: write, warn: write, error: write, debug: write });
  }

  return freeze({ capText, describeThrown, consoleFor });
}
