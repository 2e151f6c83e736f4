/**
 * The agent's types, as an application with TypeScript's default settings sees them. Each
 * `@ts-expect-error` line is checked by `npm run typecheck`: it fails if the line compiles.
 */
import { describe, expectTypeOf, test } from "vitest";
import { z } from "zod";
import { Agent, ImprovError, Outcome, type SqliteStore, type AgentOptions, type AgentProxy, type DynamicMethod, type ErrorType, type FailedOutcome, type OkOutcome } from "../../src/index.ts";

// Never called: only type-checked.
async function usage(): Promise<void> {
  const calc = Agent.for<{ value: number; mode: "exact" | "rounded" }>("calculator");
  calc.value = 5;
  calc.mode = "exact";
  // @ts-expect-error a value of the wrong type
  calc.value = "five";
  // @ts-expect-error a value that was not declared
  calc.undeclared = 1;
  const sum = await calc.add(3);
  if (sum.ok) sum.value;
  // @ts-expect-error a forgotten await: a Promise has no `ok`
  calc.add(3).ok;
  // @ts-expect-error a misspelled Outcome field
  sum.errorTyp;
  calc.remember({ mode: "rounded" }).value;
}

// Never called: a misspelled option name does not compile, however the options are written.
async function optionNames(store: SqliteStore): Promise<void> {
  // @ts-expect-error a misspelled option name
  Agent.for("calculator", { maxGenerationAttemps: 3 });
  // @ts-expect-error a misspelled option name beside valid ones
  Agent.for("calculator", { reuse: false, executionTimeoutMS: 100 });
  // @ts-expect-error a misspelled option name with the agent's values declared
  Agent.for<{ value: number }>("calculator", { reuse: false, callTimeoutMS: 100 });
  // @ts-expect-error a misspelled option name on open
  await Agent.open("calculator", { store, idd: "calc-1" });
  const boss = Agent.for("boss", { reuse: false, methods: { plan: { description: "Plans." } } });
  // @ts-expect-error a misspelled option name on delegate
  boss.delegate("helper", { reuse: false, purpos: "Helps." });
  const options = { reuse: false, log: "calls.jsonl" };
  Agent.for("calculator", options);
  // A wrapper of the application's that passes its options on, typed by AgentOptions.
  const make = <O extends AgentOptions>(role: string, given: O) => Agent.for(role, given);
  const open = <O extends AgentOptions>(role: string, given?: O) => Agent.open(role, given);
  make("calculator", { reuse: false });
  await open("calculator", { store });
  await Agent.open("calculator", { store, id: "calc-1" });
}

// Never called: methods declared with a Standard Schema `returns` have typed values.
async function contracts(): Promise<void> {
  const calc = Agent.for("calculator", {
    purpose: "A calculator.",
    methods: { add: { description: "Adds.", returns: z.number() }, report: { returns: z.object({ count: z.number() }) }, raw: { returns: { type: "object" } } },
  });
  const sum = await calc.add(3);
  if (sum.ok) {
    sum.value.toFixed(2);
    // @ts-expect-error the value of add is a number
    sum.value.toUpperCase();
  } else {
    const type: ErrorType = sum.errorType;
    sum.errorMessage.length;
    void type;
    // @ts-expect-error a failed outcome has no value
    sum.value.toFixed(2);
  }
  const report = await calc.report();
  if (report.ok) report.value.count.toFixed(0);
  const raw = await calc.raw();
  // @ts-expect-error a JSON Schema says nothing to the compiler: the value is unknown
  if (raw.ok) raw.value.count;
  const undeclared = await calc.anything();
  if (undeclared.ok) expectTypeOf(undeclared.value).toBeUnknown();
  const called = await Agent.call<number>(calc, "add", [1], { callTimeoutMs: 1_000 });
  if (called.ok) called.value.toFixed(1);
}

describe("agent types", () => {
  test("a dynamic method returns Promise<Outcome>", () => {
    expectTypeOf<AgentProxy["add"]>().toEqualTypeOf<DynamicMethod>();
    expectTypeOf<ReturnType<DynamicMethod>>().toEqualTypeOf<Promise<Outcome>>();
    expectTypeOf<Outcome["errorType"]>().toEqualTypeOf<ErrorType | undefined>();
    expectTypeOf(usage).returns.resolves.toBeVoid();
  });

  test("declared values read back with their types; reserved members keep theirs", () => {
    type Calculator = AgentProxy<{ value: number }>;
    expectTypeOf<Calculator["value"]>().toMatchTypeOf<number>();
    expectTypeOf<Calculator["runtimeContext"]>().toEqualTypeOf<Record<string, unknown>>();
    expectTypeOf<Calculator["then"]>().toEqualTypeOf<undefined>();
    expectTypeOf<ReturnType<Calculator["remember"]>>().toEqualTypeOf<Calculator>();
  });

  test("Outcome is a union discriminated by ok: narrowing gives the value, or the error's type and message", () => {
    expectTypeOf<Outcome<number>>().toEqualTypeOf<OkOutcome<number> | FailedOutcome<number>>();
    expectTypeOf<Extract<Outcome<number>, { ok: true }>["value"]>().toEqualTypeOf<number>();
    expectTypeOf<Extract<Outcome<number>, { ok: false }>["errorType"]>().toEqualTypeOf<ErrorType>();
    expectTypeOf(contracts).returns.resolves.toBeVoid();
  });

  test("unwrap() gives the value or throws an ImprovError", () => {
    expectTypeOf<Outcome<number>["unwrap"]>().returns.toEqualTypeOf<number>();
    expectTypeOf<ImprovError["errorType"]>().toEqualTypeOf<ErrorType>();
  });
});
