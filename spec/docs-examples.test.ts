/**
 * Every TypeScript example of the README and of docs/ (each ```ts or ```typescript block)
 * type-checks as a module of a user's own project: written to a file of its own, compiled with
 * the settings `tsc --init` writes (strict, noUncheckedIndexedAccess,
 * exactOptionalPropertyTypes, verbatimModuleSyntax, ...) plus Node.js's types, with `improv`
 * resolved to this checkout's source. All examples are checked by one run of the compiler; an
 * error names the doc file and line it is on.
 *
 * A block that is not a whole module on purpose is marked, on the line just before its fence,
 * with `<!-- not-checked: why -->`, and is left out. Every such mark must say why, and must stand
 * before a TypeScript block.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";

const root = new URL("..", import.meta.url).pathname;
const SKIP_MARK = /^\s*<!--\s*not-checked:(.*?)-->\s*$/;

interface Block {
  readonly doc: string;
  /** 1-based line of the opening fence. */
  readonly fence: number;
  readonly code: string;
  /** The reason given by a `<!-- not-checked: … -->` mark, when the block has one. */
  readonly skipped?: string;
}

/** The TypeScript blocks of a Markdown file, by its fences (``` or ~~~, indented or not, nested in longer fences or not). */
function typescriptBlocks(doc: string): { blocks: Block[]; strayMarks: number[] } {
  const lines = readFileSync(join(root, doc), "utf8").split("\n");
  const blocks: Block[] = [];
  const strayMarks: number[] = [];
  for (let index = 0; index < lines.length; index += 1) {
    const open = /^( {0,3})(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[index]!);
    if (open === null) {
      if (SKIP_MARK.test(lines[index]!) && !/^ {0,3}(```|~~~)\s*(ts|typescript)\s*$/.test(lines[index + 1] ?? "")) strayMarks.push(index + 1);
      continue;
    }
    const [, indent, fence, info] = open as unknown as [string, string, string, string];
    const close = new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}\\s*$`);
    const start = index;
    const body: string[] = [];
    for (index += 1; index < lines.length && !close.test(lines[index]!); index += 1) {
      body.push(lines[index]!.startsWith(indent) ? lines[index]!.slice(indent.length) : lines[index]!.trimStart());
    }
    if (info !== "ts" && info !== "typescript") continue;
    const mark = SKIP_MARK.exec(lines[start - 1] ?? "");
    blocks.push({ doc, fence: start + 1, code: `${body.join("\n")}\n`, ...(mark === null ? {} : { skipped: mark[1]!.trim() }) });
  }
  return { blocks, strayMarks };
}

const docs = ["README.md", ...readdirSync(join(root, "docs")).filter((name) => name.endsWith(".md")).sort().map((name) => `docs/${name}`)];
const found = docs.map(typescriptBlocks);
const blocks = found.flatMap(({ blocks }) => blocks);
const checked = blocks.filter((block) => block.skipped === undefined);

// Inside the checkout, so the examples' other imports (zod, ai, vitest) resolve from its node_modules.
const work = mkdtempSync(join(root, ".docs-examples-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("the TypeScript examples in README.md and docs/", () => {
  test("are found, and each one left out says why", () => {
    expect(checked.length).toBeGreaterThanOrEqual(20);
    for (const block of blocks) if (block.skipped !== undefined) expect(block.skipped, `${block.doc}:${block.fence}: a not-checked mark says why`).not.toBe("");
    const stray = found.flatMap(({ strayMarks }, index) => strayMarks.map((line) => `${docs[index]}:${line}`));
    expect(stray, "not-checked marks that do not stand just before a ```ts block").toEqual([]);
  });

  test("type-check as a user's modules, in one compiler run", () => {
    const byFile = new Map<string, Block>();
    for (const block of checked) {
      const file = `${block.doc.replace(/\.md$/, "").replaceAll("/", "_")}-line-${block.fence}.ts`;
      byFile.set(file, block);
      writeFileSync(join(work, file), block.code);
    }
    const settings = {
      // What `tsc --init` writes, where it bears on checking.
      module: "nodenext",
      target: "esnext",
      strict: true,
      noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true,
      verbatimModuleSyntax: true,
      isolatedModules: true,
      noUncheckedSideEffectImports: true,
      moduleDetection: "force",
      skipLibCheck: true,
      // A Node.js application's, and this check's own.
      types: ["node"],
      noEmit: true,
      // `improv` is this checkout's source, whose own imports name .ts files.
      allowImportingTsExtensions: true,
      paths: { improv: [join(root, "src/index.ts")] },
    };
    writeFileSync(join(work, "tsconfig.json"), JSON.stringify({ compilerOptions: settings, files: [...byFile.keys()] }, null, 2));
    const run = spawnSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", join(work, "tsconfig.json"), "--pretty", "false"], { cwd: work, encoding: "utf8", timeout: 120_000 });
    expect(run.error).toBeUndefined();
    expect(run.signal).toBeNull();

    // The library's own source is checked by tsconfig.json, under its own settings: here only the
    // examples' errors count, and errors that name no file (the settings').
    const errors: string[] = [];
    for (const line of `${run.stdout}\n${run.stderr}`.split("\n")) {
      if (line.trim() === "" || /^\s/.test(line)) continue;
      const at = /^(.*?)\((\d+),(\d+)\): (error .*)$/.exec(line);
      if (at === null) {
        errors.push(line);
        continue;
      }
      const [, file, row, column, message] = at as unknown as [string, string, string, string, string];
      const block = byFile.get(basename(file));
      if (block !== undefined) errors.push(`${block.doc}:${block.fence + Number(row)}:${column} (the block at line ${block.fence}): ${message}`);
    }
    expect(errors.join("\n"), "examples that do not compile").toBe("");
  }, 130_000);
});
