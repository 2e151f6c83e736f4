/**
 * Checked by `npm run typecheck` with `noUncheckedIndexedAccess` on (tsconfig.json): there,
 * names read through an index signature are "possibly undefined", and methods named in the
 * second type parameter are not. Not a test file: it only has to compile.
 */
import { Agent } from "../../../src/index.ts";

export async function strictUsage(): Promise<number | undefined> {
  const calc = Agent.for<{ value: number }, "add" | "multiply">("calculator");
  calc.value = 5;
  const sum = await calc.add(3);
  await calc.multiply(2);
  // @ts-expect-error an undeclared method is possibly undefined under noUncheckedIndexedAccess
  await calc.divide(2);
  return sum.ok ? (sum.value as number) : undefined;
}

/** Methods declared in `methods` are present too, and typed by their `returns`. */
export async function strictContracts(): Promise<string | undefined> {
  const calc = Agent.for("calculator", { methods: { label: { returns: { "~standard": { version: 1, vendor: "x", validate: (value: unknown) => ({ value }), types: { input: "", output: "" } } } } } });
  const label = await calc.label();
  // @ts-expect-error an undeclared method is possibly undefined under noUncheckedIndexedAccess
  await calc.other();
  return label.ok ? label.value.toUpperCase() : undefined;
}

/** zod 3 (3.24 and later implement Standard Schema; zod 4 ships it as `zod/v3`) types a `returns` as zod 4 does. */
export async function zod3Contracts(): Promise<number | undefined> {
  const { z } = await import("zod/v3");
  const calc = Agent.for("calculator", { methods: { total: { returns: z.number() }, tags: { returns: z.array(z.string()) } } });
  const total = await calc.total();
  const tags = await calc.tags();
  const first: string | undefined = tags.ok ? tags.value[0] : undefined;
  void first;
  return total.ok ? total.value : undefined;
}
