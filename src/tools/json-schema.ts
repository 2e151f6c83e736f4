/**
 * Plain JSON Schemas, compiled with ajv into checks that take time in proportion to the schema
 * and the value: the host compiles the application's schemas with one compiler, and the thread
 * that checks programs' schemas keeps compilers of its own (`contracts/schema-worker.ts`).
 */
import { Ajv, type Options as AjvOptions } from "ajv";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import { RE2JS } from "re2js";
import { stringify } from "safe-stable-stringify";
import { describeError } from "../shared/index.ts";
import { ecmaPatternForRe2 } from "./ecma-pattern.ts";

/** A value checked: the value the checker gives back (a Standard Schema may transform it), or the problems found. */
export type SchemaCheck = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problems: string };

/** What is wrong with a schema, said as the end of a sentence that names it ("inputSchema is …"). */
export class SchemaProblem extends Error {
  override readonly name = "SchemaProblem";
}

/** At most this many problems are named in a failure; their text is bounded too. */
const MAX_PROBLEMS = 5;
const MAX_PROBLEMS_CHARS = 1_000;

/**
 * The program's input is hostile, and a schema may come from a server: checking one against the
 * other must take time in proportion to their sizes. `pattern`s run on RE2 (linear time; a
 * pattern RE2 cannot run, such as a lookahead, makes the schema unusable), `uniqueItems` is
 * checked by hashing, not pair by pair, formats are not checked, and remote `$ref`s are never
 * fetched (ajv has no loader here, so compiling one fails). Each schema leaves the validator
 * once compiled, so none is kept by its `$id`: two tools (or agents) may share one.
 */
const AJV_OPTIONS: AjvOptions = {
  allErrors: true,
  strict: false,
  validateSchema: true,
  validateFormats: false,
  logger: false,
  code: { regExp: linearRegExp as never },
};

type AnyAjv = Ajv | Ajv2019 | Ajv2020;

/**
 * A pattern compiled on RE2, written for it with the meaning JavaScript gives it (see
 * `ecma-pattern.ts`). ajv keeps one compiled pattern per `toString()` of what this
 * returns, for every schema its validator compiles: the text must be the pattern's own source
 * and flags, or the first pattern compiled would serve every later one.
 */
function linearRegExp(pattern: string, flags = ""): { test(text: string): boolean; toString(): string } {
  const compiled = RE2JS.compile(ecmaPatternForRe2(pattern), flags.includes("i") ? RE2JS.CASE_INSENSITIVE : 0);
  return { test: (text: string) => compiled.test(text), toString: () => `/${pattern}/${flags}` };
}

/** Whether no two items are equal as JSON values (keys in any order), in one pass. */
function allDistinct(items: readonly unknown[]): boolean {
  const seen = new Set<string>();
  for (const item of items) {
    const key = stringify(item) ?? "undefined";
    if (seen.has(key)) return false;
    seen.add(key);
  }
  return true;
}

/** ajv validators, one per draft, made when first needed; each keeps the patterns it compiled. */
export class JsonSchemaCompiler {
  readonly #validators = new Map<Draft, AnyAjv>();

  /** A check of values against `schema`; throws a {@link SchemaProblem} saying why the schema cannot check. */
  compile(schema: object): (value: unknown) => SchemaCheck {
    const draft = draftOf(schema);
    const validator = this.#validator(draft);
    let validate: ReturnType<AnyAjv["compile"]>;
    try {
      validate = validator.compile(schema);
    } catch (error) {
      // A schema that fails may have left part of itself registered, or (its $id taken) made
      // removing it remove another: this validator is not used again.
      this.#validators.delete(draft);
      throw new SchemaProblem(`is not a usable JSON Schema (${describeError(error)})`);
    }
    // The compiled function is all a caller keeps: the validator's cache must not grow with every agent.
    validator.removeSchema(schema);
    // An $async schema's check answers with a promise, which would pass every value.
    if ((validate as { $async?: unknown }).$async === true) throw new SchemaProblem("is not a usable JSON Schema ($async schemas cannot be checked here; remove $async)");
    return (value) => {
      if (validate(value) === true) return { ok: true, value };
      const problems = (validate.errors ?? []).map((error) => `${error.instancePath === "" ? "" : `${error.instancePath.slice(1).replaceAll("/", ".")}: `}${error.message ?? "is not valid"}`);
      return { ok: false, problems: describeProblems(problems) };
    };
  }

  /**
   * Why `schema` is not a JSON Schema of its draft, checked against the draft's meta-schema
   * (nothing of `schema` is compiled, so its patterns are not); undefined when it is one.
   */
  metaProblem(schema: object): string | undefined {
    try {
      this.#validator(draftOf(schema)).validateSchema(schema, true);
      return undefined;
    } catch (error) {
      return `is not a usable JSON Schema (${describeError(error)})`;
    }
  }

  #validator(draft: Draft): AnyAjv {
    let validator = this.#validators.get(draft);
    if (validator === undefined) {
      validator = draft === "2020-12" ? new Ajv2020(AJV_OPTIONS) : draft === "2019-09" ? new Ajv2019(AJV_OPTIONS) : new Ajv(AJV_OPTIONS);
      validator.removeKeyword("uniqueItems");
      validator.addKeyword({ keyword: "uniqueItems", type: "array", schemaType: "boolean", errors: false, validate: (unique: boolean, data: unknown[]) => !unique || allDistinct(data) });
      this.#validators.set(draft, validator);
    }
    return validator;
  }
}

type Draft = "07" | "2019-09" | "2020-12";

/** The schema's draft: 2020-12, 2019-09, or draft-07 (and earlier) by default. */
function draftOf(schema: object): Draft {
  const declared = (schema as { $schema?: unknown }).$schema;
  return typeof declared === "string" && declared.includes("2020-12") ? "2020-12" : typeof declared === "string" && declared.includes("2019-09") ? "2019-09" : "07";
}

/** Problems as one bounded line: the first few, and how many more. */
export function describeProblems(problems: readonly string[]): string {
  const named = problems.slice(0, MAX_PROBLEMS).join("; ");
  const more = problems.length > MAX_PROBLEMS ? ` (and ${problems.length - MAX_PROBLEMS} more)` : "";
  const text = `${named}${more}`;
  return text.length > MAX_PROBLEMS_CHARS ? `${text.slice(0, MAX_PROBLEMS_CHARS)}…` : text === "" ? "the input does not match" : text;
}
