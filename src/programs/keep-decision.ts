/**
 * Whether a program that worked may be kept and run again for later calls of the same shape:
 * only when its method takes part in reuse, the program does not bake this call's input into
 * its text (then it would answer every later call as it answered this one), and its result is
 * not prose it wrote itself (then it is an answer, not a method). Decided on the program's
 * syntax tree, never by searching its text.
 */
import type { Node } from "acorn";
import { full } from "acorn-walk";
import { describeError, describeType } from "../shared/index.ts";
import { writtenProse } from "./prose.ts";
import type { PreparedProgram } from "./shape.ts";

/** Whether a program that worked was kept for reuse, and why: the record, the log line and `improv programs` say it. */
export interface ReuseDecision {
  readonly kept: boolean;
  readonly reason: string;
}

/** Methods that by convention take free-form requests: kept only when named in `reuse: { only }`. */
export const FREE_FORM_METHODS: ReadonlySet<string> = new Set(["ask", "chat", "discuss", "answer", "respond"]);

/** Shortest string argument that counts as baked in when the program holds it as a literal. */
const MIN_BAKED_CHARS = 3;
/** Shortest literal that counts as baked in when a passage (or state value) of the call's knowledge holds it. */
const MIN_KNOWLEDGE_LITERAL_CHARS = 16;
/** Consecutive words of a string argument that, repeated in a literal, count as baked in. */
const BAKED_WORDS = 3;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyNode = Node & { readonly [field: string]: any };

/** Whether calls of `method` may run a kept program (and keep the ones that work). */
export function takesPartInReuse(method: string, rule: ReuseRule): boolean {
  return whyNotReused(method, rule) === undefined;
}

/** Why calls of `method` take no part in reuse, or undefined when they do. */
export function whyNotReused(method: string, rule: ReuseRule): string | undefined {
  if (!rule.enabled) return "reuse is off for this agent (reuse: false)";
  if (rule.only !== undefined) return rule.only.has(method) ? undefined : "the method is not named in reuse: { only }";
  if (rule.except.has(method)) return "the method is named in reuse: { except }";
  if (FREE_FORM_METHODS.has(method)) return `${method} by convention takes free-form requests (name it in reuse: { only } to keep its programs)`;
  return undefined;
}

/**
 * Whether the program that worked for a call of `method` is kept, and why: the method's part in
 * reuse first, then the program's own (see {@link keepDecision}). Decided after the program ran
 * and wrote: a check that cannot be made keeps the program out, and never fails the call.
 */
export function decideReuse(
  method: string,
  rule: ReuseRule,
  prepared: Extract<PreparedProgram, { ok: true }>,
  args: readonly unknown[],
  kwargs: Readonly<Record<string, unknown>>,
  knowledgeTexts: readonly string[] = [],
): ReuseDecision {
  const refused = whyNotReused(method, rule);
  if (refused !== undefined) return { kept: false, reason: refused };
  try {
    return keepDecision(prepared, args, kwargs, knowledgeTexts);
  } catch (error) {
    return { kept: false, reason: `its reuse check could not be made (${describeError(error)}), so it is not kept` };
  }
}

/**
 * Whether a program that worked for this call is kept for later calls of its key, and why: the
 * whole rule of docs/programs.md section 5 in one place.
 */
export function keepDecision(prepared: Extract<PreparedProgram, { ok: true }>, args: readonly unknown[], kwargs: Readonly<Record<string, unknown>>, knowledgeTexts: readonly string[] = []): ReuseDecision {
  if (!prepared.parsed.ok) return { kept: false, reason: "the program does not parse as JavaScript here, so what it does with its input cannot be told" };
  // A function or class method the shape calls gets the call's input as its parameters.
  const readsInputByShape = prepared.callee !== undefined && readsParameters(prepared.callee);
  const baked = bakedInput(prepared.parsed.ast, args, kwargs, readsInputByShape, knowledgeTexts);
  if (baked !== undefined) return { kept: false, reason: baked };
  const prose = writtenProse(prepared.parsed.ast, prepared.callee);
  if (prose !== undefined) return { kept: false, reason: `its result is prose it wrote itself ("${prose.sample}"): an answer, not a method` };
  const hasInput = args.length > 0 || Object.keys(kwargs).length > 0;
  const input = hasInput ? "it reads the call's input, holds none of it in its text" : "the call had no input";
  return { kept: true, reason: `${input}, and its result is computed, not prose it wrote` };
}

/**
 * Why the program bakes this call's input into itself (so it must not be kept), or undefined
 * when it does not: the call had arguments and the program reads none of `args`, `kwargs` and `knowledge`
 * (a function or class the call's shape rule calls with them counts as reading them; a name in
 * key position, `{ args: 1 }` or `o.kwargs`, does not), or a string literal or a key of the
 * program holds a string argument (three characters or more, letter case ignored) or repeats
 * three consecutive words of one.
 */
export function bakedInput(ast: Node, args: readonly unknown[], kwargs: Readonly<Record<string, unknown>>, readsInputByShape = false, knowledgeTexts: readonly string[] = []): string | undefined {
  let readsInput = readsInputByShape;
  const literals: string[] = [];
  // The walk does not visit names in key position (`{ args: 1 }`, `o.kwargs`): they are not
  // reads of the input, but they are text of the program, so they are taken from their parent.
  full(ast, (node) => {
    const any = node as AnyNode;
    // The call's knowledge is its input too: retrieved for each call.
    if (any.type === "Identifier" && (any.name === "args" || any.name === "kwargs" || any.name === "knowledge")) readsInput = true;
    else if (any.type === "Literal" && typeof any.value === "string") literals.push(normalize(any.value));
    else if (any.type === "TemplateElement" && typeof any.value?.cooked === "string") literals.push(normalize(any.value.cooked));
    else if ((any.type === "Property" || any.type === "PropertyDefinition" || any.type === "MethodDefinition") && !any.computed && any.key?.type === "Identifier") literals.push(normalize(any.key.name));
    else if (any.type === "MemberExpression" && !any.computed && any.property?.type === "Identifier") literals.push(normalize(any.property.name));
  });
  const hasInput = args.length > 0 || Object.keys(kwargs).length > 0;
  if (hasInput && !readsInput) return "the call had arguments and the program reads neither args nor kwargs";
  for (const argument of stringArguments([...args, ...Object.values(kwargs)])) {
    const text = normalize(argument);
    if (text.length >= MIN_BAKED_CHARS && literals.some((literal) => literal.includes(text))) return "the program holds a string argument as a literal";
    const words = text.split(" ");
    for (let start = 0; start + BAKED_WORDS <= words.length; start += 1) {
      const run = words.slice(start, start + BAKED_WORDS).join(" ");
      if (literals.some((literal) => literal.includes(run))) return "a literal of the program repeats words of a string argument";
    }
  }
  // What the call's knowledge brought (a passage, a state value) is its input too:
  // copied into the program, it would answer every later call from this call's passages.
  const long = literals.filter((literal) => literal.length >= MIN_KNOWLEDGE_LITERAL_CHARS);
  if (long.length > 0 && knowledgeTexts.some((text) => long.some((literal) => normalize(text).includes(literal)))) return "the program holds text the call's knowledge brought as a literal";
  return undefined;
}

/**
 * Whether a function reads what it is called with: a parameter it declares (destructured or
 * rest ones too), or `arguments`. The function a program's shape calls with the call's
 * arguments reads the call's input only so.
 */
export function readsParameters(fn: Node): boolean {
  const any = fn as AnyNode;
  const names = new Set<string>(["arguments"]);
  const bind = (pattern: AnyNode | null): void => {
    if (pattern === null) return;
    if (pattern.type === "Identifier") names.add(pattern.name);
    else if (pattern.type === "AssignmentPattern") bind(pattern.left);
    else if (pattern.type === "RestElement") bind(pattern.argument);
    else if (pattern.type === "ArrayPattern") for (const element of pattern.elements as (AnyNode | null)[]) bind(element);
    else if (pattern.type === "ObjectPattern") for (const property of pattern.properties as AnyNode[]) bind(property.type === "RestElement" ? property.argument : property.value);
  };
  for (const parameter of (any.params ?? []) as AnyNode[]) bind(parameter);
  let reads = false;
  if (any.body) {
    full(any.body as Node, (node) => {
      const visited = node as AnyNode;
      if (visited.type === "Identifier" && names.has(visited.name)) reads = true;
    });
  }
  return reads;
}

/** Text as literals and arguments are compared: whitespace runs as one space, letter case ignored. */
function normalize(text: string): string {
  return text.replace(/\s+/g, " ").trim().toLowerCase();
}

/** The strings among the arguments, nested ones included (a bounded walk). */
function stringArguments(values: readonly unknown[]): string[] {
  const strings: string[] = [];
  const pending: unknown[] = [...values];
  const seen = new Set<object>();
  for (let visited = 0; pending.length > 0 && visited < 1_000; visited += 1) {
    const value = pending.pop();
    if (typeof value === "string") strings.push(value);
    else if (typeof value === "object" && value !== null && !seen.has(value)) {
      seen.add(value);
      if (Array.isArray(value)) pending.push(...value.slice(0, 100));
      else if (Object.getPrototypeOf(value) === Object.prototype) pending.push(...Object.values(value).slice(0, 100));
    }
  }
  return strings;
}

/**
 * Who shares a kept program: every agent of the role (`"role"`), or only the agent the
 * application made and its helpers (`"agent"`), for agents that serve users who do not trust
 * each other.
 */
export type ReuseScope = "role" | "agent";

/** Which methods' programs are kept and run again, and by whom. */
export interface ReuseRule {
  readonly enabled: boolean;
  readonly except: ReadonlySet<string>;
  /** When given, only these methods (free-form ones included). */
  readonly only: ReadonlySet<string> | undefined;
  readonly scope: ReuseScope;
}

const REUSE_SHAPE = 'Option "reuse" must be true, false, or an object with any of { except: [methods], only: [methods], scope: "role" | "agent" }.';

/** The option as given. */
export type ReuseOption = boolean | { readonly except?: readonly string[]; readonly only?: readonly string[]; readonly scope?: ReuseScope };

/** The `reuse` option read; undefined when not given. */
export function readReuse(value: ReuseOption | undefined): ReuseRule | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "boolean") return { enabled: value, except: new Set(), only: undefined, scope: "role" };
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new TypeError(`${REUSE_SHAPE} Got ${describeType(value)}.`);
  for (const key of Object.keys(value)) if (key !== "except" && key !== "only" && key !== "scope") throw new TypeError(`${REUSE_SHAPE} "${key}" is not one of them.`);
  const names = (list: unknown, field: string): Set<string> | undefined => {
    if (list === undefined) return undefined;
    if (!Array.isArray(list) || !list.every((name) => typeof name === "string")) throw new TypeError(`${REUSE_SHAPE} "${field}" must be an array of method names.`);
    return new Set(list as string[]);
  };
  const scope: unknown = value.scope ?? "role";
  if (scope !== "role" && scope !== "agent") throw new TypeError(`Option "reuse": "scope" must be "role" or "agent". Got ${describeType(scope)}.`);
  return { enabled: true, except: names(value.except, "except") ?? new Set(), only: names(value.only, "only"), scope };
}
