/**
 * The agent's types, as an application with TypeScript's default settings sees them. Each
 * `@ts-expect-error` line is checked by `npm run typecheck`: it fails if the line compiles.
 */
import { describe, expectTypeOf, test } from "vitest";
import { Agent, ImprovError, Outcome, type AgentProxy, type DynamicMethod, type ErrorType } from "../../src/index.ts";

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

  test("unwrap() gives the value or throws an ImprovError", () => {
    expectTypeOf<Outcome<number>["unwrap"]>().returns.toEqualTypeOf<number>();
    expectTypeOf<ImprovError["errorType"]>().toEqualTypeOf<ErrorType>();
  });
});
