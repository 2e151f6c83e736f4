/** Reading acorn's ESTree nodes for the history scan: traversal, parents, function returns, constant strings. */

// ESTree nodes from acorn, read generically: each reader checks `type` before the fields it reads.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyNode = { readonly type: string; readonly [field: string]: any };

/** Every node of a tree in source order, and each node's parent. */
export function indexTree(root: AnyNode): { readonly nodes: readonly AnyNode[]; readonly parents: ReadonlyMap<AnyNode, AnyNode> } {
  const nodes: AnyNode[] = [];
  const parents = new Map<AnyNode, AnyNode>();
  const stack: AnyNode[] = [root];
  while (stack.length > 0) {
    const node = stack.pop() as AnyNode;
    nodes.push(node);
    const children = childNodes(node);
    for (const child of children) parents.set(child, node);
    for (let index = children.length - 1; index >= 0; index -= 1) stack.push(children[index] as AnyNode);
  }
  return { nodes, parents };
}

/** The nodes directly under `node`, in source order. */
export function childNodes(node: AnyNode): AnyNode[] {
  const children: AnyNode[] = [];
  for (const key of Object.keys(node)) {
    if (key === "type" || key === "start" || key === "end" || key === "loc" || key === "range") continue;
    const value = node[key];
    if (Array.isArray(value)) {
      for (const item of value) if (isNode(item)) children.push(item);
    } else if (isNode(value)) children.push(value);
  }
  return children;
}

function isNode(value: unknown): value is AnyNode {
  return typeof value === "object" && value !== null && typeof (value as { type?: unknown }).type === "string";
}

/** The expression under parentheses and optional chains. */
export function unwrap(node: AnyNode): AnyNode {
  let current = node;
  while (current.type === "ChainExpression" || current.type === "ParenthesizedExpression") current = current.expression;
  return current;
}

export function isFunction(node: AnyNode): boolean {
  return node.type === "FunctionExpression" || node.type === "ArrowFunctionExpression" || node.type === "FunctionDeclaration";
}

const returnsOf = new WeakMap<AnyNode, readonly AnyNode[]>();

/** The expressions a function returns: its arrow body, or the arguments of its own `return`s (not those of functions inside it). */
export function returnedExpressions(fn: AnyNode): readonly AnyNode[] {
  let found = returnsOf.get(fn);
  if (found !== undefined) return found;
  const returned: AnyNode[] = [];
  if (fn.body.type !== "BlockStatement") returned.push(fn.body);
  else {
    const stack: AnyNode[] = [fn.body];
    while (stack.length > 0) {
      const node = stack.pop() as AnyNode;
      if (node.type === "ReturnStatement" && node.argument) returned.push(node.argument);
      for (const child of childNodes(node)) if (!isFunction(child)) stack.push(child);
    }
  }
  found = returned;
  returnsOf.set(fn, found);
  return found;
}

/** What the scan needs to know of a name: the `const` declarator that binds it, if any. */
export type ConstInit = (identifier: AnyNode) => AnyNode | undefined;

/**
 * The string a property key or argument always evaluates to: a literal, a template without
 * substitutions, a `+` of constants, or a `const` bound to one. Otherwise `undefined`.
 */
export function constantString(node: AnyNode, constInit: ConstInit, depth = 0): string | undefined {
  if (depth > 8) return undefined;
  switch (node.type) {
    case "Literal":
      return typeof node.value === "string" ? node.value : undefined;
    case "TemplateLiteral":
      return node.expressions.length === 0 ? node.quasis[0]?.value.cooked : undefined;
    case "BinaryExpression": {
      if (node.operator !== "+") return undefined;
      const left = constantString(node.left, constInit, depth + 1);
      const right = left === undefined ? undefined : constantString(node.right, constInit, depth + 1);
      return left === undefined || right === undefined ? undefined : left + right;
    }
    case "Identifier": {
      const init = constInit(node);
      return init === undefined ? undefined : constantString(init, constInit, depth + 1);
    }
    default:
      return undefined;
  }
}
