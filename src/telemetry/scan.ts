import { ancestor } from "acorn-walk";
import { analyze, type Reference, type Variable } from "eslint-scope";
import { parseProgram, type ParsedProgram } from "../programs/parse.ts";
import { CALLBACK_METHODS, COLLECTION_RESULTS, METHOD_TAGS, PATTERN_TAGS, RECORD_RESULTS, type HistoryScan, type PatternTag } from "./patterns.ts";
import { scanText } from "./text-scan.ts";

/**
 * What a value is, as far as history goes:
 * - `collection`: the history itself or an array derived from it (filtered, sliced, mapped…);
 * - `groups`: the result of `Object.groupBy` / `Map.groupBy` over such a collection;
 * - `record`: one element of a collection (a record, or a mapped value);
 * - `field`: anything read from a record.
 * Pattern tags apply to collections and groups; records and fields only carry the taint.
 */
type Kind = "collection" | "groups" | "record" | "field";

// ESTree nodes from acorn, read generically: the analysis checks `type` before each field it reads.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyNode = { readonly type: string; readonly [field: string]: any };

const HISTORY_KEY = "conversation_history";
const MAX_PASSES = 8;

/** Scans a generated program. Uses `parsed` when the caller already parsed it. */
export function scanProgram(code: string, parsed?: ParsedProgram): HistoryScan {
  if (parsed === undefined) return scanOnce(code, parseProgram(code));
  // A program run again (a kept one, say) comes with the parse the host keeps for it: scanned once.
  let scan = scansByParse.get(parsed);
  if (scan === undefined) {
    scan = scanOnce(code, parsed);
    scansByParse.set(parsed, scan);
  }
  return scan;
}

const scansByParse = new WeakMap<ParsedProgram, HistoryScan>();

function scanOnce(code: string, parsed: ParsedProgram): HistoryScan {
  let scan: HistoryScan;
  if (!parsed.ok) scan = scanText(code);
  else {
    try {
      scan = new HistoryAnalysis(parsed.ast as AnyNode).run();
    } catch {
      // A construct the analysis does not know must not cost the log line.
      scan = scanText(code);
    }
  }
  Object.freeze(scan.patterns);
  return Object.freeze(scan);
}

class HistoryAnalysis {
  readonly #ast: AnyNode;
  readonly #references = new Map<AnyNode, Reference>();
  readonly #bindings = new Map<AnyNode, Variable>();
  readonly #programArguments: Variable | undefined;
  readonly #contextAliases = new Set<Variable>();
  readonly #kinds = new Map<Variable, Kind>();
  #detected = false;
  #patterns = new Set<PatternTag>();
  #changed = false;

  constructor(ast: AnyNode) {
    this.#ast = ast;
    // "commonjs" wraps the program in a function scope, as the sandbox does.
    const scopes = analyze(ast as never, { ecmaVersion: 2025, sourceType: "commonjs" });
    for (const scope of scopes.scopes) {
      for (const reference of scope.references) this.#references.set(reference.identifier as AnyNode, reference);
      for (const variable of scope.variables) for (const identifier of variable.identifiers) this.#bindings.set(identifier as AnyNode, variable);
    }
    this.#programArguments = scopes.scopes[1]?.set.get("arguments");
  }

  run(): HistoryScan {
    for (let pass = 0; pass < MAX_PASSES; pass += 1) {
      this.#changed = false;
      this.#patterns = new Set();
      this.#walk();
      if (!this.#changed) break;
    }
    return {
      scan: "ast",
      historyAccessDetected: this.#detected,
      patterns: PATTERN_TAGS.filter((tag) => this.#patterns.has(tag)),
    };
  }

  #walk(): void {
    const visit = (node: AnyNode, ancestors: AnyNode[]) => this.#visit(node, ancestors);
    ancestor(this.#ast as never, {
      MemberExpression: visit,
      CallExpression: visit,
      VariableDeclarator: visit,
      AssignmentExpression: visit,
      ForOfStatement: visit,
      ForInStatement: visit,
    } as never);
  }

  #visit(node: AnyNode, ancestors: AnyNode[]): void {
    switch (node.type) {
      case "MemberExpression":
        if (this.#isHistorySource(node)) this.#detected = true;
        this.#countAccess(node, ancestors);
        return;
      case "CallExpression":
        this.#call(node);
        return;
      case "VariableDeclarator":
        if (node.init) this.#bind(node.id, node.init);
        return;
      case "AssignmentExpression":
        if (node.operator === "=") this.#bind(node.left, node.right);
        return;
      case "ForOfStatement":
      case "ForInStatement": {
        const kind = this.#kindOf(node.right);
        if (kind === "collection" || kind === "groups") {
          this.#patterns.add("iterate");
          const target = node.left.type === "VariableDeclaration" ? node.left.declarations[0]?.id : node.left;
          if (target) this.#taintPattern(target, node.type === "ForOfStatement" ? "record" : "field");
        }
        return;
      }
    }
  }

  /** `.length` / `.size` of a collection: a count, or an index loop when it bounds a loop. */
  #countAccess(node: AnyNode, ancestors: AnyNode[]): void {
    const name = this.#propertyName(node);
    if (name !== "length" && name !== "size") return;
    const kind = this.#kindOf(node.object);
    if (kind !== "collection" && kind !== "groups") return;
    const parent = ancestors.at(-2);
    if (parent?.type === "CallExpression" && parent.callee === node) return;
    this.#patterns.add(this.#inLoopTest(ancestors) ? "iterate" : "count");
  }

  #inLoopTest(ancestors: AnyNode[]): boolean {
    for (let index = ancestors.length - 2; index >= 0; index -= 1) {
      const candidate = ancestors[index] as AnyNode;
      const child = ancestors[index + 1];
      if ((candidate.type === "ForStatement" || candidate.type === "WhileStatement" || candidate.type === "DoWhileStatement") && candidate.test === child) return true;
    }
    return false;
  }

  #call(node: AnyNode): void {
    const callee = unwrap(node.callee);
    if (callee.type === "MemberExpression") {
      const method = this.#propertyName(callee);
      const objectKind = this.#kindOf(callee.object);
      if (method !== undefined && (objectKind === "collection" || objectKind === "groups")) {
        const tag = METHOD_TAGS[method];
        if (tag) this.#patterns.add(tag);
        if (CALLBACK_METHODS.has(method)) {
          const callback = node.arguments[0] as AnyNode | undefined;
          const recordParams = method === "reduce" || method === "reduceRight" ? [1] : method === "sort" || method === "toSorted" ? [0, 1] : [0];
          if (callback) this.#taintParams(callback, recordParams, "record");
        }
      }
      const global = this.#globalMember(callee);
      const first = node.arguments[0] as AnyNode | undefined;
      const firstKind = first ? this.#kindOf(first) : undefined;
      if ((global === "Object.groupBy" || global === "Map.groupBy") && firstKind === "collection") {
        this.#patterns.add("group");
        if (node.arguments[1]) this.#taintParams(node.arguments[1], [0], "record");
      }
      if (global === "Array.from" && firstKind === "collection" && node.arguments[1]) {
        this.#patterns.add("map");
        this.#taintParams(node.arguments[1], [0], "record");
      }
      if (global === "Reflect.get" && first && this.#isContext(first) && node.arguments[1] && constantString(node.arguments[1], this) === HISTORY_KEY) {
        this.#detected = true;
      }
    }
    // Calls to the program's own functions: parameters receive context or history values.
    const fn = this.#localFunction(callee);
    if (!fn) return;
    node.arguments.forEach((argument: AnyNode, index: number) => {
      const param = fn.params[index] as AnyNode | undefined;
      if (!param) return;
      if (this.#isContext(argument)) this.#bindContext(param);
      const kind = this.#kindOf(argument);
      if (kind) this.#taintPattern(param, kind);
    });
  }

  /** `target = value` or `const target = value`. */
  #bind(target: AnyNode, value: AnyNode): void {
    if (this.#isContext(value)) {
      this.#bindContext(target);
      return;
    }
    const kind = this.#kindOf(value);
    if (kind) this.#taintPattern(target, kind);
  }

  /** A pattern that receives `context`: an alias, or destructuring that reaches the history. */
  #bindContext(target: AnyNode): void {
    if (target.type === "Identifier") {
      const variable = this.#variableOf(target);
      if (variable && !this.#contextAliases.has(variable)) {
        this.#contextAliases.add(variable);
        this.#changed = true;
      }
      return;
    }
    if (target.type === "AssignmentPattern") {
      this.#bindContext(target.left);
      return;
    }
    if (target.type !== "ObjectPattern") return;
    for (const property of target.properties as AnyNode[]) {
      if (property.type !== "Property") continue;
      const key = property.computed ? constantString(property.key, this) : property.key.type === "Identifier" ? property.key.name : property.key.value;
      if (key !== HISTORY_KEY) continue;
      this.#detected = true;
      this.#taintPattern(property.value, "collection");
    }
  }

  #taintPattern(target: AnyNode, kind: Kind): void {
    switch (target.type) {
      case "Identifier": {
        const variable = this.#variableOf(target);
        if (variable && rank(kind) > rank(this.#kinds.get(variable))) {
          this.#kinds.set(variable, kind);
          this.#changed = true;
        }
        return;
      }
      case "AssignmentPattern":
        this.#taintPattern(target.left, kind);
        return;
      case "ArrayPattern":
        for (const element of target.elements as (AnyNode | null)[]) {
          if (element) this.#taintPattern(element.type === "RestElement" ? element.argument : element, element.type === "RestElement" ? kind : elementKind(kind));
        }
        return;
      case "ObjectPattern":
        for (const property of target.properties as AnyNode[]) {
          this.#taintPattern(property.type === "RestElement" ? property.argument : property.value, kind === "groups" ? "collection" : "field");
        }
        return;
      default:
        return;
    }
  }

  #taintParams(fnNode: AnyNode, indices: number[], kind: Kind): void {
    const fn = isFunction(fnNode) ? fnNode : this.#localFunction(fnNode);
    if (!fn) return;
    for (const index of indices) {
      const param = fn.params[index] as AnyNode | undefined;
      if (param) this.#taintPattern(param, kind);
    }
  }

  /** What kind of history value `node` evaluates to, if any. */
  #kindOf(node: AnyNode): Kind | undefined {
    const expression = unwrap(node);
    switch (expression.type) {
      case "Identifier": {
        const variable = this.#variableOf(expression);
        return variable ? this.#kinds.get(variable) : undefined;
      }
      case "MemberExpression": {
        if (this.#isHistorySource(expression)) return "collection";
        const objectKind = this.#kindOf(expression.object);
        if (!objectKind) return undefined;
        if (objectKind === "groups") return "collection";
        if (objectKind === "collection") {
          const name = this.#propertyName(expression);
          return name === "length" ? "field" : "record";
        }
        return "field";
      }
      case "CallExpression": {
        const callee = unwrap(expression.callee);
        if (callee.type === "MemberExpression") {
          const objectKind = this.#kindOf(callee.object);
          const method = this.#propertyName(callee);
          if (objectKind === "collection" && method !== undefined) {
            if (COLLECTION_RESULTS.has(method)) return "collection";
            if (RECORD_RESULTS.has(method)) return "record";
            return "field";
          }
          if (objectKind === "groups") return method === "get" ? "collection" : "field";
          if (objectKind) return "field";
          const global = this.#globalMember(callee);
          const firstKind = expression.arguments[0] ? this.#kindOf(expression.arguments[0]) : undefined;
          if (!firstKind) return undefined;
          if (global === "Object.groupBy" || global === "Map.groupBy") return "groups";
          if (global === "Array.from" || global === "Object.values" || global === "Object.entries" || global === "Object.keys") return "collection";
          if (global?.startsWith("JSON.") || global === "Array.of") return firstKind;
          return undefined;
        }
        if (callee.type === "Identifier" && callee.name === "structuredClone" && !this.#variableOf(callee)) {
          return expression.arguments[0] ? this.#kindOf(expression.arguments[0]) : undefined;
        }
        return undefined;
      }
      case "ArrayExpression":
        for (const element of expression.elements as (AnyNode | null)[]) {
          if (element?.type === "SpreadElement" && this.#kindOf(element.argument) === "collection") return "collection";
        }
        return undefined;
      case "AwaitExpression":
        return this.#kindOf(expression.argument);
      case "ConditionalExpression":
        return this.#kindOf(expression.consequent) ?? this.#kindOf(expression.alternate);
      case "LogicalExpression":
        return this.#kindOf(expression.left) ?? this.#kindOf(expression.right);
      case "SequenceExpression":
        return this.#kindOf(expression.expressions.at(-1));
      case "AssignmentExpression":
        return this.#kindOf(expression.right);
      case "NewExpression":
        if (expression.callee.type === "Identifier" && (expression.callee.name === "Set" || expression.callee.name === "Map") && expression.arguments[0]) {
          return this.#kindOf(expression.arguments[0]) === "collection" ? "collection" : undefined;
        }
        return undefined;
      default:
        return undefined;
    }
  }

  /** `context.conversation_history` in any of its spellings. */
  #isHistorySource(node: AnyNode): boolean {
    return node.type === "MemberExpression" && this.#isContext(node.object) && this.#propertyName(node) === HISTORY_KEY;
  }

  /** The agent's `context`: the parameter, an alias of it, or `arguments[0]` at the program's top level. */
  #isContext(node: AnyNode): boolean {
    const expression = unwrap(node);
    switch (expression.type) {
      case "Identifier": {
        const reference = this.#references.get(expression);
        if (!reference) return false;
        if (reference.resolved === null) return expression.name === "context";
        return this.#contextAliases.has(reference.resolved);
      }
      case "MemberExpression":
        return (
          expression.object.type === "Identifier" &&
          this.#programArguments !== undefined &&
          this.#references.get(expression.object)?.resolved === this.#programArguments &&
          expression.computed &&
          expression.property.type === "Literal" &&
          expression.property.value === 0
        );
      case "ConditionalExpression":
        return this.#isContext(expression.consequent) || this.#isContext(expression.alternate);
      case "LogicalExpression":
        return this.#isContext(expression.left) || this.#isContext(expression.right);
      case "AssignmentExpression":
        return this.#isContext(expression.right);
      case "SequenceExpression":
        return this.#isContext(expression.expressions.at(-1));
      default:
        return false;
    }
  }

  #propertyName(member: AnyNode): string | undefined {
    if (!member.computed) return member.property.type === "Identifier" ? member.property.name : undefined;
    return constantString(member.property, this);
  }

  /** `Object.groupBy`-style names, when the object is the real global (not a local variable). */
  #globalMember(member: AnyNode): string | undefined {
    if (member.object.type !== "Identifier" || this.#variableOf(member.object)) return undefined;
    const name = this.#propertyName(member);
    return name === undefined ? undefined : `${member.object.name}.${name}`;
  }

  #localFunction(node: AnyNode): AnyNode | undefined {
    const expression = unwrap(node);
    if (isFunction(expression)) return expression;
    if (expression.type !== "Identifier") return undefined;
    const definition = this.#variableOf(expression)?.defs[0];
    if (!definition) return undefined;
    const defined = definition.node as AnyNode;
    if (definition.type === "FunctionName") return defined;
    if (definition.type === "Variable" && defined.init && isFunction(defined.init)) return defined.init;
    return undefined;
  }

  variableOf(identifier: AnyNode): Variable | undefined {
    return this.#variableOf(identifier);
  }

  #variableOf(identifier: AnyNode): Variable | undefined {
    return this.#references.get(identifier)?.resolved ?? this.#bindings.get(identifier) ?? undefined;
  }
}

function unwrap(node: AnyNode): AnyNode {
  let current = node;
  while (current.type === "ChainExpression" || current.type === "ParenthesizedExpression") current = current.expression;
  return current;
}

function isFunction(node: AnyNode): boolean {
  return node.type === "FunctionExpression" || node.type === "ArrowFunctionExpression" || node.type === "FunctionDeclaration";
}

function rank(kind: Kind | undefined): number {
  return kind === undefined ? 0 : { field: 1, record: 2, groups: 3, collection: 4 }[kind];
}

function elementKind(kind: Kind): Kind {
  return kind === "collection" ? "record" : kind === "groups" ? "collection" : "field";
}

/**
 * The string a property key or argument always evaluates to: a literal, a template without
 * substitutions, a `+` of constants, or a `const` bound to one. Otherwise `undefined`.
 */
function constantString(node: AnyNode, analysis: { variableOf(identifier: AnyNode): Variable | undefined }, depth = 0): string | undefined {
  if (depth > 8) return undefined;
  switch (node.type) {
    case "Literal":
      return typeof node.value === "string" ? node.value : undefined;
    case "TemplateLiteral":
      return node.expressions.length === 0 ? node.quasis[0]?.value.cooked : undefined;
    case "BinaryExpression": {
      if (node.operator !== "+") return undefined;
      const left = constantString(node.left, analysis, depth + 1);
      const right = left === undefined ? undefined : constantString(node.right, analysis, depth + 1);
      return left === undefined || right === undefined ? undefined : left + right;
    }
    case "Identifier": {
      const definition = analysis.variableOf(node)?.defs[0];
      const declarator = definition?.node as AnyNode | undefined;
      if (definition?.type !== "Variable" || (definition.parent as AnyNode | undefined)?.kind !== "const" || !declarator?.init || declarator.id !== definition.name) return undefined;
      return constantString(declarator.init, analysis, depth + 1);
    }
    default:
      return undefined;
  }
}
