/**
 * A tool's schemas, whatever their kind: a Standard Schema (`~standard`: zod 4, valibot,
 * arktype), an AI SDK schema (`jsonSchema()`, `zodSchema()`, or a function that makes one), or a
 * plain JSON Schema (checked with ajv). Each is read once, at construction, into a checker for
 * inputs and, where the schema can say it, a JSON Schema for the prompt's declarations.
 */
import { Ajv, type Options as AjvOptions, type ValidateFunction } from "ajv";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import { RE2JS } from "re2js";
import { stringify } from "safe-stable-stringify";
import { describeError } from "../history/json-safe.ts";

/** An input checked: the value the tool is given (a Standard Schema may transform it), or the problems found. */
export type SchemaCheck = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problems: string };

/** A schema read once. */
export interface ReadSchema {
  readonly check: (value: unknown) => Promise<SchemaCheck>;
  /** The schema as JSON Schema, when it can say (for declarations and the reuse fingerprint). */
  readonly jsonSchema: object | undefined;
  /** The check is improv's own (ajv, in linear time): it needs no time limit or async context of its own. */
  readonly ownCheck: boolean;
}

/** At most this many problems are named in a failure; their text is bounded too. */
const MAX_PROBLEMS = 5;
const MAX_PROBLEMS_CHARS = 1_000;

const AI_SDK_SCHEMA = Symbol.for("vercel.ai.schema");

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
const validators = new Map<string, AnyAjv>();

/** The validator for the schema's draft: 2020-12, 2019-09, or draft-07 (and earlier) by default. */
function validatorFor(schema: object): AnyAjv {
  const declared = (schema as { $schema?: unknown }).$schema;
  const draft = typeof declared === "string" && declared.includes("2020-12") ? "2020-12" : typeof declared === "string" && declared.includes("2019-09") ? "2019-09" : "07";
  let validator = validators.get(draft);
  if (validator === undefined) {
    validator = draft === "2020-12" ? new Ajv2020(AJV_OPTIONS) : draft === "2019-09" ? new Ajv2019(AJV_OPTIONS) : new Ajv(AJV_OPTIONS);
    validator.removeKeyword("uniqueItems");
    validator.addKeyword({ keyword: "uniqueItems", type: "array", schemaType: "boolean", errors: false, validate: (unique: boolean, data: unknown[]) => !unique || allDistinct(data) });
    validators.set(draft, validator);
  }
  return validator;
}

/**
 * A pattern compiled on RE2. ajv keeps one compiled pattern per `toString()` of what this
 * returns, for every schema its validator compiles: the text must be the pattern's own source
 * and flags, or the first pattern compiled would serve every later one.
 */
function linearRegExp(pattern: string, flags = ""): { test(text: string): boolean; toString(): string } {
  const compiled = RE2JS.compile(pattern, flags.includes("i") ? RE2JS.CASE_INSENSITIVE : 0);
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

/** What is wrong with a schema, said as the end of a sentence that names it ("inputSchema is …"). */
export class SchemaProblem extends Error {
  override readonly name = "SchemaProblem";
}

// Schemas read before, by identity: tools are usually made once and granted to many agents.
const readBefore = new WeakMap<object, ReadSchema>();

/** Reads a schema of any kind `inputSchema` takes; throws a {@link SchemaProblem} saying what is wrong. */
export function readSchema(schema: unknown): ReadSchema {
  if (typeof schema !== "object" || schema === null) return readAnySchema(schema);
  let read = readBefore.get(schema);
  if (read === undefined) {
    read = readAnySchema(schema);
    readBefore.set(schema, read);
  }
  return read;
}

function readAnySchema(schema: unknown): ReadSchema {
  if (typeof schema === "function") {
    let made: unknown;
    try {
      made = (schema as () => unknown)();
    } catch (error) {
      throw new SchemaProblem(`is a function that threw when asked for its schema (${describeError(error)})`);
    }
    if (typeof made === "function") throw new SchemaProblem("is a function that returns a function, not a schema");
    return readSchema(made);
  }
  if (typeof schema !== "object" || schema === null) throw new SchemaProblem("must be a Standard Schema (zod, valibot, arktype…), an AI SDK schema or a JSON Schema object");
  const standard = (schema as { "~standard"?: unknown })["~standard"];
  if (standard !== undefined) return readStandard(standard);
  if ((schema as Record<symbol, unknown>)[AI_SDK_SCHEMA] === true) return readAiSdk(schema as AiSdkSchema);
  return readJsonSchema(schema);
}

interface StandardProps {
  readonly validate: (value: unknown) => StandardResult | PromiseLike<StandardResult>;
  readonly jsonSchema?: { readonly input?: (options: { target: string }) => unknown };
}
type StandardResult = { readonly value: unknown; readonly issues?: undefined } | { readonly issues: readonly { readonly message: string; readonly path?: readonly unknown[] }[] };

function readStandard(standard: unknown): ReadSchema {
  if (typeof standard !== "object" || standard === null || typeof (standard as StandardProps).validate !== "function") throw new SchemaProblem("has a ~standard property without a validate function");
  const props = standard as StandardProps;
  let jsonSchema: object | undefined;
  try {
    const made = props.jsonSchema?.input?.({ target: "draft-07" });
    jsonSchema = typeof made === "object" && made !== null ? made : undefined;
  } catch {
    jsonSchema = undefined;
  }
  return {
    jsonSchema,
    ownCheck: false,
    async check(value) {
      const result: unknown = await props.validate(value);
      // A schema's answer is checked too: one that answers with something else fails, it does not pass.
      if (typeof result !== "object" || result === null) throw new Error("its validate answered with something that is not a result");
      const { issues } = result as { issues?: unknown };
      if (issues === undefined) {
        if (!("value" in result)) throw new Error("its validate answered with neither a value nor issues");
        return { ok: true, value: (result as { value: unknown }).value };
      }
      if (!Array.isArray(issues)) throw new Error("its validate answered with issues that are not a list");
      return { ok: false, problems: describeProblems(issues.map((issue: { message?: unknown; path?: readonly unknown[] }) => `${pathText(Array.isArray(issue?.path) ? issue.path : undefined)}${String(issue?.message ?? "is not valid")}`)) };
    },
  };
}

interface AiSdkSchema {
  readonly jsonSchema: unknown;
  readonly validate?: (value: unknown) => { success: true; value: unknown } | { success: false; error: Error } | PromiseLike<{ success: true; value: unknown } | { success: false; error: Error }>;
}

function readAiSdk(schema: AiSdkSchema): ReadSchema {
  const given = schema.jsonSchema;
  const known = typeof given === "object" && given !== null && typeof (given as { then?: unknown }).then !== "function" ? given : undefined;
  if (typeof schema.validate === "function") {
    const validate = schema.validate.bind(schema);
    return {
      jsonSchema: known,
      ownCheck: false,
      async check(value) {
        const result = await validate(value);
        return result.success ? { ok: true, value: result.value } : { ok: false, problems: describeProblems([describeError(result.error)]) };
      },
    };
  }
  if (known === undefined) throw new SchemaProblem("is an AI SDK schema whose JSON Schema is not ready (a promise) and that has no validate function");
  return readJsonSchema(known);
}

function readJsonSchema(schema: object): ReadSchema {
  let validate: ValidateFunction;
  const validator = validatorFor(schema);
  try {
    validate = validator.compile(schema);
  } catch (error) {
    throw new SchemaProblem(`is not a usable JSON Schema (${describeError(error)})`);
  } finally {
    // The compiled function is all a tool keeps: the validator's cache must not grow with every agent.
    validator.removeSchema(schema);
  }
  return {
    jsonSchema: schema,
    ownCheck: true,
    async check(value) {
      if (validate(value)) return { ok: true, value };
      const problems = (validate.errors ?? []).map((error) => `${error.instancePath === "" ? "" : `${error.instancePath.slice(1).replaceAll("/", ".")}: `}${error.message ?? "is not valid"}`);
      return { ok: false, problems: describeProblems(problems) };
    },
  };
}

function pathText(path: readonly unknown[] | undefined): string {
  if (path === undefined || path.length === 0) return "";
  const keys = path.map((part) => (typeof part === "object" && part !== null && "key" in part ? (part as { key: unknown }).key : part));
  return `${keys.map(String).join(".")}: `;
}

function describeProblems(problems: readonly string[]): string {
  const named = problems.slice(0, MAX_PROBLEMS).join("; ");
  const more = problems.length > MAX_PROBLEMS ? ` (and ${problems.length - MAX_PROBLEMS} more)` : "";
  const text = `${named}${more}`;
  return text.length > MAX_PROBLEMS_CHARS ? `${text.slice(0, MAX_PROBLEMS_CHARS)}…` : text === "" ? "the input does not match" : text;
}
