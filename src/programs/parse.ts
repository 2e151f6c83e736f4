import { parse, type Program } from "acorn";

/** A generated program parsed as the body of an async function, or why it does not parse (where, when known: 1-based). */
export type ParsedProgram =
  | { readonly ok: true; readonly ast: Program }
  | { readonly ok: false; readonly message: string; readonly line?: number; readonly column?: number };

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
    const message = error instanceof Error ? error.message : String(error);
    // acorn ends its message with "(line:column)", the column counted from 0.
    const loc = (error as { loc?: { line?: unknown; column?: unknown } }).loc;
    if (typeof loc?.line === "number" && typeof loc.column === "number") {
      return { ok: false, message: message.replace(/ \(\d+:\d+\)$/, ""), line: loc.line, column: loc.column + 1 };
    }
    return { ok: false, message };
  }
}
