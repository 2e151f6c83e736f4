import { parse, type Program } from "acorn";

/** A generated program parsed as the body of an async function, or why it does not parse. */
export type ParsedProgram = { readonly ok: true; readonly ast: Program } | { readonly ok: false; readonly message: string };

/**
 * Parses a method body the way the sandbox runs it: as the body of an async function in a
 * sloppy-mode script (so `return` and `await` are allowed at its top level).
 */
export function parseProgram(code: string): ParsedProgram {
  try {
    const ast = parse(code, {
      ecmaVersion: "latest",
      sourceType: "script",
      allowReturnOutsideFunction: true,
      allowAwaitOutsideFunction: true,
      locations: false,
      ranges: true,
    });
    return { ok: true, ast };
  } catch (error) {
    return { ok: false, message: error instanceof Error ? error.message : String(error) };
  }
}
