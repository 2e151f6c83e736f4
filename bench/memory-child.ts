// Runs one memory figure in a fresh process (so earlier phases' freed pages do not hide growth)
// and prints it as JSON. Started by bench/run.ts with --no-node-snapshot --expose-gc.
import { perLiveAgent, perRecord } from "./memory.ts";
import { syntheticRecord } from "../test-support/records.ts";

const [figure, count] = [process.argv[2], Number(process.argv[3])];
const result = figure === "agents" ? await perLiveAgent(count) : await perRecord(count, syntheticRecord);
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
