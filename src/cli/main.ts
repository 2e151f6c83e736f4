#!/usr/bin/env node
import { Command } from "commander";
import { runDemo } from "./demo.ts";

// Piping into `head` closes stdout early; that is the reader's choice, not an error.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0);
  throw error;
});

const program = new Command();
program.name("improv").description("LLM-backed objects whose methods are written at call time.");

program
  .command("demo")
  .description("Run a short story of agents offline (scripted completions), or against a live model when OPENAI_API_KEY is set.")
  .option("--log <file>", "where to write the call log", "logs/demo.jsonl")
  .action(async (options: { log: string }) => {
    await runDemo({ log: options.log, write: (line) => process.stdout.write(`${line}\n`) });
  });

await program.parseAsync(process.argv);
