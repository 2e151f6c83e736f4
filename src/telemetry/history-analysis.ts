/**
 * The history scan's data flow over a parsed program: which expressions are `context`, the
 * history or values derived from it (see {@link Kind}), and the pattern tags of the operations
 * applied to them. Values are followed through variables, destructuring, assignments, the
 * program's own functions (their parameters and what they return), callbacks, and collections
 * and groups filled by hand in loops over the history. The analysis runs to a fixed point, as a
 * function may be declared after its use.
 */
import type { Variable } from "eslint-scope";
import { elementKind, holdsMany, isFromRecord, isList, join, widens, type Kind } from "./history-kinds.ts";
import { LoopShapes } from "./loop-shapes.ts";
import { CALLBACK_METHODS, COLLECTION_RESULTS, METHOD_TAGS, PATTERN_TAGS, RECORD_RESULTS, type HistoryScan, type PatternTag } from "./patterns.ts";
import { ProgramNames } from "./program-names.ts";
import { indexTree, isFunction, returnedExpressions, unwrap, type AnyNode } from "./syntax.ts";

const HISTORY_KEY = "conversation_history";
const MAX_PASSES = 8;
/** Calls that add one value to a collection made by hand (`push`, `unshift`, a Set's `add`). */
const COLLECTING_METHODS: ReadonlySet<string> = new Set(["push", "unshift", "add"]);
/** List methods whose result has the list's own kind (a filtered list of groups is still one). */
const SAME_KIND_RESULTS: ReadonlySet<string> = new Set(["filter", "slice", "splice", "sort", "toSorted", "reverse", "toReversed", "with", "concat"]);
/** What an argument of a call to one of the program's functions is, for that call. */
type ArgumentKind = Kind | "context" | undefined;
/** A call of one of the program's functions being worked out: the function, and what its parameters receive. */
interface Frame {
  readonly fn: AnyNode;
  readonly params: Map<Variable, ArgumentKind>;
}

export class HistoryAnalysis {
  readonly #nodes: readonly AnyNode[];
  readonly #parents: ReadonlyMap<AnyNode, AnyNode>;
  readonly #names: ProgramNames;
  readonly #contextAliases = new Set<Variable>();
  readonly #kinds = new Map<Variable, Kind>();
  /** Functions run once per element of a history value: callbacks of `forEach`, `reduce`, `map`… */
  readonly #perElement = new Set<AnyNode>();
  /** While working out what one call of a program's function returns: its parameters at that call. */
  readonly #frames: Frame[] = [];
  readonly #evaluating = new Set<AnyNode>();
  readonly #loops: LoopShapes;
  /** What calls returned this pass, by function and what its calls pass it: a call is worked out once per pass. */
  #returns = new Map<AnyNode, Map<string, Kind | undefined>>();
  #detected = false;
  #patterns = new Set<PatternTag>();
  #changed = false;

  constructor(ast: AnyNode) {
    ({ nodes: this.#nodes, parents: this.#parents } = indexTree(ast));
    const names = new ProgramNames(ast);
    this.#names = names;
    this.#loops = new LoopShapes({
      parents: this.#parents,
      kindOf: (node) => this.#kindOf(node),
      propertyName: (member) => names.propertyName(member),
      globalMember: (member) => names.globalMember(member),
      readsOf: (identifier) => names.readsOf(identifier),
      declaredInit: (identifier) => names.declaredInit(identifier),
      runsPerElement: (fn) => this.#perElement.has(fn),
    });
  }

  run(): HistoryScan {
    for (let pass = 0; pass < MAX_PASSES; pass += 1) {
      this.#changed = false;
      this.#patterns = new Set();
      this.#returns = new Map();
      for (const node of this.#nodes) this.#visit(node);
      if (!this.#changed) break;
    }
    return { scan: "ast", historyAccessDetected: this.#detected, patterns: PATTERN_TAGS.filter((tag) => this.#patterns.has(tag)) };
  }

  #visit(node: AnyNode): void {
    switch (node.type) {
      case "MemberExpression":
        if (this.#isHistorySource(node)) this.#detected = true;
        this.#sizeRead(node);
        return;
      case "CallExpression":
        this.#call(node);
        return;
      case "VariableDeclarator":
        if (node.init) this.#bind(node.id, node.init);
        return;
      case "AssignmentPattern":
        this.#bind(node.left, node.right);
        return;
      case "AssignmentExpression":
        if (node.operator === "=" || node.operator === "||=" || node.operator === "??=") this.#bind(node.left, node.right);
        this.#keyedWrite(node.left);
        return;
      case "UpdateExpression":
        this.#keyedWrite(node.argument);
        return;
      case "ForOfStatement":
      case "ForInStatement": {
        const kind = this.#kindOf(node.right);
        if (!holdsMany(kind)) return;
        this.#patterns.add("iterate");
        const target = node.left.type === "VariableDeclaration" ? node.left.declarations[0]?.id : node.left;
        if (target) this.#taint(target, node.type === "ForOfStatement" ? elementKind(kind) : "field");
        return;
      }
    }
  }

  /**
   * `.length` / `.size` of a list or groups: a count; in a loop's header (or a constant only
   * loop headers read), an index loop; inside an index into the same kind of list, neither.
   */
  #sizeRead(node: AnyNode): void {
    const name = this.#names.propertyName(node);
    const kind = name === "length" || name === "size" ? this.#kindOf(node.object) : undefined;
    if (!(name === "length" ? isList(kind) : holdsMany(kind))) return;
    const parent = this.#parents.get(node);
    if (parent?.type === "CallExpression" && parent.callee === node) return;
    if (this.#loops.inHeader(node) || this.#loops.boundsLoopsOnly(node)) this.#patterns.add("iterate");
    else if (!this.#loops.isIndexArithmetic(node)) this.#patterns.add("count");
  }

  #call(node: AnyNode): void {
    const callee = unwrap(node.callee);
    if (callee.type === "MemberExpression") this.#methodCall(node, callee);
    // Calls to the program's own functions: parameters receive context or history values.
    const fn = this.#names.localFunction(callee);
    if (!fn) return;
    node.arguments.forEach((argument: AnyNode, index: number) => {
      const param = fn.params[index] as AnyNode | undefined;
      if (!param) return;
      if (this.#isContext(argument)) this.#bindContext(param);
      const kind = this.#kindOf(argument);
      if (kind) this.#taint(param, kind);
    });
  }

  #methodCall(node: AnyNode, callee: AnyNode): void {
    const method = this.#names.propertyName(callee);
    const objectKind = this.#kindOf(callee.object);
    const first = node.arguments[0] as AnyNode | undefined;
    if (method !== undefined && isList(objectKind)) {
      const tag = METHOD_TAGS[method];
      if (tag) this.#patterns.add(tag);
      if (CALLBACK_METHODS.has(method) && first) {
        const recordParams = method === "reduce" || method === "reduceRight" ? [1] : method === "sort" || method === "toSorted" ? [0, 1] : [0];
        this.#eachElement(first, recordParams.map((index) => [index, elementKind(objectKind)]));
      }
    }
    if (method === "forEach" && objectKind === "groups" && first) {
      this.#patterns.add("iterate");
      this.#eachElement(first, [[0, "collection"], [1, "field"]]);
    }
    if (method !== undefined && first && (objectKind === undefined || objectKind === "groups" || objectKind === "collection")) this.#collectByHand(node, callee, method, objectKind);
    const global = this.#names.globalMember(callee);
    const firstKind = first ? this.#kindOf(first) : undefined;
    if ((global === "Object.groupBy" || global === "Map.groupBy") && isList(firstKind)) {
      this.#patterns.add("group");
      if (node.arguments[1]) this.#eachElement(node.arguments[1], [[0, elementKind(firstKind)]]);
    }
    if (global === "Array.from" && holdsMany(firstKind) && node.arguments[1]) {
      this.#patterns.add("map");
      this.#eachElement(node.arguments[1], [[0, elementKind(firstKind)]]);
    }
    if (global === "Reflect.get" && first && this.#isContext(first) && node.arguments[1] && this.#names.constant(node.arguments[1]) === HISTORY_KEY) {
      this.#detected = true;
    }
  }

  /**
   * In code run once per element of a history value: `map.set(record.key, …)` groups into a
   * Map; `list.push(value)` (or `unshift`, a Set's `add`) collects values derived from the
   * records into a collection of its own.
   */
  #collectByHand(node: AnyNode, callee: AnyNode, method: string, objectKind: Kind | undefined): void {
    if (!this.#loops.runsPerElement(node)) return;
    const target = unwrap(callee.object);
    if (method === "set" && objectKind !== "collection" && isFromRecord(this.#kindOf(node.arguments[0]))) {
      this.#patterns.add("group");
      if (target.type === "Identifier") this.#taint(target, "groups");
      return;
    }
    if (COLLECTING_METHODS.has(method) && objectKind !== "groups" && target.type === "Identifier" && node.arguments.some((argument: AnyNode) => this.#kindOf(argument.type === "SpreadElement" ? argument.argument : argument) !== undefined)) {
      this.#taint(target, "collection");
    }
  }

  /** `target[key] = …`, `target[key] ||= …`, `target[key]++` with a key from a record, once per element: grouping by hand. */
  #keyedWrite(node: AnyNode): void {
    const target = unwrap(node);
    if (target.type !== "MemberExpression" || !target.computed) return;
    if (!isFromRecord(this.#kindOf(target.property))) return;
    const objectKind = this.#kindOf(target.object);
    if (objectKind !== undefined && objectKind !== "groups") return;
    if (!this.#loops.runsPerElement(target)) return;
    this.#patterns.add("group");
    const object = unwrap(target.object);
    if (object.type === "Identifier") this.#taint(object, "groups");
  }

  /** Marks `callback` (a function, or the name of the program's own) as run per element, its parameters receiving `params`. */
  #eachElement(callback: AnyNode, params: readonly (readonly [number, Kind])[]): void {
    const fn = this.#names.localFunction(callback);
    if (!fn) return;
    if (!this.#perElement.has(fn)) {
      this.#perElement.add(fn);
      this.#changed = true;
    }
    for (const [index, kind] of params) {
      const param = fn.params[index] as AnyNode | undefined;
      if (param) this.#taint(param, kind);
    }
  }

  /** `target = value` or `const target = value`. */
  #bind(target: AnyNode, value: AnyNode): void {
    if (this.#isContext(value)) {
      this.#bindContext(target);
      return;
    }
    const kind = this.#kindOf(value);
    if (!kind) return;
    // `const { length } = list` reads its size as `list.length` does.
    if (isList(kind) && target.type === "ObjectPattern" && (target.properties as AnyNode[]).some((property) => property.type === "Property" && this.#names.keyOf(property) === "length")) this.#patterns.add("count");
    this.#taint(target, kind);
  }

  /** A pattern that receives `context`: an alias, or destructuring that reaches the history. */
  #bindContext(target: AnyNode): void {
    if (target.type === "Identifier") {
      const variable = this.#names.variableOf(target);
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
      if (this.#names.keyOf(property) !== HISTORY_KEY) continue;
      this.#detected = true;
      this.#taint(property.value, "collection");
    }
  }

  #taint(target: AnyNode, kind: Kind): void {
    switch (target.type) {
      case "Identifier": {
        const variable = this.#names.variableOf(target);
        if (variable && widens(kind, this.#kinds.get(variable))) {
          this.#kinds.set(variable, kind);
          this.#changed = true;
        }
        return;
      }
      case "AssignmentPattern":
        this.#taint(target.left, kind);
        return;
      case "ArrayPattern":
        (target.elements as (AnyNode | null)[]).forEach((element, index) => {
          if (!element) return;
          if (element.type === "RestElement") this.#taint(element.argument, kind);
          // A [key, members] pair: the key, then the group.
          else this.#taint(element, kind === "entry" ? (index === 1 ? "collection" : "field") : elementKind(kind));
        });
        return;
      case "ObjectPattern":
        for (const property of target.properties as AnyNode[]) {
          this.#taint(property.type === "RestElement" ? property.argument : property.value, kind === "groups" ? "collection" : "field");
        }
        return;
      default:
        return;
    }
  }

  /** What kind of history value `node` evaluates to, if any. */
  #kindOf(node: AnyNode): Kind | undefined {
    const expression = unwrap(node);
    switch (expression.type) {
      case "Identifier": {
        const variable = this.#names.variableOf(expression);
        if (variable === undefined) return undefined;
        const frame = this.#frameOf(variable);
        if (frame === undefined) return this.#kinds.get(variable);
        const argument = frame.params.get(variable);
        return argument === "context" ? undefined : argument;
      }
      case "MemberExpression":
        return this.#memberKind(expression);
      case "CallExpression":
        return this.#callKind(expression);
      case "ArrayExpression": {
        let kind: Kind | undefined;
        for (const element of expression.elements as (AnyNode | null)[]) {
          if (element?.type === "SpreadElement") {
            const spread = this.#kindOf(element.argument);
            kind = join(kind, spread === "groups" ? "entryList" : isList(spread) ? spread : spread && "field");
          } else if (element && this.#kindOf(element)) kind = join(kind, "field");
        }
        return kind;
      }
      case "ObjectExpression":
        return (expression.properties as AnyNode[]).some((property) => this.#kindOf(property.type === "SpreadElement" ? property.argument : property.value)) ? "field" : undefined;
      case "TemplateLiteral":
        return (expression.expressions as AnyNode[]).some((part) => this.#kindOf(part)) ? "field" : undefined;
      case "BinaryExpression":
        return this.#kindOf(expression.left) || this.#kindOf(expression.right) ? "field" : undefined;
      case "AwaitExpression":
        return this.#kindOf(expression.argument);
      case "ConditionalExpression":
        return join(this.#kindOf(expression.consequent), this.#kindOf(expression.alternate));
      case "LogicalExpression":
        return join(this.#kindOf(expression.left), this.#kindOf(expression.right));
      case "SequenceExpression":
        return this.#kindOf(expression.expressions.at(-1));
      case "AssignmentExpression":
        return this.#kindOf(expression.right);
      case "NewExpression": {
        const name = expression.callee.type === "Identifier" && !this.#names.variableOf(expression.callee) ? expression.callee.name : undefined;
        const first = expression.arguments[0] ? this.#kindOf(expression.arguments[0]) : undefined;
        if (name === "Set" && isList(first)) return "collection";
        if (name === "Map" && holdsMany(first)) return "groups";
        return undefined;
      }
      default:
        return undefined;
    }
  }

  #memberKind(member: AnyNode): Kind | undefined {
    if (this.#isHistorySource(member)) return "collection";
    const objectKind = this.#kindOf(member.object);
    if (objectKind === undefined) return undefined;
    const name = this.#names.propertyName(member);
    if (isList(objectKind)) return name === "length" ? undefined : elementKind(objectKind);
    if (objectKind === "groups") return name === "size" ? undefined : "collection";
    if (objectKind === "entry") return name === "1" || (member.computed && member.property.type === "Literal" && member.property.value === 1) ? "collection" : "field";
    return "field";
  }

  #callKind(call: AnyNode): Kind | undefined {
    const callee = unwrap(call.callee);
    const first = call.arguments[0] as AnyNode | undefined;
    if (callee.type === "MemberExpression") {
      const objectKind = this.#kindOf(callee.object);
      const method = this.#names.propertyName(callee);
      if (isList(objectKind) && method !== undefined) {
        if (SAME_KIND_RESULTS.has(method)) return objectKind;
        if (COLLECTION_RESULTS.has(method)) return "collection";
        if (RECORD_RESULTS.has(method)) return elementKind(objectKind);
        if ((method === "reduce" || method === "reduceRight") && first) return this.#accumulatorKind(first);
        return "field";
      }
      if (objectKind === "groups") return method === "get" ? "collection" : method === "entries" ? "entryList" : method === "values" ? "groupList" : method === "keys" ? "collection" : "field";
      if (objectKind) return "field";
      const firstKind = first ? this.#kindOf(first) : undefined;
      const global = this.#names.globalMember(callee);
      if (global === undefined) return this.#returnKind(call, callee);
      if (global === "JSON.stringify") return firstKind && "field";
      if (global === "JSON.parse") return first && unwrap(first).type === "CallExpression" && this.#names.globalMember(unwrap(unwrap(first).callee)) === "JSON.stringify" ? this.#kindOf(unwrap(first).arguments[0]) : firstKind && "field";
      if (firstKind === undefined) return undefined;
      if (!holdsMany(firstKind)) return "field";
      switch (global) {
        case "Object.groupBy":
        case "Map.groupBy":
          return isList(firstKind) ? "groups" : "field";
        case "Array.from":
          return firstKind === "groups" ? "entryList" : firstKind;
        case "Object.values":
          return firstKind === "groups" ? "groupList" : "collection";
        case "Object.entries":
          return firstKind === "groups" ? "entryList" : "collection";
        case "Object.keys":
          return "collection";
        case "Object.fromEntries":
          return "groups";
        default:
          return "field";
      }
    }
    if (callee.type === "Identifier" && callee.name === "structuredClone" && !this.#names.variableOf(callee)) return first ? this.#kindOf(first) : undefined;
    return this.#returnKind(call, callee);
  }

  /** A `reduce` whose accumulator is filled as groups returns the groups. */
  #accumulatorKind(callback: AnyNode): Kind | undefined {
    const accumulator = this.#names.localFunction(callback)?.params[0] as AnyNode | undefined;
    const variable = accumulator?.type === "Identifier" ? this.#names.variableOf(accumulator) : undefined;
    return variable && this.#kinds.get(variable) === "groups" ? "groups" : "field";
  }

  /** What a call of one of the program's own functions returns, given what this call passes it. */
  #returnKind(call: AnyNode, callee: AnyNode): Kind | undefined {
    const fn = this.#names.localFunction(callee);
    if (!fn || this.#evaluating.has(fn)) return undefined;
    const params = new Map<Variable, ArgumentKind>();
    (fn.params as AnyNode[]).forEach((param, index) => {
      const name = param.type === "AssignmentPattern" ? param.left : param;
      const variable = name.type === "Identifier" ? this.#names.variableOf(name) : undefined;
      if (variable === undefined) return;
      const argument = call.arguments[index] as AnyNode | undefined;
      const given = argument === undefined || argument.type === "SpreadElement" ? (param.type === "AssignmentPattern" ? param.right : undefined) : argument;
      params.set(variable, given === undefined ? undefined : this.#isContext(given) ? "context" : this.#kindOf(given));
    });
    // What it returns depends on its parameters, and on those of the functions it is written in.
    const enclosing = this.#enclosing(fn);
    const key = [...this.#frames.filter((frame) => enclosing.has(frame.fn)), { fn, params }].map((frame) => [...frame.params.values()].join()).join("|");
    let known = this.#returns.get(fn);
    if (known?.has(key)) return known.get(key);
    this.#evaluating.add(fn);
    this.#frames.push({ fn, params });
    let kind: Kind | undefined;
    try {
      for (const returned of returnedExpressions(fn)) kind = join(kind, this.#kindOf(returned));
    } finally {
      this.#frames.pop();
      this.#evaluating.delete(fn);
    }
    if (known === undefined) this.#returns.set(fn, (known = new Map()));
    known.set(key, kind);
    return kind;
  }

  /** The innermost call being worked out whose function has `variable` as a parameter. */
  #frameOf(variable: Variable): Frame | undefined {
    for (let index = this.#frames.length - 1; index >= 0; index -= 1) if (this.#frames[index]?.params.has(variable)) return this.#frames[index];
    return undefined;
  }

  /** The functions `fn` is written inside: their parameters are the only others it can read. */
  #enclosing(fn: AnyNode): Set<AnyNode> {
    const found = new Set<AnyNode>();
    for (let parent = this.#parents.get(fn); parent !== undefined; parent = this.#parents.get(parent)) if (isFunction(parent)) found.add(parent);
    return found;
  }

  /** `context.conversation_history` in any of its spellings. */
  #isHistorySource(node: AnyNode): boolean {
    return node.type === "MemberExpression" && this.#isContext(node.object) && this.#names.propertyName(node) === HISTORY_KEY;
  }

  /** The agent's `context`: the parameter, an alias of it, or `arguments[0]` at the program's top level. */
  #isContext(node: AnyNode): boolean {
    const expression = unwrap(node);
    switch (expression.type) {
      case "Identifier": {
        if (this.#names.isGlobal(expression)) return expression.name === "context";
        const variable = this.#names.variableOf(expression);
        if (variable === undefined) return false;
        const frame = this.#frameOf(variable);
        return frame === undefined ? this.#contextAliases.has(variable) : frame.params.get(variable) === "context";
      }
      case "MemberExpression":
        return expression.object.type === "Identifier" && this.#names.isProgramArguments(expression.object) && expression.computed && expression.property.type === "Literal" && expression.property.value === 0;
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
}
