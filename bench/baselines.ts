/** Baselines measured in the same run as improv's own figures, each a Subject to time. */
import { fork } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import vm from "node:vm";
import ivm from "isolated-vm";
import type { Subject } from "./stats.ts";

const PROGRAM = "return args[0] + args[1]";

/** (a) isolated-vm's evalClosure on a persistent context: the async call, and the sync one for reference. */
export async function bareIsolatedVm(): Promise<{ evalClosure: Subject; evalClosureSync: Subject }> {
  const isolate = new ivm.Isolate({ memoryLimit: 64 });
  const context = await isolate.createContext();
  const body = `const args = [$0, $1]; ${PROGRAM}`;
  const close = () => {
    if (!isolate.isDisposed) isolate.dispose();
  };
  return {
    evalClosure: { task: () => context.evalClosure(body, [1, 2], { result: { copy: true } }), close },
    evalClosureSync: { task: () => context.evalClosureSync(body, [1, 2], { result: { copy: true } }), close },
  };
}

/** (b) node:vm running the same program, compiled once, as an async function in its own context. */
export function nodeVm(): Subject {
  const context = vm.createContext({});
  const program = vm.runInContext(`(async function (context, args, kwargs) { ${PROGRAM} })`, context) as (...values: unknown[]) => Promise<unknown>;
  return { task: () => program({}, [1, 2], {}) };
}

/** (c) a small message to a child process and back, over the sandbox's transport (IPC, advanced serialisation). */
export async function childRoundTrip(): Promise<Subject> {
  const child = fork(fileURLToPath(new URL("./echo-child.ts", import.meta.url)), [], { serialization: "advanced", stdio: ["ignore", "ignore", "inherit", "ipc"] });
  await once(child, "message");
  const message = { type: "run", runId: 1, payload: { code: PROGRAM, args: [1, 2], kwargs: {} } };
  return {
    task: async () => {
      const reply = once(child, "message");
      child.send(message);
      await reply;
    },
    close: () => child.kill(),
  };
}

/**
 * (d) the floor of a sandboxed call: an IPC round trip to a child process that runs the same
 * body in a persistent isolated-vm context and replies with its value.
 */
export async function sandboxRoundTrip(): Promise<Subject> {
  const child = fork(fileURLToPath(new URL("./sandbox-child.ts", import.meta.url)), [PROGRAM], {
    serialization: "advanced",
    execArgv: ["--no-node-snapshot"],
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  await once(child, "message");
  return {
    task: async () => {
      const reply = once(child, "message");
      child.send({ args: [1, 2] });
      await reply;
    },
    close: () => child.kill(),
  };
}

/**
 * (e) the floor of a program's request to the host: (d), but the program awaits one answer
 * from the host before it settles, so a run is two isolate entries and two IPC round trips
 * (the run and its request's answer). (e) − (d) is what any request from a program costs in
 * this design (programs in a child process, tools and fetch in the host), before improv's own
 * work on either side.
 */
export async function bridgeRoundTrip(): Promise<Subject> {
  const child = fork(fileURLToPath(new URL("./bridge-child.ts", import.meta.url)), [], {
    serialization: "advanced",
    execArgv: ["--no-node-snapshot"],
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  await once(child, "message");
  const answer = { ok: true, value: 0 };
  return {
    task: async () => {
      let reply = once(child, "message");
      child.send({ args: [1, 2] });
      const [asked] = (await reply) as [{ request?: unknown }];
      if (asked.request === undefined) throw new Error("the bridge baseline's program did not ask");
      reply = once(child, "message");
      child.send({ answer });
      const [settled] = (await reply) as [{ value?: unknown }];
      if (settled.value !== 3) throw new Error("the bridge baseline's program did not settle with its value");
    },
    close: () => child.kill(),
  };
}

/** (d) and (e), started to be timed in the same rounds as a figure; `close` frees both. */
export async function requestFloors(): Promise<{ readonly subjects: { readonly sandboxRoundTrip: Subject; readonly bridgeRoundTrip: Subject }; readonly close: () => void }> {
  const sandbox = await sandboxRoundTrip();
  let bridge: Subject;
  try {
    bridge = await bridgeRoundTrip();
  } catch (error) {
    sandbox.close?.();
    throw error;
  }
  return {
    subjects: { sandboxRoundTrip: sandbox, bridgeRoundTrip: bridge },
    close: () => {
      sandbox.close?.();
      bridge.close?.();
    },
  };
}
