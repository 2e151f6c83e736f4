/**
 * Whether a program's result is prose it wrote itself: an answer, not a method. Models often
 * answer a question by returning text (`return \`Plato would argue that ${topic} is…\``); run
 * again for another call, such a program would paste the new input into the old answer. Decided
 * on the syntax tree: the string literals and template parts that can flow into the result
 * (through returns, variables, arrays, objects, string methods and the program's own functions)
 * are measured in words of natural language. Labels and formats (`Total: ${n}`, `${a} + ${b}`)
 * and messages that interpolate values are not prose; sentences the model wrote are.
 */
import type { Node, Program } from "acorn";
import { full, recursive } from "acorn-walk";

/** One phrase (words between marks other than spaces, commas and semicolons) this long is a sentence someone wrote. */
export const SENTENCE_WORDS = 8;
/** Words in phrases of two or more words, in all, that make prose: this many, plus {@link WORDS_PER_VALUE} per interpolated value. */
export const PROSE_WORDS = 12;
export const WORDS_PER_VALUE = 4;

/** Most nodes the flow walk visits: the program's own size bounds it anyway. */
const MAX_STEPS = 20_000;

// ESTree nodes from acorn, read generically: each use checks `type` first.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyNode = Node & { readonly [field: string]: any };

/** Methods whose result is not text taken from their receiver or arguments (a boolean, a number, a position). */
const NON_TEXT_METHODS: ReadonlySet<string> = new Set([
  "includes", "startsWith", "endsWith", "indexOf", "lastIndexOf", "findIndex", "findLastIndex", "some", "every",
  "test", "search", "localeCompare", "has", "push", "unshift", "forEach", "keys", "getTime", "valueOf",
]);
/** Global functions whose result is not text. */
const NON_TEXT_FUNCTIONS: ReadonlySet<string> = new Set(["Number", "Boolean", "parseInt", "parseFloat", "isNaN", "isFinite", "BigInt"]);
/** Names the program is given: reading them is reading input or memory, never text the program wrote. */
const GIVEN_NAMES: ReadonlySet<string> = new Set(["args", "kwargs", "context"]);

/** What the program wrote into its result: the words it measured, and a sample of the prose. */
export interface WrittenText {
  readonly longestPhrase: number;
  readonly words: number;
  readonly values: number;
  readonly sample: string;
}

/**
 * The prose the program's result holds, or undefined when its result is computed, a format, or
 * a message around values.
 *
 * @param callee The function the program's shape calls with the call's arguments, when it has one.
 */
export function writtenProse(ast: Program, callee: Node | undefined): WrittenText | undefined {
  const text = writtenText(ast, callee);
  const isProse = text.longestPhrase >= SENTENCE_WORDS || text.words >= PROSE_WORDS + WORDS_PER_VALUE * text.values;
  return isProse ? text : undefined;
}

/** Measures the text that can flow into the program's result (see {@link writtenProse}). */
export function writtenText(ast: Program, callee: Node | undefined): WrittenText {
  const flow = new Flow(ast);
  for (const result of resultsOf(callee ?? ast, callee === undefined)) flow.visit(result);
  let longestPhrase = 0;
  let words = 0;
  let sample = "";
  let sampleWords = 0;
  for (const piece of flow.pieces) {
    for (const phrase of phrases(piece)) {
      const count = countWords(phrase);
      if (count > longestPhrase) longestPhrase = count;
      if (count >= 2) words += count;
      if (count > sampleWords) {
        sampleWords = count;
        sample = phrase.trim();
      }
    }
  }
  return { longestPhrase, words, values: flow.values, sample: sample.length > 80 ? `${sample.slice(0, 79)}…` : sample };
}

/**
 * The expressions whose values a function (or the program's body) returns: its `return`
 * arguments outside nested functions and classes, an arrow's expression body, and, for a
 * program without a top-level `return`, the last expression statement (the shape rules return it).
 */
function resultsOf(owner: Node, isProgram: boolean): AnyNode[] {
  const any = owner as AnyNode;
  if (any.type === "ArrowFunctionExpression" && any.expression === true) return [any.body as AnyNode];
  const body = (isProgram ? any : any.body) as AnyNode | null | undefined;
  if (body === null || body === undefined) return [];
  const results: AnyNode[] = [];
  const skip = () => {};
  recursive(body as Node, undefined, {
    ReturnStatement: (node) => {
      const argument = (node as AnyNode).argument as AnyNode | null;
      if (argument !== null) results.push(argument);
    },
    Function: skip,
    Class: skip,
  });
  if (isProgram && results.length === 0) {
    const statements = (any.body as AnyNode[]).filter((statement) => statement.type !== "EmptyStatement");
    const last = statements.at(-1);
    if (last?.type === "ExpressionStatement" && last.directive === undefined) results.push(last.expression as AnyNode);
  }
  return results;
}

/**
 * A walk from result expressions back to the text they can hold. Names are resolved by name
 * over the whole program (every declaration, assignment and `push` of that name): a name that
 * is shadowed somewhere is over-approximated, which can only make more programs count as
 * prose, never fewer.
 */
class Flow {
  readonly pieces: string[] = [];
  values = 0;
  readonly #bindings = new Map<string, AnyNode[]>();
  readonly #seen = new Set<Node>();
  #steps = 0;

  constructor(ast: Program) {
    const bind = (name: string, value: AnyNode) => {
      const values = this.#bindings.get(name);
      if (values === undefined) this.#bindings.set(name, [value]);
      else values.push(value);
    };
    const root = (target: AnyNode): string | undefined => {
      let node = target;
      while (node.type === "MemberExpression") node = node.object as AnyNode;
      return node.type === "Identifier" ? (node.name as string) : undefined;
    };
    full(ast, (node) => {
      const any = node as AnyNode;
      if (any.type === "VariableDeclarator" && any.id.type === "Identifier" && any.init) bind(any.id.name, any.init);
      else if (any.type === "FunctionDeclaration" && any.id) bind(any.id.name, any);
      else if (any.type === "AssignmentExpression") {
        const name = root(any.left);
        if (name !== undefined) bind(name, any.right);
      } else if (any.type === "CallExpression" && any.callee.type === "MemberExpression" && !any.callee.computed && ["push", "unshift", "splice", "set", "add"].includes(any.callee.property.name)) {
        const name = root(any.callee.object);
        if (name !== undefined) for (const argument of any.arguments as AnyNode[]) bind(name, argument);
      }
    });
  }

  visit(node: AnyNode | null | undefined): void {
    if (node === null || node === undefined || this.#seen.has(node) || this.#steps >= MAX_STEPS) return;
    this.#seen.add(node);
    this.#steps += 1;
    switch (node.type) {
      case "Literal":
        if (typeof node.value === "string") this.pieces.push(node.value);
        return;
      case "TemplateLiteral":
        for (const quasi of node.quasis as AnyNode[]) if (typeof quasi.value?.cooked === "string") this.pieces.push(quasi.value.cooked);
        for (const expression of node.expressions as AnyNode[]) this.#value(expression);
        return;
      case "TaggedTemplateExpression":
        return this.visit(node.quasi);
      case "BinaryExpression":
        if (node.operator !== "+") return;
        this.#value(node.left);
        this.#value(node.right);
        return;
      case "LogicalExpression":
        this.visit(node.left);
        return this.visit(node.right);
      case "ConditionalExpression":
        this.visit(node.consequent);
        return this.visit(node.alternate);
      case "SequenceExpression":
        return this.visit((node.expressions as AnyNode[]).at(-1));
      case "AwaitExpression":
      case "SpreadElement":
      case "ChainExpression":
        return this.visit(node.argument ?? node.expression);
      case "AssignmentExpression":
        return this.visit(node.right);
      case "ArrayExpression":
        for (const element of node.elements as (AnyNode | null)[]) this.visit(element);
        return;
      case "ObjectExpression":
        // Keys are labels; values are what the object says.
        for (const property of node.properties as AnyNode[]) this.visit(property.type === "SpreadElement" ? property.argument : property.value);
        return;
      case "Identifier":
        if (GIVEN_NAMES.has(node.name)) return;
        for (const value of this.#bindings.get(node.name) ?? []) this.visit(value);
        return;
      case "MemberExpression":
        // A lookup in the program's own table of sentences is still its own sentences.
        return this.visit(node.object);
      case "CallExpression":
      case "NewExpression":
        return this.#call(node);
      case "FunctionDeclaration":
      case "FunctionExpression":
      case "ArrowFunctionExpression":
        for (const result of resultsOf(node, false)) this.visit(result);
        return;
      default:
        return;
    }
  }

  /** An interpolated part: counted as a value unless it is text itself. */
  #value(node: AnyNode): void {
    if (!(node.type === "Literal" && typeof node.value === "string") && node.type !== "TemplateLiteral") this.values += 1;
    this.visit(node);
  }

  #call(node: AnyNode): void {
    const callee = node.callee as AnyNode;
    if (callee.type === "MemberExpression") {
      const name = !callee.computed && callee.property.type === "Identifier" ? (callee.property.name as string) : undefined;
      if (name !== undefined && NON_TEXT_METHODS.has(name)) return;
      this.visit(callee.object);
      // `.map((s) => …)`, `.replace(re, "…")`, `.concat(more)`: what the callback returns, and the arguments.
      for (const argument of node.arguments as AnyNode[]) this.visit(argument);
      return;
    }
    if (callee.type === "Identifier" && NON_TEXT_FUNCTIONS.has(callee.name)) return;
    this.visit(callee);
    // A function passed to one of the program's own functions is not what that call returns.
    for (const argument of node.arguments as AnyNode[]) if (argument.type !== "ArrowFunctionExpression" && argument.type !== "FunctionExpression") this.visit(argument);
  }
}

/** Stretches of text between marks that end a phrase (anything but letters, spaces, hyphens, apostrophes, commas and semicolons). */
function phrases(text: string): string[] {
  return text.split(/[^\p{L}\p{M}'’\- ,;]+/u);
}

function countWords(phrase: string): number {
  return phrase.match(/\p{L}[\p{L}\p{M}'’-]*/gu)?.length ?? 0;
}
