/** Figure 8: what program reuse saves with a slow provider, and what a reused call costs against the floor of a sandboxed call. */
import { Agent, type Provider } from "../src/index.ts";
import { sandboxRoundTrip } from "./baselines.ts";
import { measureInterleaved, type Summary } from "./stats.ts";

/** A provider that answers after `delayMs`, like a model would, counting its requests. */
function slowProvider(delayMs: number): Provider & { requests: number } {
  const provider = {
    requests: 0,
    async generate() {
      provider.requests += 1;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      return { code: "return args[0] + args[1]", model: "slow" };
    },
  };
  return provider;
}

export interface ReuseFigures {
  readonly slowProvider: { readonly calls: number; readonly delayMs: number; readonly withReuse: { seconds: number; requests: number }; readonly withoutReuse: { seconds: number; requests: number } };
  /** A reused call and the sandbox round trip, in alternating rounds. */
  readonly reusedCall: Summary;
  readonly sandboxRoundTrip: Summary;
  /** A call that asks the provider (reuse off; the provider answers at once) and the sandbox round trip, in alternating rounds of their own. */
  readonly generatedCall: Summary;
  readonly generatedFloor: Summary;
}

async function timeCalls(calls: number, delayMs: number, reuse: boolean): Promise<{ seconds: number; requests: number }> {
  const provider = slowProvider(delayMs);
  const agent = Agent.for("bench-reuse", { provider, reuse, log: false });
  const started = performance.now();
  for (let call = 0; call < calls; call += 1) await agent.add(call, 1);
  return { seconds: (performance.now() - started) / 1000, requests: provider.requests };
}

export async function reuseFigures(options: { calls: number; delayMs: number; count: number; warmup: number }): Promise<ReuseFigures> {
  const withReuse = await timeCalls(options.calls, options.delayMs, true);
  const withoutReuse = await timeCalls(options.calls, options.delayMs, false);
  const agent = Agent.for("bench-reused", { provider: slowProvider(0), log: false });
  await agent.add(1, 2);
  const asking = Agent.for("bench-generated", { provider: { generate: async () => ({ code: "return args[0] + args[1]", model: "at-once" }) }, log: false, reuse: false });
  const floor = await sandboxRoundTrip();
  try {
    const reused = await measureInterleaved({ reusedCall: { task: () => agent.add(1, 2) }, sandboxRoundTrip: floor }, options.count, options.warmup);
    const generated = await measureInterleaved({ generatedCall: { task: () => asking.add(1, 2) }, generatedFloor: floor }, options.count, options.warmup);
    return { slowProvider: { calls: options.calls, delayMs: options.delayMs, withReuse, withoutReuse }, ...reused, ...generated };
  } finally {
    floor.close?.();
  }
}
