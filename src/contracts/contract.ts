/**
 * Contracts: what an agent is for (`purpose`) and what each of its methods does and
 * returns (`methods`), read once at construction. A method's `returns` is a Standard Schema or
 * a JSON Schema (checked with ajv); its output type is what the caller's value is typed as, and
 * its declaration is what the model is shown.
 */
import { createHash } from "node:crypto";
import { stringify } from "safe-stable-stringify";
import { RESERVED_NAMES } from "../shared/index.ts";
import { readSchema, type ReadSchema, SchemaProblem, schemaToType } from "../tools/index.ts";
import { readProgramSchema } from "./program-schema.ts";

/** A Standard Schema (zod 4, valibot, arktype…), typed by what it outputs. */
export interface StandardSchemaLike<Output = unknown> {
  readonly "~standard": { readonly validate: (value: unknown) => unknown; readonly types?: { readonly output: Output } | undefined };
}

/** What one method is for: a description for the model, and the schema its value must match. */
export interface MethodContract {
  /** What the method does, shown to the model. */
  readonly description?: string | undefined;
  /** The value's schema: a Standard Schema (its output types the call's value) or a JSON Schema object. */
  readonly returns?: StandardSchemaLike | object | undefined;
}

/** A method's contract as calls use it. */
export interface ReadMethodContract {
  readonly description: string | undefined;
  readonly returns: ReadSchema | undefined;
  /** `returns` is a JSON Schema: the value must be JSON data before it is checked. */
  readonly returnsJson: boolean;
  /** The return type as a TypeScript declaration for the prompt (`unknown` where the schema cannot say). */
  readonly returnsType: string | undefined;
}

/** An agent's contract: its purpose and its declared methods. */
export interface Contract {
  readonly purpose: string | undefined;
  readonly methods: ReadonlyMap<string, ReadMethodContract>;
  /** A hash of the purpose, the descriptions and the return schemas: part of a kept program's key. Empty without a contract. */
  readonly fingerprint: string;
}

export const NO_CONTRACT: Contract = Object.freeze({ purpose: undefined, methods: new Map(), fingerprint: "" });

export const MAX_PURPOSE_CHARS = 2_000;
export const MAX_DESCRIPTION_CHARS = 2_000;
const MAX_METHODS = 200;
const MAX_RETURNS_TYPE_CHARS = 2_000;
const METHOD_NAME = /^[A-Za-z_$][\w$]{0,199}$/;

// Method contracts a program passed to `delegate`: their schemas are hostile input.
const fromPrograms = new WeakSet<object>();

/** Marks `methods` as a program's (a `delegate` option from generated code): read with the limits on programs' schemas. */
export function markProgramMethods(methods: unknown): void {
  if (typeof methods === "object" && methods !== null) fromPrograms.add(methods);
}

/** Reads `purpose` and `methods` (options of `Agent.for`, or of `delegate` from a program); throws a `TypeError` saying what is wrong. */
export function readContract(purpose: unknown, methods: unknown, given = "Option"): Contract {
  if (purpose === undefined && methods === undefined) return NO_CONTRACT;
  const fromProgram = typeof methods === "object" && methods !== null && fromPrograms.has(methods);
  const where = fromProgram ? "delegate option" : given;
  if (purpose !== undefined && (typeof purpose !== "string" || purpose.trim() === "" || purpose.length > MAX_PURPOSE_CHARS)) {
    throw new TypeError(`${where} "purpose" must be a non-empty string of at most ${MAX_PURPOSE_CHARS} characters.`);
  }
  const read = new Map<string, ReadMethodContract>();
  if (methods !== undefined) {
    if (typeof methods !== "object" || methods === null || Array.isArray(methods)) throw new TypeError(`${where} "methods" must be an object of method contracts by name, such as { add: { description: "…", returns: z.number() } }.`);
    const entries = Object.entries(methods);
    if (entries.length > MAX_METHODS) throw new TypeError(`${where} "methods" declares ${entries.length} methods; at most ${MAX_METHODS} are allowed.`);
    for (const [name, contract] of entries) read.set(name, readMethod(name, contract, where, fromProgram));
  }
  const fingerprint = createHash("sha256")
    .update(stringify([purpose ?? null, [...read].map(([name, method]) => [name, method.description ?? null, method.returns?.jsonSchema ?? (method.returns === undefined ? null : "schema"), method.returnsType ?? null])]) ?? "")
    .digest("hex")
    .slice(0, 12);
  return Object.freeze({ purpose: purpose as string | undefined, methods: read, fingerprint });
}

/** Whether a method's contract is a bare schema (zod, valibot, arktype, an AI SDK or plain JSON Schema) given where `{ returns }` belongs. */
function looksLikeSchema(value: object): boolean {
  const keys = Object.keys(value);
  if ("~standard" in value || "_def" in value || "_zod" in value) return true;
  if (keys.includes("description") || keys.includes("returns")) return false;
  return keys.includes("def") || keys.includes("jsonSchema") || keys.includes("type") || keys.includes("properties") || keys.includes("$schema");
}

function readMethod(name: string, contract: unknown, where: string, fromProgram: boolean): ReadMethodContract {
  if (!METHOD_NAME.test(name) || RESERVED_NAMES.has(name)) throw new TypeError(`${where} "methods": "${name.slice(0, 100)}" is not a method name agents can have (an identifier, not a reserved name).`);
  if (typeof contract !== "object" || contract === null || Array.isArray(contract)) throw new TypeError(`${where} "methods.${name}" must be an object: { description?, returns? }.`);
  if (looksLikeSchema(contract)) throw new TypeError(`${where} "methods.${name}" is a schema, not a method's contract: write { returns: <the schema> } (and a description if you like), as in methods: { ${name}: { returns: schema } }.`);
  const { description, returns, ...rest } = contract as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new TypeError(`${where} "methods.${name}" has "${unknown[0]}", which is not description or returns.`);
  if (description !== undefined && (typeof description !== "string" || description.length > MAX_DESCRIPTION_CHARS)) {
    throw new TypeError(`${where} "methods.${name}.description" must be a string of at most ${MAX_DESCRIPTION_CHARS} characters.`);
  }
  let schema: ReadSchema | undefined;
  if (returns !== undefined) {
    try {
      schema = fromProgram ? readProgramSchema(returns) : readSchema(returns);
    } catch (error) {
      if (error instanceof SchemaProblem) throw new TypeError(`${where} "methods.${name}.returns" ${error.message}.`);
      throw error;
    }
  }
  const returnsType = schema === undefined ? undefined : schema.jsonSchema === undefined ? "unknown" : schemaToType(schema.jsonSchema, { maxChars: MAX_RETURNS_TYPE_CHARS });
  // Programs pass JSON Schemas only; the application's are JSON Schemas when improv checks them itself.
  const returnsJson = schema !== undefined && (fromProgram || schema.ownCheck);
  return Object.freeze({ description, returns: schema, returnsJson, returnsType });
}
