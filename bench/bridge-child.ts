// The other end of the bridge baseline (e): a child process with one persistent isolated-vm
// context whose program asks the host for one value and awaits it. A run is two entries, as in
// improv's sandbox: `start` (the program runs until it awaits; its request leaves through a
// synchronous callback) and `deliver` (the answer resolves the awaited promise; the program
// settles), with the request and the answer crossing the IPC channel in between.
import ivm from "isolated-vm";

const isolate = new ivm.Isolate({ memoryLimit: 64 });
const context = isolate.createContextSync();
let asked: unknown;
const post = new ivm.Callback((request: unknown) => {
  asked = request;
});
const source = `
  const post = $0;
  let resolveAnswer, entry;
  const ask = (request) => new Promise((resolve) => { resolveAnswer = resolve; post(request); });
  const program = async (args) => { const answer = await ask({ kind: "tool", input: "{}" }); return args[0] + args[1] + (answer.value ?? 0); };
  // As in improv's runtime: an entry answers with an object the program's settling fills in,
  // read when isolated-vm copies it out, after the entry's microtasks have run.
  return {
    start(args) { entry = { result: null }; program(args).then((value) => { entry.result = { value }; }); return entry; },
    deliver(answer) { entry = { result: null }; resolveAnswer(answer); return entry; },
  };`;
const api = context.evalClosureSync(source, [post], { result: { reference: true } }) as ivm.Reference;
const start = api.getSync("start", { reference: true }) as ivm.Reference;
const deliver = api.getSync("deliver", { reference: true }) as ivm.Reference;
const copy = { arguments: { copy: true }, result: { copy: true } } as const;

process.on("message", (message: { args?: unknown[]; answer?: unknown }) => {
  const answered = message.args !== undefined ? start.applySync(undefined, [message.args], copy) : deliver.applySync(undefined, [message.answer], copy);
  const { result } = answered as { result: { value: unknown } | null };
  if (result !== null) process.send?.({ value: result.value });
  else process.send?.({ request: asked });
});
process.on("disconnect", () => process.exit(0));
process.send?.({ ready: true });
