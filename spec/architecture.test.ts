import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(root, "src");

/** Every TypeScript module under `src/`, as a path relative to it. */
function modules(): string[] {
  return (readdirSync(src, { recursive: true }) as string[]).filter((path) => path.endsWith(".ts")).map((path) => path.split("\\").join("/")).sort();
}

/** The modules a module imports or re-exports from, type-only ones included. */
function importsOf(path: string, text = readFileSync(join(src, path), "utf8")): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+["'](\.{1,2}\/[^"']+)["']/gms)) {
    found.push(relative(src, resolve(dirname(join(src, path)), match[1] as string)).split("\\").join("/"));
  }
  return found;
}

/** The import cycles of a graph: its strongly connected parts of two modules or more. */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node) as number);
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (stack.includes(next)) low.set(node, Math.min(low.get(node) as number, index.get(next) as number));
    }
    if (low.get(node) !== index.get(node)) return;
    const part: string[] = [];
    let member: string;
    do {
      member = stack.pop() as string;
      part.push(member);
    } while (member !== node);
    if (part.length > 1) found.push(part.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** The folder of `src/` a module belongs to: its first folder, or "." for a module in `src/` itself. */
function folderOf(path: string): string {
  return path.includes("/") ? (path.split("/")[0] as string) : ".";
}

/** The floors docs/architecture.md lists, lowest first: each folder's floor number. */
function floors(page: string): Map<string, number> {
  const block = page.split("## Floors")[1]?.split("```")[1] ?? "";
  const floor = new Map<string, number>();
  for (const line of block.split("\n")) {
    const match = /^\s*(\d+)\s+(.+)$/.exec(line);
    if (match === null) continue;
    for (const name of (match[2] as string).split(/\s+/)) {
      if (name === "src/") floor.set(".", Number(match[1]));
      else if (name.endsWith("/")) floor.set(name.slice(0, -1), Number(match[1]));
    }
  }
  return floor;
}

/**
 * What breaks the house's rules in `graph`: an import of another folder's inner file (a folder's
 * door is its index.ts; src/'s own is index.ts too), of a folder on the same or a higher floor,
 * or of a folder the floors do not list.
 */
function ruleBreaks(graph: ReadonlyMap<string, readonly string[]>, floor: ReadonlyMap<string, number>): string[] {
  const found: string[] = [];
  for (const [from, targets] of graph) {
    const here = folderOf(from);
    for (const to of targets) {
      const there = folderOf(to);
      if (there === here) continue;
      const door = there === "." ? "index.ts" : `${there}/index.ts`;
      if (to !== door) found.push(`${from} imports ${to}, not ${door}`);
      const [low, high] = [floor.get(there), floor.get(here)];
      if (low === undefined || high === undefined) found.push(`${from} -> ${to}: ${low === undefined ? there : here} is on no floor`);
      else if (low >= high) found.push(`${from} -> ${to}: ${here} (floor ${high}) imports ${there} (floor ${low})`);
    }
  }
  return found;
}

describe("the architecture", () => {
  test("every folder imports another only through its door (index.ts), and only from a lower floor (docs/architecture.md)", () => {
    const graph = new Map(modules().map((path) => [path, importsOf(path)] as const));
    const floor = floors(readFileSync(join(root, "docs/architecture.md"), "utf8"));
    expect(floor.get("shared")).toBe(0);
    expect(new Set(modules().map(folderOf))).toEqual(new Set(floor.keys()));
    expect(ruleBreaks(graph, floor)).toEqual([]);
  });

  test("an import of an inner file, and one toward a higher floor, are found (the check can fail)", () => {
    const floor = floors("## Floors\n```\n2   src/ (index.ts)\n1   call/\n0   shared/\n```\n");
    const graph = new Map([
      ["call/run.ts", importsOf("call/run.ts", 'import { within } from "../shared/within.ts";\nimport type { X } from "../shared/index.ts";')],
      ["shared/within.ts", importsOf("shared/within.ts", 'import type { Call } from "../call/index.ts";')],
      ["agent.ts", importsOf("agent.ts", 'export { performCall } from "./call/index.ts";')],
    ]);
    expect(ruleBreaks(graph, floor)).toEqual([
      "call/run.ts imports shared/within.ts, not shared/index.ts",
      "shared/within.ts -> call/index.ts: shared (floor 0) imports call (floor 1)",
    ]);
  });


  test("src/ has no import cycles, type-only imports included", () => {
    const graph = new Map(modules().map((path) => [path, importsOf(path)] as const));
    // The reader sees type-only imports (this one is one).
    expect(graph.get("sandbox/host/run-program.ts")).toContain("sandbox/host/pending-run.ts");
    expect(cycles(graph)).toEqual([]);
  });

  test("a cycle is found, however long (the check can fail)", () => {
    const graph = new Map([
      ["a.ts", importsOf("a.ts", 'import type { B } from "./b.ts";')],
      ["b.ts", importsOf("b.ts", 'export { C } from "./c.ts";')],
      ["c.ts", importsOf("c.ts", 'import {\n  A,\n} from "./a.ts";')],
      ["d.ts", ["a.ts"]],
    ]);
    expect(cycles(graph)).toEqual([["a.ts", "b.ts", "c.ts"]]);
  });

  test("docs/architecture.md names every module in src/, and no module that is gone", () => {
    const page = readFileSync(join(root, "docs/architecture.md"), "utf8");
    const block = page.split("## Modules")[1]?.split("```")[1] ?? "";
    const listed: string[] = [];
    // The folder at each indent: "src/call/" at 0, "bridge/" under it at 2, and so on.
    const folders: string[] = [];
    for (const line of block.split("\n")) {
      const name = /^( *)(\S+\.ts|\S+\/)\s/.exec(`${line} `);
      if (name === null) continue;
      const [, indent, entry] = name as unknown as [string, string, string];
      const depth = indent.length / 2;
      const path = `${folders.slice(0, depth).join("")}${entry}`.replace(/^src\//, "");
      if (entry.endsWith("/")) folders[depth] = entry;
      else listed.push(path);
    }
    expect(listed.sort()).toEqual(modules());
  });
});
