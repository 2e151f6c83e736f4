/**
 * Running a program as its model meant it. Asked for a method body, models often write
 * something else: a bare expression, a function (declared, or as an arrow) that is never
 * called, a class, TypeScript. These shapes are recognised on the program's syntax tree and
 * turned into a body by small insertions (no text is removed, so a position in the result maps
 * back to the model's own text); a reply that only declares things no rule can call is an
 * `invalid_code` outcome that says what it held. The rules are documented in docs/programs.md.
 */
import type { Node, Program } from "acorn";
import { full, recursive } from "acorn-walk";
import { parseProgram, type ParsedProgram } from "./parse.ts";
import { stripTypes } from "./typescript.ts";

/** How a program was taken. */
export type ProgramShape = "body" | "expression" | "function" | "class";

/** A program ready to run, or why it cannot be. */
export type PreparedProgram =
  | {
      readonly ok: true;
      /** What the sandbox runs. */
      readonly source: string;
      readonly shape: ProgramShape;
      /** True when TypeScript types were stripped. */
      readonly stripped: boolean;
      /** The model's program parsed (types stripped when `stripped`); not ok when it does not parse, and the sandbox's compiler is the judge. */
      readonly parsed: ParsedProgram;
      /** Maps an offset in `source` back to the model's program. */
      readonly toOriginal: (offset: number) => number;
      /** For shapes `function` and `class`: the function the call's arguments are passed to. */
      readonly callee?: Node;
    }
  | { readonly ok: false; readonly message: string; readonly parsed: ParsedProgram };

// ESTree nodes from acorn, read generically: each use checks `type` first.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyNode = Node & { readonly [field: string]: any };

/** The arguments a called function or method receives: the positional ones, then `kwargs` when any were given. */
const CALL_ARGUMENTS = "(...args, ...(Object.keys(kwargs).length > 0 ? [kwargs] : []))";

/**
 * Prepares the model's program for the sandbox.
 *
 * @param method The called method's name: a function or class method of that name is the one called.
 */
export function prepareProgram(code: string, method: string): PreparedProgram {
  if (code.length > MAX_PROGRAM_CHARS) {
    const message = `The program is ${code.length} characters long, more than the ${MAX_PROGRAM_CHARS} a program may have. Write a shorter body of \`${method}\`.`;
    return { ok: false, message, parsed: { ok: false, message: "not parsed: too long" } };
  }
  if (code.length > MAX_CACHED_PROGRAM_CHARS) return prepare(code, method);
  const key = `${method}\u0000${code}`;
  let prepared = preparedPrograms.get(key);
  if (prepared === undefined) {
    prepared = prepare(code, method);
    if (preparedPrograms.size >= MAX_CACHED_PROGRAMS) preparedPrograms.delete(preparedPrograms.keys().next().value as string);
    preparedPrograms.set(key, prepared);
  }
  return prepared;
}

/** Longest program prepared and run, far past any method body: a longer one costs the host its parse and the shared sandbox process its compile. */
const MAX_PROGRAM_CHARS = 256 * 1024;
/**
 * Deepest syntax tree prepared, far past what a method body nests: the walkers that shape a
 * program, and after its run decide whether to keep it, go down one level at a time, and a tree
 * about 1,300 levels deep overflowed the stack.
 */
const MAX_NESTING = 500;

// A program run again (a scripted provider, a model that answers alike) is parsed once: parsing
// costs more than the rest of a call's host work. Bounded, oldest first out; long programs skip it.
const MAX_CACHED_PROGRAMS = 64;
const MAX_CACHED_PROGRAM_CHARS = 4_096;
const preparedPrograms = new Map<string, PreparedProgram>();

function prepare(code: string, method: string): PreparedProgram {
  let parsed = parseProgram(code);
  let base = code;
  let stripped = false;
  if (!parsed.ok) {
    for (const [candidate, isStripped] of rescues(code)) {
      const reparsed = parseProgram(candidate);
      if (!reparsed.ok) continue;
      base = candidate;
      parsed = reparsed;
      stripped = isStripped;
      break;
    }
  }
  if (!parsed.ok) return { ok: true, source: code, shape: "body", stripped: false, parsed, toOriginal: (offset) => offset };
  if (nestsDeeperThan(parsed.ast, MAX_NESTING)) {
    return { ok: false, message: `The program nests more than ${MAX_NESTING} levels deep (blocks, calls and operators within each other), too deep to check. Write the body of \`${method}\` with less nesting.`, parsed };
  }
  const plan = planShape(parsed.ast, base, method);
  if ("invalid" in plan) return { ok: false, message: plan.invalid, parsed };
  return { ok: true, shape: plan.shape, stripped, parsed, ...applyInsertions(base, plan.insertions), ...(plan.callee === undefined ? {} : { callee: plan.callee }) };
}

/** Whether a syntax tree is deeper than `limit` nodes, walked with a stack of its own (a recursive walk is what such a tree overflows). */
function nestsDeeperThan(ast: Program, limit: number): boolean {
  const pending: [AnyNode, number][] = [[ast as AnyNode, 1]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [node, depth] = next;
    if (depth > limit) return true;
    for (const value of Object.values(node)) {
      for (const child of Array.isArray(value) ? value : [value]) {
        if (typeof (child as AnyNode | null)?.type === "string") pending.push([child as AnyNode, depth + 1]);
      }
    }
  }
  return false;
}

/**
 * Readings of a program that does not parse as it is, each keeping every position: module
 * syntax (`export`, `export default`) blanked out, then TypeScript types stripped, then both.
 * The flag says whether types were stripped.
 */
function* rescues(code: string): Generator<[string, boolean]> {
  const withoutExports = code.replace(/^([ \t]*)export(\s+default)?\s/gm, (match) => " ".repeat(match.length));
  if (withoutExports !== code) yield [withoutExports, false];
  const stripped = stripTypes(code);
  if (stripped !== undefined) yield [stripped, true];
  if (withoutExports !== code) {
    const both = stripTypes(withoutExports);
    if (both !== undefined) yield [both, true];
  }
}

interface Insertion {
  readonly at: number;
  readonly text: string;
}

type Plan = { readonly shape: ProgramShape; readonly insertions: readonly Insertion[]; readonly callee?: AnyNode } | { readonly invalid: string };

const NAMES_IN_SCOPE = ["args", "kwargs", "context"];

function planShape(ast: Program, code: string, method: string): Plan {
  const statements = (ast.body as AnyNode[]).filter((statement) => statement.type !== "EmptyStatement");
  if (statements.length === 0) return { invalid: "The reply holds no statements (only comments, or nothing). Write the body of `" + method + "`: statements that end with `return`." };
  if (hasTopLevelReturn(ast)) return { shape: "body", insertions: [] };
  // Directives ("use strict") are not statements of the body, unless a lone string is all there is.
  const body = statements.filter((statement) => statement.directive === undefined || !/^use /.test(statement.directive));
  if (body.length === 0) return { shape: "body", insertions: [] };
  const last = body[body.length - 1] as AnyNode;
  const callables = declaredCallables(body);
  const chosenFunction = callables.functions.has(method) ? method : callables.functions.size === 1 && callables.classes.size === 0 ? ([...callables.functions.keys()][0] as string) : undefined;
  const callIt = (name: string): string => `\n;return await ${name}${CALL_ARGUMENTS};`;

  if (last.type === "ExpressionStatement") {
    const expression = last.expression as AnyNode;
    // The whole statement, parentheses included (acorn's expression node starts inside them), without its semicolon.
    const from = last.start;
    const to = code[last.end - 1] === ";" ? last.end - 1 : last.end;
    // A demonstration call of the program's own function (`add(2, 3)`, `console.log(add(2, 3))`) that
    // uses none of the call's inputs: the function is what was meant, called with the real arguments.
    if (chosenFunction !== undefined && isDemonstrationCall(expression, chosenFunction)) {
      return { shape: "function", insertions: [{ at: from, text: "void (" }, { at: to, text: ")" }, { at: ast.end, text: callIt(chosenFunction) }], callee: callables.functions.get(chosenFunction) };
    }
    const isFunction = expression.type === "ArrowFunctionExpression" || expression.type === "FunctionExpression";
    const namesFunction = expression.type === "Identifier" && callables.functions.has(expression.name);
    if (isFunction || namesFunction) {
      const callee = isFunction ? expression : callables.functions.get(expression.name);
      return { shape: "function", insertions: [{ at: from, text: "return await (" }, { at: to, text: `)${CALL_ARGUMENTS}` }], callee };
    }
    return { shape: "expression", insertions: [{ at: from, text: "return (" }, { at: to, text: ")" }] };
  }

  const onlyDeclarations = body.every((statement) => ["FunctionDeclaration", "ClassDeclaration", "VariableDeclaration"].includes(statement.type));
  if (!onlyDeclarations) return { shape: "body", insertions: [] };

  const call = (text: string, shape: ProgramShape, callee: AnyNode | undefined): Plan => ({ shape, insertions: [{ at: ast.end, text: callIt(text) }], callee });
  if (callables.functions.has(method)) return call(method, "function", callables.functions.get(method));
  const withMethod = [...callables.classes].filter(([, methods]) => methods.has(method));
  if (withMethod.length === 1) {
    const [name, methods] = withMethod[0] as [string, Map<string, ClassMethod>];
    const chosen = methods.get(method) as ClassMethod;
    const target = chosen.isStatic ? name : `new ${name}()`;
    return call(`${target}[${JSON.stringify(method)}]`, "class", chosen.fn);
  }
  if (callables.functions.size === 1 && callables.classes.size === 0) {
    const [name, fn] = [...callables.functions][0] as [string, AnyNode];
    return call(name, "function", fn);
  }
  if (callables.classes.size === 1 && callables.functions.size === 0) {
    const [name] = [...callables.classes.keys()];
    return { invalid: `The reply is a class \`${name}\` with no method \`${method}\`. Write the body of \`${method}\`, or a class with a method of that name.` };
  }
  const names = [...callables.declared].slice(0, 8).map((name) => `\`${name}\``).join(", ");
  return { invalid: `The reply only declares ${names || "names"} and never returns a value or calls anything. Write the body of \`${method}\`: statements that end with \`return\`.` };
}

/** A method of a declared class: whether it is static, and its function. */
interface ClassMethod {
  readonly isStatic: boolean;
  readonly fn: AnyNode;
}

/** Functions (declarations, or variables whose value is a function) and classes (with their methods) declared at the top level, each with its function node. */
function declaredCallables(body: readonly AnyNode[]): { functions: Map<string, AnyNode>; classes: Map<string, Map<string, ClassMethod>>; declared: Set<string> } {
  const functions = new Map<string, AnyNode>();
  const classes = new Map<string, Map<string, ClassMethod>>();
  const declared = new Set<string>();
  for (const statement of body) {
    if (statement.type === "FunctionDeclaration" && statement.id) {
      functions.set(statement.id.name, statement);
      declared.add(statement.id.name);
    } else if (statement.type === "ClassDeclaration" && statement.id) {
      const methods = new Map<string, ClassMethod>();
      for (const member of statement.body.body as AnyNode[]) {
        const isField = member.type === "PropertyDefinition" && ["ArrowFunctionExpression", "FunctionExpression"].includes((member.value as AnyNode | null)?.type ?? "");
        if (!isField && (member.type !== "MethodDefinition" || member.kind !== "method")) continue;
        if (member.computed) continue;
        const key = member.key as AnyNode;
        const name = key.type === "Identifier" ? key.name : key.type === "Literal" ? String(key.value) : undefined;
        if (name !== undefined) methods.set(name, { isStatic: member.static === true, fn: member.value as AnyNode });
      }
      classes.set(statement.id.name, methods);
      declared.add(statement.id.name);
    } else if (statement.type === "VariableDeclaration") {
      for (const declarator of statement.declarations as AnyNode[]) {
        if (declarator.id.type !== "Identifier") continue;
        declared.add(declarator.id.name);
        const init = declarator.init as AnyNode | null;
        if (init && (init.type === "ArrowFunctionExpression" || init.type === "FunctionExpression")) functions.set(declarator.id.name, init);
      }
    }
  }
  return { functions, classes, declared };
}

/** `name(…)` or `console.log(name(…))` whose arguments use none of `args`, `kwargs` and `context`. */
function isDemonstrationCall(expression: AnyNode, name: string): boolean {
  const isCallOf = (node: AnyNode) => node.type === "CallExpression" && node.callee.type === "Identifier" && node.callee.name === name;
  let call: AnyNode | undefined;
  if (isCallOf(expression)) call = expression;
  else if (expression.type === "CallExpression" && expression.callee.type === "MemberExpression" && expression.callee.object.type === "Identifier" && expression.callee.object.name === "console") {
    call = (expression.arguments as AnyNode[]).find(isCallOf);
  } else if (expression.type === "AwaitExpression" && isCallOf(expression.argument)) call = expression.argument;
  if (call === undefined) return false;
  let usesInput = false;
  for (const argument of call.arguments as AnyNode[]) {
    full(argument, (node) => {
      if ((node as AnyNode).type === "Identifier" && NAMES_IN_SCOPE.includes((node as AnyNode).name)) usesInput = true;
    });
  }
  return !usesInput;
}

/** Whether the program returns from its own top level (a `return` not inside a nested function or class). */
function hasTopLevelReturn(ast: Program): boolean {
  let found = false;
  const skip = () => {};
  recursive(ast, undefined, {
    ReturnStatement: () => {
      found = true;
    },
    Function: skip,
    Class: skip,
  });
  return found;
}

/** Applies insertions (sorted by position), with the map from an offset in the result back to the original. */
function applyInsertions(code: string, insertions: readonly Insertion[]): { source: string; toOriginal: (offset: number) => number } {
  const sorted = [...insertions].sort((a, b) => a.at - b.at);
  let source = "";
  let from = 0;
  const shifts: { at: number; length: number }[] = [];
  for (const insertion of sorted) {
    source += code.slice(from, insertion.at);
    shifts.push({ at: source.length, length: insertion.text.length });
    source += insertion.text;
    from = insertion.at;
  }
  source += code.slice(from);
  const toOriginal = (offset: number) => {
    let original = offset;
    for (const shift of shifts) {
      if (offset >= shift.at + shift.length) original -= shift.length;
      else if (offset >= shift.at) return shift.at - shifts.filter((earlier) => earlier.at < shift.at).reduce((sum, earlier) => sum + earlier.length, 0);
    }
    return original;
  };
  return { source, toOriginal };
}
