/**
 * The static scan's tool fields: whether a program reaches the `tools` it is given, and which
 * tool names its syntax tree reaches (`tools.weather(…)`, `tools.notes.append(…)`,
 * `tools["weather"]`, `const { weather } = tools`), and the `fetch` it is given (listed as the
 * tool `fetch`, as its calls are in records). A `tools` or `fetch` the program declares itself is
 * not the one it is given and is not counted.
 */
import { analyze } from "eslint-scope";
import { type ParsedProgram, parseProgram } from "../programs/index.ts";

/** What the scan says of a program's tool use. */
export interface ToolScan {
  readonly toolAccessDetected: boolean;
  /** Tool names reached, in order of first appearance (at most {@link MAX_REFERENCED}). */
  readonly toolsReferenced: readonly string[];
}

const MAX_REFERENCED = 50;
/** What a tool's function has of its own (`tools.weather.call(…)` reaches `weather`, not a tool named `call`). */
const FUNCTION_MEMBERS = new Set(["call", "apply", "bind", "name", "length", "toString"]);
const NONE: ToolScan = Object.freeze({ toolAccessDetected: false, toolsReferenced: Object.freeze([]) as readonly string[] });

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyNode = { readonly type: string; readonly [field: string]: any };

const scans = new WeakMap<ParsedProgram, ToolScan>();

/** Scans a program for tool use; uses `parsed` when the caller already parsed it. */
export function scanToolUse(code: string, parsed: ParsedProgram = parseProgram(code)): ToolScan {
  let scan = scans.get(parsed);
  if (scan === undefined) {
    scan = scanOnce(code, parsed);
    scans.set(parsed, scan);
  }
  return scan;
}

function scanOnce(code: string, parsed: ParsedProgram): ToolScan {
  // Cheap first: most programs never name tools.
  if (!code.includes("tools") && !code.includes("fetch")) return NONE;
  if (!parsed.ok) return textualScan(code);
  try {
    return scanTree(parsed.ast as AnyNode);
  } catch {
    return textualScan(code);
  }
}

/** For a program that does not parse: whether the text reaches `tools` or calls `fetch`. */
function textualScan(code: string): ToolScan {
  const fetches = /\bfetch\s*\(/.test(code);
  return { toolAccessDetected: fetches || /\btools\s*(?:\.|\[)/.test(code), toolsReferenced: fetches ? ["fetch"] : [] };
}

function scanTree(ast: AnyNode): ToolScan {
  // "commonjs" wraps the program in a function scope, as the sandbox does; `tools` is then unresolved.
  const scopes = analyze(ast as never, { ecmaVersion: 2025, sourceType: "commonjs" });
  const granted = new Set<AnyNode>();
  const fetches = new Set<AnyNode>();
  for (const scope of scopes.scopes) {
    for (const reference of scope.references) {
      if (reference.resolved !== null) continue;
      if (reference.identifier.name === "tools") granted.add(reference.identifier as AnyNode);
      else if (reference.identifier.name === "fetch") fetches.add(reference.identifier as AnyNode);
    }
  }
  if (granted.size === 0 && fetches.size === 0) return NONE;
  const names: string[] = [];
  const add = (name: string) => {
    if (names.length < MAX_REFERENCED && !names.includes(name)) names.push(name);
  };
  visit(ast, [], (node, parents) => {
    if (fetches.has(node)) add("fetch");
    if (!granted.has(node)) return;
    const parent = parents.at(-1);
    const first = memberName(parent, node);
    if (first !== undefined) {
      const second = memberName(parents.at(-2), parent as AnyNode);
      add(second === undefined || FUNCTION_MEMBERS.has(second) ? first : `${first}.${second}`);
      return;
    }
    // const { weather, notes } = tools
    if (parent?.type === "VariableDeclarator" && parent.init === node && parent.id.type === "ObjectPattern") {
      for (const property of parent.id.properties as AnyNode[]) if (property.type === "Property" && !property.computed && property.key.type === "Identifier") add(property.key.name);
    }
  });
  return { toolAccessDetected: true, toolsReferenced: names };
}

/** The name `object.name` or `object["name"]` reads, when `parent` is that member expression. */
function memberName(parent: AnyNode | undefined, object: AnyNode): string | undefined {
  if (parent?.type !== "MemberExpression" || parent.object !== object) return undefined;
  if (!parent.computed && parent.property.type === "Identifier") return parent.property.name;
  if (parent.computed && parent.property.type === "Literal" && typeof parent.property.value === "string") return parent.property.value;
  return undefined;
}

function visit(node: AnyNode, parents: AnyNode[], found: (node: AnyNode, parents: readonly AnyNode[]) => void): void {
  found(node, parents);
  parents.push(node);
  for (const key of Object.keys(node)) {
    if (key === "type" || key === "start" || key === "end" || key === "loc" || key === "range") continue;
    const child = node[key];
    if (Array.isArray(child)) {
      for (const item of child) if (isNode(item)) visit(item, parents, found);
    } else if (isNode(child)) visit(child, parents, found);
  }
  parents.pop();
}

function isNode(value: unknown): value is AnyNode {
  return typeof value === "object" && value !== null && typeof (value as { type?: unknown }).type === "string";
}
