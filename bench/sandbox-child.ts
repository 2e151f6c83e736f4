// The other end of the sandbox round-trip baseline: a child process with one persistent
// isolated-vm context that runs the program body for every message and replies with its value.
import ivm from "isolated-vm";

const isolate = new ivm.Isolate({ memoryLimit: 64 });
const context = isolate.createContextSync();
const run = context.evalClosureSync("return function (args) { return (function (args) { BODY })(args) }".replace("BODY", process.argv[2] ?? "return null"), [], { result: { reference: true } }) as ivm.Reference;
process.on("message", (message: { args: unknown[] }) => {
  const value = run.applySync(undefined, [message.args], { arguments: { copy: true }, result: { copy: true } });
  process.send?.({ value });
});
process.on("disconnect", () => process.exit(0));
process.send?.({ ready: true });
