/** Baselines measured in the same run as improv's own figures. */
import { fork } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import vm from "node:vm";
import ivm from "isolated-vm";
import { measure, type Summary } from "./stats.ts";

const PROGRAM = "return args[0] + args[1]";

/** (a) isolated-vm's evalClosure on a persistent context: the async call, and the sync one for reference. */
export async function bareIsolatedVm(count: number, warmup: number): Promise<{ evalClosure: Summary; evalClosureSync: Summary }> {
  const isolate = new ivm.Isolate({ memoryLimit: 64 });
  const context = await isolate.createContext();
  const body = `const args = [$0, $1]; ${PROGRAM}`;
  const evalClosure = await measure(() => context.evalClosure(body, [1, 2], { result: { copy: true } }), count, warmup);
  const evalClosureSync = await measure(() => context.evalClosureSync(body, [1, 2], { result: { copy: true } }), count, warmup);
  isolate.dispose();
  return { evalClosure, evalClosureSync };
}

/** (b) node:vm running the same program, compiled once, as an async function in its own context. */
export async function nodeVm(count: number, warmup: number): Promise<Summary> {
  const context = vm.createContext({});
  const program = vm.runInContext(`(async function (context, args, kwargs) { ${PROGRAM} })`, context) as (...values: unknown[]) => Promise<unknown>;
  return measure(() => program({}, [1, 2], {}), count, warmup);
}

/** (c) a small message to a child process and back, over the sandbox's transport (IPC, advanced serialisation). */
export async function childRoundTrip(count: number, warmup: number): Promise<Summary> {
  const child = fork(fileURLToPath(new URL("./echo-child.ts", import.meta.url)), [], { serialization: "advanced", stdio: ["ignore", "ignore", "inherit", "ipc"] });
  await once(child, "message");
  const message = { type: "run", runId: 1, payload: { code: PROGRAM, args: [1, 2], kwargs: {} } };
  const summary = await measure(async () => {
    const reply = once(child, "message");
    child.send(message);
    await reply;
  }, count, warmup);
  child.kill();
  return summary;
}
