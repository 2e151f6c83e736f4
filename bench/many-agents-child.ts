// Runs one many-agents figure in a fresh process and prints it as JSON. Started by bench/many-agents.ts.
import { runManyAgentsFigure } from "./many-agents.ts";

const result = await runManyAgentsFigure(process.argv.slice(2));
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
