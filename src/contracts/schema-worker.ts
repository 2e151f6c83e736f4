/**
 * A schema thread (started by `schema-threads.ts`): compiles the JSON Schemas programs pass and
 * checks values against them, off the host's event loop. The host ends the thread when a check
 * passes its time, so nothing here keeps time. Compiled schemas are kept by their full text, a
 * few at a time; the compiler is replaced after many schemas.
 */
import { parentPort } from "node:worker_threads";
import { describeError } from "../shared/index.ts";
import { JsonSchemaCompiler, type SchemaCheck, SchemaProblem } from "../tools/index.ts";

/** A check to make: a schema as JSON text, and a value that is JSON data. */
export interface SchemaJob {
  readonly schema: string;
  readonly value: unknown;
}

/** How a check came out; `unusable` when the schema could not check at all (said as the end of "… could not check the value: "). */
export type SchemaJobAnswer = { readonly kind: "match" } | { readonly kind: "mismatch"; readonly problems: string } | { readonly kind: "unusable"; readonly problem: string };

const KEPT_SCHEMAS = 64;
const COMPILES_PER_COMPILER = 256;

let compiler = new JsonSchemaCompiler();
let compiles = 0;
const kept = new Map<string, (value: unknown) => SchemaCheck>();

parentPort?.on("message", (job: SchemaJob) => parentPort?.postMessage(answer(job)));
// Ready before the first schema arrives: the default draft's validator and its meta-schema.
compiler.compile({});

function answer(job: SchemaJob): SchemaJobAnswer {
  let check = kept.get(job.schema);
  if (check === undefined) {
    try {
      check = compile(job.schema);
    } catch (error) {
      return { kind: "unusable", problem: error instanceof SchemaProblem ? `it ${error.message}` : `it could not be compiled (${describeError(error)})` };
    }
  }
  // Kept in order of use: the least recently used goes first.
  kept.delete(job.schema);
  kept.set(job.schema, check);
  if (kept.size > KEPT_SCHEMAS) kept.delete(kept.keys().next().value as string);
  try {
    const checked = check(job.value);
    return checked.ok ? { kind: "match" } : { kind: "mismatch", problems: checked.problems };
  } catch (error) {
    return { kind: "unusable", problem: `its check failed (${describeError(error)})` };
  }
}

function compile(text: string): (value: unknown) => SchemaCheck {
  // ajv keeps every pattern it compiled: a compiler serves so many schemas, then a new one.
  if (compiles >= COMPILES_PER_COMPILER) {
    compiler = new JsonSchemaCompiler();
    compiles = 0;
  }
  compiles += 1;
  return compiler.compile(JSON.parse(text) as object);
}
