#!/usr/bin/env node
import { readFileSync, rmSync } from "node:fs";
import { Command } from "commander";
import { runDemo } from "./demo.ts";
import { runTelemetry, UsageError } from "./telemetry-command.ts";

// Piping into `head` closes stdout early; that is the reader's choice, not an error.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0);
  throw error;
});

/** The package's own version, read beside `src/` and `dist/` alike. */
const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };

const program = new Command();
program.name("improv").description("LLM-backed objects whose methods are written at call time.").version(version, "-V, --version", "print the version");

program
  .command("demo")
  .description("Run a short story of agents offline (scripted completions), or against a live model when OPENAI_API_KEY is set.")
  .option("--log <file>", "where to write the call log", "logs/demo.jsonl")
  .action(async (options: { log: string }) => {
    // A fresh log, so the closing summary describes this run only.
    rmSync(options.log, { force: true });
    await runDemo({ log: options.log, write: (line) => process.stdout.write(`${line}\n`) });
    process.stdout.write(`\n$ improv telemetry ${options.log}\n`);
    await runTelemetry({ inputs: [options.log], json: false, stdout: process.stdout, stderr: process.stderr });
  });

program
  .command("telemetry")
  .description("Report on call logs: calls, errors by type, how generated code uses history, by role and method.")
  .argument("<inputs...>", "JSONL log files (plain or .gz), directories of them, or - for standard input")
  .option("--json", "print the report as JSON")
  .option("--since <time>", "only calls at or after this time (ISO 8601)")
  .option("--until <time>", "only calls at or before this time (ISO 8601)")
  .action(async (inputs: string[], options: { json?: boolean; since?: string; until?: string }) => {
    try {
      await runTelemetry({
        inputs,
        json: options.json === true,
        ...(options.since === undefined ? {} : { since: options.since }),
        ...(options.until === undefined ? {} : { until: options.until }),
        stdout: process.stdout,
        stderr: process.stderr,
      });
    } catch (error) {
      process.stderr.write(`improv telemetry: ${(error as Error).message}\n`);
      process.exitCode = error instanceof UsageError || /^Cannot read/.test((error as Error).message) ? 2 : 1;
    }
  });

await program.parseAsync(process.argv);
