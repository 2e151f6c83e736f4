/**
 * Telling a program's mistakes from its answers. A program that does not parse, or in which
 * the engine raised a `ReferenceError`, `TypeError` or `SyntaxError` (`x is not defined`,
 * `undefined is not a function`), is wrong by its own mistake: the call asks the model again,
 * showing it the failure. An error the program made itself and threw on purpose (an argument
 * check's `throw new TypeError(...)`) is the call's answer.
 */
import type { Node } from "acorn";
import { full } from "acorn-walk";
import type { PreparedProgram } from "./shape.ts";

/** Error names that, raised by the engine, mean the program is wrong. */
const MISTAKE_NAMES: ReadonlySet<string> = new Set(["ReferenceError", "TypeError", "SyntaxError"]);

/** A line and column in a program's text, 1-based. */
export interface TextPosition {
  readonly line: number;
  readonly column: number;
}

/** How a run of a prepared program failed, as far as telling mistakes apart needs. */
export interface RunFailure {
  readonly errorType: string;
  readonly thrownName?: string;
  /** Where in the program as run (`prepared.source`) the error was made. */
  readonly location?: TextPosition;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyNode = Node & { readonly [field: string]: any };

/** The position in the model's own program of a position in the program as run. */
export function positionInProgram(prepared: Extract<PreparedProgram, { ok: true }>, code: string, location: TextPosition): TextPosition | undefined {
  const offset = offsetOf(prepared.source, location);
  if (offset === undefined) return undefined;
  return positionOf(code, prepared.toOriginal(offset));
}

/** Whether a failed run was the program's own mistake (see the module comment). */
export function isOwnMistake(prepared: Extract<PreparedProgram, { ok: true }>, failure: RunFailure): boolean {
  // A program that does not parse, or whose value its method's contract refuses.
  if (failure.errorType === "invalid_code" || failure.errorType === "invalid_output") return true;
  if (failure.errorType !== "execution" || failure.thrownName === undefined || !MISTAKE_NAMES.has(failure.thrownName)) return false;
  if (failure.location === undefined || !prepared.parsed.ok) return true;
  const offset = offsetOf(prepared.source, failure.location);
  return offset === undefined || !madeOnPurpose(prepared.parsed.ast, prepared.toOriginal(offset), failure.thrownName);
}

/** Error classes a program may construct (or call) itself. */
const ERROR_CONSTRUCTORS: ReadonlySet<string> = new Set(["Error", "TypeError", "RangeError", "ReferenceError", "SyntaxError", "EvalError", "URIError", "AggregateError"]);

/**
 * Whether the error was made by the program's own code where it was created: a
 * `new TypeError(…)` (or a call of it) of the error's own class, a class of the program's that
 * extends another (an error class of its own), or a `super(…)` call in one, at that spot.
 */
function madeOnPurpose(ast: Node, offset: number, name: string): boolean {
  const subclasses = new Set<string>();
  full(ast, (node) => {
    const any = node as AnyNode;
    if ((any.type === "ClassDeclaration" || any.type === "ClassExpression") && any.id && any.superClass) subclasses.add(any.id.name);
  });
  let onPurpose = false;
  full(ast, (node) => {
    const any = node as AnyNode;
    if (any.start !== offset || (any.type !== "NewExpression" && any.type !== "CallExpression")) return;
    const callee = any.callee as AnyNode;
    if (callee.type === "Super") onPurpose = true;
    else if (callee.type === "Identifier" && ((ERROR_CONSTRUCTORS.has(callee.name) && callee.name === name) || subclasses.has(callee.name))) onPurpose = true;
  });
  return onPurpose;
}

function offsetOf(text: string, { line, column }: TextPosition): number | undefined {
  let offset = 0;
  for (let current = 1; current < line; current += 1) {
    const newline = text.indexOf("\n", offset);
    if (newline === -1) return undefined;
    offset = newline + 1;
  }
  const target = offset + column - 1;
  return target <= text.length ? target : undefined;
}

function positionOf(text: string, offset: number): TextPosition {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const line = before.split("\n").length;
  return { line, column: before.length - before.lastIndexOf("\n") };
}
