/**
 * What the host sends into a running program is bounded like what comes out of it: every
 * bridge answer's value is measured here, as the JSON it would be, before it is sent. A value
 * past `SANDBOX_LIMITS.maxAnswerChars` is answered with a failure that says so; so is one that
 * cannot be read.
 */
import { SANDBOX_LIMITS } from "../limits.ts";
import { bridgeFailure, type BridgeAnswer, type BridgeKind } from "../protocol.ts";
import { CIRCULAR_CHARS, DATE_CHARS, ValueTooLargeError } from "../value-size.ts";

/** A value measured against the result limit on its way in (`measured`) fits what a program may receive. */
const MEASURED_FITS = SANDBOX_LIMITS.maxResultChars <= SANDBOX_LIMITS.maxAnswerChars;

/** The answer as it may be sent: measured, or replaced by a failure that says why not. */
export function boundAnswer(kind: BridgeKind, answer: BridgeAnswer): BridgeAnswer {
  if (!answer.ok || (answer.measured === true && MEASURED_FITS)) return answer;
  try {
    measureJsonChars(answer.value, SANDBOX_LIMITS.maxAnswerChars);
    return answer;
  } catch (error) {
    if (error instanceof ValueTooLargeError) {
      return bridgeFailure("execution", `The answer to this ${kind} request is larger than the ${SANDBOX_LIMITS.maxAnswerChars}-character limit for what a program receives, as JSON (shared parts count each time they appear).`);
    }
    return bridgeFailure("execution", `The answer to this ${kind} request could not be read (${error instanceof Error ? error.message : String(error)}).`);
  }
}

/**
 * Past this many characters of JSON an answer is large: the time it takes to send, read and copy
 * is worth a line from the sandbox process saying when the program has it (see `RunSignal`).
 */
const SMALL_ANSWER_CHARS = 64 * 1024;

/** Whether a (bounded) answer is small: a failure, or a value of at most {@link SMALL_ANSWER_CHARS} as JSON (measured no further than that). */
export function isSmallAnswer(answer: BridgeAnswer): boolean {
  if (!answer.ok) return true;
  try {
    measureJsonChars(answer.value, SMALL_ANSWER_CHARS);
    return true;
  } catch {
    return false;
  }
}

interface Frame {
  readonly node: object;
  total: number;
  parts: Iterator<unknown>;
}

/**
 * How many characters `root` would take as JSON, counted on the live value: a node reached
 * twice counts twice (as JSON writes it) but is walked once, a cycle counts as its stand-in, and
 * the walk stops with a {@link ValueTooLargeError} as soon as the count passes `limit`. Every
 * step adds at least one character, so the work is bounded by the limit whatever the value.
 */
export function measureJsonChars(root: unknown, limit: number): number {
  const sizes = new Map<object, number>();
  const open = new Set<object>();
  const stack: Frame[] = [];
  let result = 0;
  const add = (chars: number): void => {
    const frame = stack.at(-1);
    if (frame === undefined) result += chars;
    else frame.total += chars;
    if ((frame?.total ?? result) > limit) throw new ValueTooLargeError(limit);
  };
  const enter = (value: unknown): void => {
    if (typeof value !== "object" || value === null) return add(primitiveChars(value));
    const known = sizes.get(value);
    if (known !== undefined) return add(known);
    if (open.has(value)) return add(CIRCULAR_CHARS);
    const frame = { node: value, total: 0 } as Frame;
    frame.parts = partsOf(value, frame);
    open.add(value);
    stack.push(frame);
  };
  enter(root);
  for (let frame = stack.at(-1); frame !== undefined; frame = stack.at(-1)) {
    const next = frame.parts.next();
    if (frame.total > limit) throw new ValueTooLargeError(limit);
    if (next.done === true) {
      stack.pop();
      open.delete(frame.node);
      sizes.set(frame.node, frame.total);
      add(frame.total);
    } else {
      enter(next.value);
    }
  }
  return result;
}

function primitiveChars(value: unknown): number {
  if (typeof value === "string") return value.length + 2;
  if (typeof value === "number" || typeof value === "bigint" || typeof value === "boolean") return String(value).length;
  return 4;
}

/** A node's parts as JSON would write them: its own characters go on `frame`, its children are yielded. */
function* partsOf(node: object, frame: Frame): Generator<unknown> {
  frame.total += 2;
  if (Array.isArray(node)) {
    for (let index = 0; index < node.length; index += 1) {
      if (index > 0) frame.total += 1;
      yield node[index];
    }
  } else if (node instanceof Map) {
    for (const [key, value] of node) {
      frame.total += 2;
      yield key;
      yield value;
    }
  } else if (node instanceof Set) {
    for (const value of node) {
      frame.total += 1;
      yield value;
    }
  } else if (ArrayBuffer.isView(node) || node instanceof ArrayBuffer) {
    frame.total += node.byteLength * 2;
  } else if (node instanceof Date) {
    frame.total += DATE_CHARS - 2;
  } else {
    let first = true;
    for (const key of Object.keys(node)) {
      frame.total += key.length + (first ? 3 : 4);
      first = false;
      yield (node as Record<string, unknown>)[key];
    }
  }
}
