/** Figure 12: what one tool call adds to a call, and whether tool calls made at once overlap. */
import { Agent, ScriptedProvider, type Tool } from "../src/index.ts";
import { requestFloors } from "./baselines.ts";
import { expectOk, measureInterleaved, type Summary } from "./stats.ts";

/** How long the slow tool waits before answering. @unit ms */
export const SLOW_TOOL_MS = 50;
/** How many slow tool calls the overlapping program makes at once (the cap in flight is 16). */
export const OVERLAPPED_CALLS = 10;

const PROGRAMS = {
  withTool: "await tools.ping({}); return args[0] + args[1]",
  withoutTool: "return args[0] + args[1]",
  oneSlow: "await tools.slow({})",
  manySlow: `await Promise.all(Array.from({ length: ${OVERLAPPED_CALLS} }, () => tools.slow({})))`,
};

export interface ToolFigures {
  /** A call whose program calls a trivial tool once and the same call without it, in alternating rounds. */
  readonly toolCall: { readonly withTool: Summary; readonly withoutTool: Summary; readonly addedP50: number };
  /**
   * The floors, in the same alternating rounds: (d) a bare sandbox round trip, and (e) the same
   * with one request to the host awaited by the program. `requestFloorP50` = (e) − (d), what any
   * request from a program costs in this design before improv's own work; `beyondFloorP50` is
   * what a tool call adds beyond it. @unit µs
   */
  readonly floors: { readonly sandboxRoundTrip: Summary; readonly bridgeRoundTrip: Summary; readonly requestFloorP50: number; readonly beyondFloorP50: number };
  /** One call of a tool that waits `slowToolMs`, and `overlappedCalls` of them under `Promise.all`, in alternating rounds. */
  readonly overlap: { readonly slowToolMs: number; readonly overlappedCalls: number; readonly one: Summary; readonly overlapped: Summary; readonly ratio: number };
  /** Requests the provider received: one per method when every timed call ran a kept program. */
  readonly providerRequests: number;
}

function readOnlyTool(execute: () => unknown): Tool {
  return { description: "Answers with nothing.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute };
}

const waitSlowTool = () => new Promise<null>((resolve) => setTimeout(() => resolve(null), SLOW_TOOL_MS));

export async function toolFigures(options: { count: number; warmup: number; slowCount: number; slowWarmup: number }): Promise<ToolFigures> {
  const provider = new ScriptedProvider({ programs: PROGRAMS });
  // Reuse on: after the warm-up every call runs its kept program, with no prompt rendered and
  // no provider request, so the two calls differ by the tool call alone (sandbox + tool). With
  // reuse off both would also render prompts and ask the provider: more work around the
  // difference, and more noise in it.
  const agent = Agent.for("bench-tools", { provider, log: false, tools: { ping: readOnlyTool(() => null), slow: readOnlyTool(waitSlowTool) } });
  const floors = await requestFloors();
  let calls;
  try {
    calls = await measureInterleaved(
      { withTool: { task: () => expectOk(agent.withTool(1, 2)) }, withoutTool: { task: () => expectOk(agent.withoutTool(1, 2)) }, ...floors.subjects },
      options.count,
      options.warmup,
    );
  } finally {
    floors.close();
  }
  const addedP50 = calls.withTool.p50 - calls.withoutTool.p50;
  const requestFloorP50 = calls.bridgeRoundTrip.p50 - calls.sandboxRoundTrip.p50;
  // No arguments: a program that reads none of its call's arguments is not kept.
  const slow = await measureInterleaved({ one: { task: () => expectOk(agent.oneSlow()) }, overlapped: { task: () => expectOk(agent.manySlow()) } }, options.slowCount, options.slowWarmup);
  return {
    toolCall: { withTool: calls.withTool, withoutTool: calls.withoutTool, addedP50 },
    floors: { sandboxRoundTrip: calls.sandboxRoundTrip, bridgeRoundTrip: calls.bridgeRoundTrip, requestFloorP50, beyondFloorP50: addedP50 - requestFloorP50 },
    overlap: { slowToolMs: SLOW_TOOL_MS, overlappedCalls: OVERLAPPED_CALLS, ...slow, ratio: slow.overlapped.p50 / slow.one.p50 },
    providerRequests: provider.calls.length,
  };
}
