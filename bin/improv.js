#!/usr/bin/env node
// The `improv` command: the built CLI in an installed package; in a checkout that was not
// built, the TypeScript source itself (Node.js 24 runs it with its types stripped).
import { existsSync } from "node:fs";

const built = new URL("../dist/cli/main.js", import.meta.url);
await import(existsSync(built) ? built.href : new URL("../src/cli/main.ts", import.meta.url).href);
