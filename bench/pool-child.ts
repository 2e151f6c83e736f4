// Runs one pool figure in a fresh process and prints it as JSON. Started by bench/pool.ts.
import { runPoolFigure } from "./pool.ts";

const result = await runPoolFigure(process.argv.slice(2));
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
