/**
 * How large a value from the sandbox would be written out as JSON, measured on its encoded
 * node graph (format in `prelude/encode.ts`) before anything is built from it.
 *
 * A node reached twice is counted twice, as JSON would write it, but is walked once: a
 * "billion laughs" value of 31 arrays whose JSON holds 2^30 strings is measured in 31 steps
 * and refused, instead of being expanded by whatever serialises it later (a history record,
 * a log line, a prompt, the application's own `JSON.stringify`). A reference back to an
 * enclosing node (a cycle) counts as the short stand-in that replaces it.
 *
 * The walk stops as soon as the count passes the limit; every step adds at least one
 * character, so the work is bounded by the limit whatever the input.
 */

/** A value whose JSON would be longer than the limit it was measured against. */
export class ValueTooLargeError extends Error {
  override readonly name = "ValueTooLargeError";
  /** The limit that was passed. @unit characters */
  readonly limit: number;

  constructor(limit: number) {
    super(`The value is larger than ${limit} characters as JSON.`);
    this.limit = limit;
  }
}

/** What a cycle's stand-in costs (`"[Circular]"`). */
export const CIRCULAR_CHARS = 12;
/** What a special or invalid reference costs (`null`). */
const SPECIAL_CHARS = 4;
/** What a Date costs (`"2025-01-01T00:00:00.000Z"`). */
export const DATE_CHARS = 26;
const NO_CHILDREN: readonly unknown[] = [];

/** A node's own characters and the references it holds. */
interface NodeShape {
  readonly chars: number;
  readonly children: readonly unknown[];
}

function shapeOf(node: unknown): NodeShape {
  switch (typeof node) {
    case "string":
      // Escapes are not counted: the length is what makes a value large, not its quoting.
      return { chars: node.length + 2, children: NO_CHILDREN };
    case "number":
      return { chars: String(node).length, children: NO_CHILDREN };
    case "boolean":
      return { chars: node ? 4 : 5, children: NO_CHILDREN };
    case "object":
      break;
    default:
      return { chars: SPECIAL_CHARS, children: NO_CHILDREN };
  }
  if (node === null) return { chars: 4, children: NO_CHILDREN };
  if (Array.isArray(node)) {
    if (typeof node[0] === "string") return taggedShape(node);
    return { chars: 2 + Math.max(0, node.length - 1), children: node };
  }
  let chars = 1;
  const children: unknown[] = [];
  for (const key in node) {
    if (!Object.hasOwn(node, key)) continue;
    chars += key.length + 4; // "key": and a comma (or, for the last, the closing brace)
    children.push((node as Record<string, unknown>)[key]);
  }
  return { chars: Math.max(2, chars), children };
}

function taggedShape(node: readonly unknown[]): NodeShape {
  const text = (at: number) => (typeof node[at] === "string" ? (node[at] as string).length : 0);
  switch (node[0]) {
    case "Map":
    case "Set": {
      const children = node.slice(1);
      return { chars: 2 + children.length * 2, children };
    }
    case "Date":
      return { chars: DATE_CHARS, children: NO_CHILDREN };
    case "StandIn":
      return { chars: 2 + text(1), children: NO_CHILDREN };
    case "Bytes":
      return { chars: 2 + text(2), children: NO_CHILDREN };
    default:
      return { chars: 4 + text(1) + text(2), children: NO_CHILDREN };
  }
}

/**
 * The characters the value rooted at `root` would take as JSON, or a {@link ValueTooLargeError}
 * once that passes `limit`. Tolerates malformed input (the decoder rejects it afterwards).
 */
export function measureExpandedChars(nodes: readonly unknown[], root: unknown, limit: number): number {
  const count = nodes.length;
  const shapes = new Array<NodeShape | undefined>(count);
  const shape = (index: number) => (shapes[index] ??= shapeOf(nodes[index]));
  const rootIndex = indexOf(root, count);
  if (rootIndex === undefined) {
    if (SPECIAL_CHARS > limit) throw new ValueTooLargeError(limit);
    return SPECIAL_CHARS;
  }
  // A node on no cycle has one size wherever it is reached (nothing it reaches can be above it),
  // so it is measured once. One on a cycle is measured again where it is reached again: what
  // counts as a cycle's stand-in depends on the path taken to it.
  const onCycle = findNodesOnCycles(count, rootIndex, shape, limit);
  const knownSize = new Float64Array(count).fill(-1);
  const onPath = new Uint8Array(count);
  // The walk's stack, one entry per node on the current path (a node is on it at most once).
  const pathNode = new Int32Array(count);
  const pathNext = new Int32Array(count);
  const pathSpentBefore = new Float64Array(count);
  let depth = 0;
  let spent = 0;

  const charge = (chars: number) => {
    spent += chars;
    if (spent > limit) throw new ValueTooLargeError(limit);
  };
  const visit = (ref: unknown) => {
    const index = indexOf(ref, count);
    if (index === undefined) return charge(SPECIAL_CHARS);
    const known = knownSize[index] as number;
    if (known >= 0) return charge(known);
    if (onPath[index] === 1) return charge(CIRCULAR_CHARS);
    onPath[index] = 1;
    pathNode[depth] = index;
    pathNext[depth] = 0;
    pathSpentBefore[depth] = spent;
    depth += 1;
    return charge(shape(index).chars);
  };

  visit(rootIndex);
  while (depth > 0) {
    const top = depth - 1;
    const index = pathNode[top] as number;
    const { children } = shape(index);
    const next = pathNext[top] as number;
    if (next < children.length) {
      pathNext[top] = next + 1;
      visit(children[next]);
      continue;
    }
    depth -= 1;
    onPath[index] = 0;
    if (onCycle[index] === 0) knownSize[index] = spent - (pathSpentBefore[top] as number);
  }
  return spent;
}

function indexOf(ref: unknown, count: number): number | undefined {
  return typeof ref === "number" && Number.isInteger(ref) && ref >= 0 && ref < count ? ref : undefined;
}

/**
 * Marks the nodes reachable from `root` that lie on a cycle (Tarjan's strongly connected
 * components, without recursion). Each reachable node is at least one character of the
 * value's JSON, so reaching more than `limit` of them already means the value is too large.
 */
function findNodesOnCycles(count: number, root: number, shape: (index: number) => NodeShape, limit: number): Uint8Array {
  const onCycle = new Uint8Array(count);
  const order = new Int32Array(count).fill(-1);
  const low = new Int32Array(count);
  const onStack = new Uint8Array(count);
  const stack: number[] = [];
  const frameNode = new Int32Array(count);
  const frameNext = new Int32Array(count);
  let depth = 0;
  let counter = 0;
  const enter = (index: number) => {
    if (counter >= limit) throw new ValueTooLargeError(limit);
    order[index] = low[index] = counter++;
    stack.push(index);
    onStack[index] = 1;
    frameNode[depth] = index;
    frameNext[depth] = 0;
    depth += 1;
  };

  enter(root);
  while (depth > 0) {
    const top = depth - 1;
    const index = frameNode[top] as number;
    const { children } = shape(index);
    const next = frameNext[top] as number;
    if (next < children.length) {
      frameNext[top] = next + 1;
      const child = indexOf(children[next], count);
      if (child === undefined) continue;
      if (child === index) onCycle[index] = 1;
      if (order[child] === -1) enter(child);
      else if (onStack[child] === 1) low[index] = Math.min(low[index] as number, order[child] as number);
      continue;
    }
    depth -= 1;
    if (depth > 0) {
      const parent = frameNode[depth - 1] as number;
      low[parent] = Math.min(low[parent] as number, low[index] as number);
    }
    if (low[index] !== order[index]) continue;
    // `index` roots a component: everything above it on the stack belongs to it.
    const members = stack.splice(stack.lastIndexOf(index));
    for (const member of members) {
      onStack[member] = 0;
      if (members.length > 1) onCycle[member] = 1;
    }
  }
  return onCycle;
}
