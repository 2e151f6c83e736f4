#!/usr/bin/env node
// The `improv` command: the built CLI in an installed package; in a checkout that was not
// built, the TypeScript source itself (Node.js 24 runs it with its types stripped).
import { existsSync } from "node:fs";

// Before anything that needs Node.js 24 is loaded.
const major = Number(process.versions.node.split(".")[0]);
if (major < 24) {
  process.stderr.write(`improv needs Node.js 24 or later; this is Node.js ${process.versions.node}. Install Node.js 24 (nvm install 24, or from nodejs.org), or run it with npm's Node.js 24: npx -y node@24 node_modules/.bin/improv …\n`);
  process.exit(1);
}

const built = new URL("../dist/cli/main.js", import.meta.url);
await import(existsSync(built) ? built.href : new URL("../src/cli/main.ts", import.meta.url).href);
