/**
 * A `returns` JSON Schema a program passed in `delegate(role, { methods })`: hostile input.
 * Here, on the host, it is only measured and held to its draft's meta-schema (which compiles
 * nothing of it); it is compiled and checked on a schema thread (`schema-threads.ts`), within
 * the time its call has.
 */
import { jsonSchemaProblem, type ReadSchema, SchemaProblem } from "../tools/index.ts";
import { jsonDataProblem } from "./json-data.ts";
import { checkInThread, prepareThread } from "./schema-threads.ts";

/** What a program's schema may hold. */
export const PROGRAM_SCHEMA_LIMITS = {
  /** @unit characters of JSON */
  maxChars: 20_000,
  /** `pattern`s and `patternProperties` keys, together. */
  maxPatterns: 32,
  /** @unit characters */
  maxPatternChars: 200,
  /** Objects and arrays nested in one another. */
  maxDepth: 32,
} as const;

const NEVER = new AbortController().signal;

/** Reads a program's `returns` schema; throws a {@link SchemaProblem} saying what is wrong and what to do. */
export function readProgramSchema(schema: unknown): ReadSchema {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) throw new SchemaProblem("must be a JSON Schema object");
  if (Object.hasOwn(schema, "~standard")) throw new SchemaProblem("has a ~standard property: a program's schema must be a JSON Schema object");
  const notJson = jsonDataProblem(schema);
  if (notJson !== undefined) throw new SchemaProblem(`is not JSON data (${notJson})`);
  measure(schema);
  const text = JSON.stringify(schema);
  const { maxChars } = PROGRAM_SCHEMA_LIMITS;
  if (text.length > maxChars) throw new SchemaProblem(`is ${text.length} characters of JSON; a program's schema may have at most ${maxChars}. Pass a smaller schema`);
  const problem = jsonSchemaProblem(schema);
  if (problem !== undefined) throw new SchemaProblem(problem);
  prepareThread();
  return { jsonSchema: schema, ownCheck: false, check: (value, signal) => checkInThread(text, value, signal ?? NEVER) };
}

/** Throws when `schema` nests too deep, or has too many or too long patterns. */
function measure(schema: object): void {
  const { maxDepth, maxPatterns, maxPatternChars } = PROGRAM_SCHEMA_LIMITS;
  const patterns: string[] = [];
  const visit = (part: unknown, depth: number): void => {
    if (typeof part !== "object" || part === null) return;
    if (depth > maxDepth) throw new SchemaProblem(`is nested more than ${maxDepth} levels deep; a program's schema may nest at most ${maxDepth}. Pass a flatter schema`);
    for (const [key, item] of Object.entries(part)) {
      // Counted wherever they are (inside `const` or `enum` too): more than a check compiles, never less.
      if (key === "pattern" && typeof item === "string") patterns.push(item);
      if (key === "patternProperties" && typeof item === "object" && item !== null && !Array.isArray(item)) patterns.push(...Object.keys(item));
      visit(item, depth + 1);
    }
  };
  visit(schema, 1);
  if (patterns.length > maxPatterns) throw new SchemaProblem(`has ${patterns.length} patterns (pattern and patternProperties); a program's schema may have at most ${maxPatterns}. Pass fewer patterns`);
  const longest = patterns.reduce((most, pattern) => Math.max(most, pattern.length), 0);
  if (longest > maxPatternChars) throw new SchemaProblem(`has a pattern of ${longest} characters; a program's patterns may have at most ${maxPatternChars}. Pass a shorter pattern`);
}
