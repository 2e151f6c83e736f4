/**
 * A tool's schemas, whatever their kind: a Standard Schema (`~standard`: zod 4, valibot,
 * arktype), an AI SDK schema (`jsonSchema()`, `zodSchema()`, or a function that makes one), or a
 * plain JSON Schema (checked with ajv). Each is read once, at construction, into a checker for
 * inputs and, where the schema can say it, a JSON Schema for the prompt's declarations.
 */
import { describeError } from "../shared/index.ts";
import { describeProblems, JsonSchemaCompiler, SchemaProblem, type SchemaCheck } from "./json-schema.ts";

export { SchemaProblem, type SchemaCheck } from "./json-schema.ts";

/** A schema read once. */
export interface ReadSchema {
  /** Checks a value; `signal` aborts when the check's time is up or its call ends (a check that runs elsewhere stops then). */
  readonly check: (value: unknown, signal?: AbortSignal) => Promise<SchemaCheck>;
  /** The schema as JSON Schema, when it can say (for declarations and the reuse fingerprint). */
  readonly jsonSchema: object | undefined;
  /** The check is improv's own (ajv, in linear time, on the host): it needs no time limit or async context of its own. */
  readonly ownCheck: boolean;
}

const AI_SDK_SCHEMA = Symbol.for("vercel.ai.schema");

// The application's JSON Schemas (and servers'), compiled on the host.
const compiler = new JsonSchemaCompiler();

/** Why `schema` is not a JSON Schema of its draft (its meta-schema says; nothing of it is compiled), or undefined. */
export function jsonSchemaProblem(schema: object): string | undefined {
  return compiler.metaProblem(schema);
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
  const check = compiler.compile(schema);
  return { jsonSchema: schema, ownCheck: true, check: async (value) => check(value) };
}

function pathText(path: readonly unknown[] | undefined): string {
  if (path === undefined || path.length === 0) return "";
  const keys = path.map((part) => (typeof part === "object" && part !== null && "key" in part ? (part as { key: unknown }).key : part));
  return `${keys.map(String).join(".")}: `;
}
