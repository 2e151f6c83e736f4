import { parse } from "acorn";
import { analyze } from "eslint-scope";
import ivm from "isolated-vm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { HOLD_BACK_SOURCE, COLLECT_SOURCE, ISOLATE_PIECES } from "../../../src/sandbox/child/agent-isolate.ts";

/** The names a piece uses that it does not define itself. */
function freeNames(source: string): string[] {
  const ast = parse(source, { ecmaVersion: "latest", sourceType: "script", allowReturnOutsideFunction: true, ranges: true });
  const scopes = analyze(ast as never, { ecmaVersion: 2025, sourceType: "script" });
  const global = scopes.globalScope;
  if (global === null) throw new Error("no global scope");
  return [...new Set(global.through.map((reference) => reference.identifier.name))].sort();
}

let isolate: ivm.Isolate;
/** The global names of a fresh isolate's context, and of one after `hardenRealm` ran in it. */
let fresh: Set<string>;
let hardened: Set<string>;

beforeAll(async () => {
  isolate = new ivm.Isolate({ memoryLimit: 32 });
  const names = async (harden: boolean) => {
    const context = await isolate.createContext();
    if (harden) await context.evalClosure(`(${ISOLATE_PIECES.hardenRealm})()`, [], { timeout: 5_000 });
    return new Set((await context.eval("Object.getOwnPropertyNames(globalThis)", { copy: true })) as string[]);
  };
  fresh = await names(false);
  hardened = await names(true);
});

afterAll(() => isolate.dispose());

describe("the pieces sent into the isolate as source text", () => {
  test("each refers only to names it defines or to intrinsics of the realm it runs in", () => {
    const strays: Record<string, string[]> = {};
    const pieces: Record<string, string> = { HOLD_BACK_SOURCE, COLLECT_SOURCE };
    for (const [name, piece] of Object.entries(ISOLATE_PIECES)) pieces[name] = `(${String(piece)})`;
    for (const [name, source] of Object.entries(pieces)) {
      // `hardenRealm` runs in the fresh realm; everything else after it.
      const intrinsics = name === "hardenRealm" ? fresh : hardened;
      const stray = freeNames(source).filter((free) => !intrinsics.has(free));
      if (stray.length > 0) strays[name] = stray;
    }
    expect(strays).toEqual({});
  });

  test("a stray module-scope name is found (the check can fail)", () => {
    const withStray = `(${String(ISOLATE_PIECES.createMirror).replace("const mirror = [];", "const mirror = [SANDBOX_LIMITS];")})`;
    expect(withStray).toContain("SANDBOX_LIMITS");
    expect(freeNames(withStray).filter((free) => !hardened.has(free))).toEqual(["SANDBOX_LIMITS"]);
    // Removed by the hardening: a piece that used one would fail in the isolate.
    expect(hardened.has("SharedArrayBuffer")).toBe(false);
    expect(fresh.has("SharedArrayBuffer")).toBe(true);
  });
});
