import * as nodeModule from "node:module";

/**
 * Wraps a method body for stripping: a body may `return` at its top level, which TypeScript
 * accepts only inside a function. The wrapper adds no types, so stripping (which replaces
 * types by spaces) leaves it, and every position in the body, where it was.
 */
const PREFIX = "async function __improv_body__() {\n";
const SUFFIX = "\n}";

let warningMuted = false;

/**
 * `code` with its TypeScript types stripped by Node (`module.stripTypeScriptTypes`), positions
 * kept; `undefined` when it is not TypeScript Node can strip (or an enum, namespace or other
 * construct that would need transforming).
 */
export function stripTypes(code: string): string | undefined {
  try {
    const stripped = muteExperimentalWarning(() => nodeModule.stripTypeScriptTypes(`${PREFIX}${code}${SUFFIX}`, { mode: "strip" }));
    if (!stripped.startsWith(PREFIX) || !stripped.endsWith(SUFFIX)) return undefined;
    return stripped.slice(PREFIX.length, stripped.length - SUFFIX.length);
  } catch {
    return undefined;
  }
}

/**
 * Node warns, once per process, that `stripTypeScriptTypes` is experimental; that warning is
 * about Node, not the user's code, so the first call runs with process warnings of that kind
 * held back (later calls do not warn at all).
 */
function muteExperimentalWarning<T>(run: () => T): T {
  if (warningMuted) return run();
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const type = typeof rest[0] === "string" ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
    if (type === "ExperimentalWarning" || (warning instanceof Error && warning.name === "ExperimentalWarning")) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return run();
  } finally {
    process.emitWarning = emitWarning;
    warningMuted = true;
  }
}
