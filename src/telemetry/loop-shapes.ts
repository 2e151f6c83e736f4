/**
 * Loops in a generated program, as the history scan reads them: which code runs once per
 * element of a history value (where writing keyed by a record's field is grouping), which loops
 * index a list, and which reads of `.length` bound a loop or index an element rather than count.
 */
import { holdsMany, isList, type Kind } from "./history-kinds.ts";
import { childNodes, isFunction, unwrap, type AnyNode } from "./syntax.ts";

/** What the loop questions need of the analysis. */
export interface ProgramView {
  readonly parents: ReadonlyMap<AnyNode, AnyNode>;
  kindOf(node: AnyNode): Kind | undefined;
  propertyName(member: AnyNode): string | undefined;
  /** `Object.groupBy`-style names of real globals. */
  globalMember(member: AnyNode): string | undefined;
  /** The identifiers that read the variable `identifier` names. */
  readsOf(identifier: AnyNode): readonly AnyNode[];
  /** The initialiser of the variable `identifier` names, if it is declared with one. */
  declaredInit(identifier: AnyNode): AnyNode | undefined;
  /** Whether the function `fn` is a callback run once per element of a history value. */
  runsPerElement(fn: AnyNode): boolean;
}

export class LoopShapes {
  readonly #view: ProgramView;

  constructor(view: ProgramView) {
    this.#view = view;
  }

  /** Whether `node` runs once per element of a history value: in such a callback, a `for…of` / `for…in` body over one, or an index loop's body. */
  runsPerElement(node: AnyNode): boolean {
    const { parents, kindOf } = this.#view;
    let child = node;
    for (let parent = parents.get(node); parent !== undefined; child = parent, parent = parents.get(parent)) {
      if (this.#view.runsPerElement(parent)) return true;
      if ((parent.type === "ForOfStatement" || parent.type === "ForInStatement") && parent.body === child && holdsMany(kindOf(parent.right))) return true;
      if ((parent.type === "ForStatement" || parent.type === "WhileStatement" || parent.type === "DoWhileStatement") && parent.body === child && this.#isIndexLoop(parent)) return true;
    }
    return false;
  }

  /** Whether `node` is in the init, test or update of a loop, within the same function. */
  inHeader(node: AnyNode): boolean {
    const { parents } = this.#view;
    let child = node;
    for (let parent = parents.get(node); parent !== undefined; child = parent, parent = parents.get(parent)) {
      if (parent.type === "ForStatement") return parent.body !== child;
      if (parent.type === "WhileStatement" || parent.type === "DoWhileStatement") return parent.test === child;
      if (isFunction(parent) || parent.type.endsWith("Statement") || parent.type === "Program") return false;
    }
    return false;
  }

  /** `const n = list.length` whose every read is in a loop's header: the bound of an index loop. */
  boundsLoopsOnly(node: AnyNode): boolean {
    const declarator = this.#view.parents.get(node);
    if (declarator?.type !== "VariableDeclarator" || declarator.init !== node || declarator.id.type !== "Identifier") return false;
    const reads = this.#view.readsOf(declarator.id);
    return reads.length > 0 && reads.every((read) => this.inHeader(read));
  }

  /** `.length` inside the index of a list (`list[list.length - 1]`, `list[Math.floor(list.length / 2)]`): finds an element, counts nothing. */
  isIndexArithmetic(node: AnyNode): boolean {
    const { parents, kindOf, globalMember } = this.#view;
    let child = node;
    for (let parent = parents.get(node); parent !== undefined; child = parent, parent = parents.get(parent)) {
      if (parent.type === "MemberExpression") return parent.computed && parent.property === child && isList(kindOf(parent.object));
      const mathCall = parent.type === "CallExpression" && parent.callee !== child && globalMember(unwrap(parent.callee))?.startsWith("Math.") === true;
      if (!mathCall && parent.type !== "BinaryExpression" && parent.type !== "ParenthesizedExpression") return false;
    }
    return false;
  }

  /** A loop whose header reads `.length` of a list, directly or through a variable declared with it. */
  #isIndexLoop(loop: AnyNode): boolean {
    const stack = [loop.init, loop.test, loop.update].filter(Boolean) as AnyNode[];
    while (stack.length > 0) {
      const node = stack.pop() as AnyNode;
      if (this.#isLength(node)) return true;
      if (node.type === "Identifier") {
        const init = this.#view.declaredInit(node);
        if (init && this.#isLength(unwrap(init))) return true;
      }
      for (const child of childNodes(node)) if (!isFunction(child)) stack.push(child);
    }
    return false;
  }

  #isLength(node: AnyNode): boolean {
    return node.type === "MemberExpression" && this.#view.propertyName(node) === "length" && isList(this.#view.kindOf(node.object));
  }
}
