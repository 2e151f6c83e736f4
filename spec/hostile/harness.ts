import { afterAll, beforeAll, expect } from "vitest";
import { Agent, ERROR_TYPES, Outcome, ScriptedProvider, type AgentOptions, type ErrorType } from "../../src/index.ts";

/** The limit every hostile program runs under; outcomes must settle within twice this. */
export const HOSTILE_TIMEOUT_MS = 1_000;

/** One hostile program and what its outcome may be. */
export interface HostileCase {
  readonly name: string;
  readonly program: string;
  /** Outcome types that count as handled; `ok` when the program may finish normally. */
  readonly expect: readonly (ErrorType | "ok")[];
  /** Further checks on the outcome. */
  readonly check?: (outcome: Outcome) => void;
  /** The program's time limit, when it needs more than {@link HOSTILE_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
  /** Further agent options (debug logging, say). */
  readonly options?: AgentOptions;
}

/** Programs the delegated agents run, for bridge cases. */
const HELPER_PROGRAMS: Record<string, string> = {
  "echo.back": "return args",
  "echo.ping": "return 'pong'",
  "echo.fail": "throw new Error('child failed')",
  "echo.slow": "await new Promise(() => {})",
};

const hostEvents: string[] = [];
const onUnhandled = (reason: unknown) => hostEvents.push(`unhandledRejection: ${String(reason)}`);
const onUncaught = (error: unknown) => hostEvents.push(`uncaughtException: ${String(error)}`);
let globalsBefore: string[] = [];
let prototypeBefore: string[] = [];

/** Call once per hostile test file: watches the host process for anything a program causes. */
export function watchHost(): void {
  beforeAll(() => {
    process.on("unhandledRejection", onUnhandled);
    process.on("uncaughtException", onUncaught);
    globalsBefore = Reflect.ownKeys(globalThis).map(String).sort();
    prototypeBefore = Reflect.ownKeys(Object.prototype).map(String).sort();
  });
  afterAll(() => {
    process.off("unhandledRejection", onUnhandled);
    process.off("uncaughtException", onUncaught);
  });
}

/**
 * Runs one hostile program on an agent that already has history and context, and asserts
 * everything the hostile suite promises.
 */
export async function runHostile(testCase: HostileCase): Promise<void> {
  const agent = Agent.for<{ kept: string }>("target", {
    provider: new ScriptedProvider({
      programs: {
        ...HELPER_PROGRAMS,
        "target.seed": "context.counter = (context.counter ?? 0) + 1; return context.counter",
        "target.attack": testCase.program,
        "target.check": "return { counter: context.counter, kept: context.kept, seen: context.conversation_history.map((r) => r.method_name) }",
      },
    }),
    executionTimeoutMs: testCase.timeoutMs ?? HOSTILE_TIMEOUT_MS,
    memoryLimitMb: 32,
    ...testCase.options,
  });
  agent.kept = "intact";
  await agent.seed();
  await agent.seed();
  const historyBefore = JSON.stringify(Agent.history(agent));
  const contextBefore = structuredClone(agent.runtimeContext);

  const started = performance.now();
  const outcome = await agent.attack();
  const elapsed = performance.now() - started;

  // A typed outcome, of an expected kind, within twice the configured limit.
  expect(outcome).toBeInstanceOf(Outcome);
  expect(testCase.expect, `${testCase.name}: ${outcome.errorType}: ${outcome.errorMessage}`).toContain(outcome.errorType ?? "ok");
  if (!outcome.ok) expect(ERROR_TYPES).toContain(outcome.errorType);
  expect(elapsed).toBeLessThan((testCase.timeoutMs ?? HOSTILE_TIMEOUT_MS) * 2);
  testCase.check?.(outcome);

  // Exactly one new record; the prior ones unchanged.
  const history = Agent.history(agent);
  expect(history).toHaveLength(3);
  expect(JSON.stringify(history.slice(0, 2))).toBe(historyBefore);
  expect(history[2]?.call_id).toBe(outcome.callId);

  // A failed call leaves the context as it was.
  if (!outcome.ok) expect(agent.runtimeContext).toEqual(contextBefore);

  // The next call is served normally, with context and history intact.
  const next = await agent.check();
  expect(next.value).toEqual({
    counter: outcome.ok ? (agent.runtimeContext.counter as number) : 2,
    kept: "intact",
    seen: ["seed", "seed", "attack"],
  });

  // The host process is unaffected.
  expect(hostEvents).toEqual([]);
  expect(Reflect.ownKeys(globalThis).map(String).sort()).toEqual(globalsBefore);
  expect(Reflect.ownKeys(Object.prototype).map(String).sort()).toEqual(prototypeBefore);
  expect((Object.prototype as Record<string, unknown>).polluted).toBeUndefined();
}
