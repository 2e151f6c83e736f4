import type { AgentOptions, AgentProxy, Outcome } from "../src/index.ts";
import type { ScriptedProgram } from "../src/index.ts";

/** A way for a call to end, with the programs and options that lead there. */
export interface CallPath {
  readonly expected: string;
  readonly programs: Record<string, ScriptedProgram>;
  readonly options: AgentOptions;
  readonly call: (agent: AgentProxy) => Promise<Outcome>;
}

/** Every path a dynamic call can end on, except cancellation (which needs a signal). */
export const CALL_PATHS: readonly CallPath[] = [
  { expected: "ok", programs: { m: "return { sum: args[0] + 1, when: new Date(0) }" }, options: {}, call: (a) => a.m(1) },
  { expected: "execution", programs: { m: "throw new Error('x')" }, options: {}, call: (a) => a.m() },
  { expected: "invalid_code", programs: { m: [null, "", "(("] }, options: { maxGenerationAttempts: 3 }, call: (a) => a.m() },
  { expected: "provider", programs: { m: { error: "down" } }, options: {}, call: (a) => a.m() },
  { expected: "timeout", programs: { m: "while (true) {}" }, options: { executionTimeoutMs: 200 }, call: (a) => a.m() },
  { expected: "memory_limit", programs: { m: "const a = []; while (true) a.push(new Array(1e6).fill(1));" }, options: { memoryLimitMb: 16 }, call: (a) => a.m() },
  { expected: "budget_exceeded", programs: { m: "delegate('child')" }, options: { maxDelegationDepth: 0 }, call: (a) => a.m() },
  { expected: "invalid_input", programs: { m: "return 1" }, options: {}, call: (a) => a.m(Symbol("no"), () => 1) },
];
