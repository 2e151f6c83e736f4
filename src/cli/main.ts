#!/usr/bin/env node
import { closeSync, existsSync, openSync, readFileSync, readSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { Writable } from "node:stream";
import { Command } from "commander";
import { keepsPrograms, openStore, sqlitePath, SqliteStore, type Store } from "../store/index.ts";
import { ENV_VARIABLES, sqliteDatabase, terminalText } from "../shared/index.ts";
import { DEMO_ROLES, runDemo } from "./demo.ts";
import { MissingInputError } from "./log-reader.ts";
import { readRecords, storeLines, type StoredRecord } from "./record-lines.ts";
import { refusedPrograms } from "./refused.ts";
import { agentsTable, historyTable, programListing, programsTable, refusedTable } from "./tables.ts";
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
// A flag without its value, one a command does not know, or a missing argument is a usage
// mistake like a bad date: exit code 2, for every command (set before they are made, so each inherits it).
program.exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));
program.addHelpText("after", `\nEnvironment variables:\n${Object.entries(ENV_VARIABLES).map(([name, use]) => `  ${name.padEnd(26)}${use}`).join("\n")}`);

program
  .command("demo")
  .description("Run a short story of agents offline (scripted completions), or against a live model when OPENAI_API_KEY or ANTHROPIC_API_KEY is set. Its agents are kept in a SQLite file and remember earlier runs.")
  .option("--log <file>", "where to write the call log", "logs/demo.jsonl")
  .option("--store <file>", "the SQLite file that keeps the demo's agents (default: demo.db beside the log)")
  .option("--fresh", "forget the agents of earlier runs and start over")
  .action(async (options: { log: string; store?: string; fresh?: boolean }) => {
    const location = options.store ?? join(dirname(options.log), "demo.db");
    // A fresh log, so the closing summary describes this run only; never a file improv did not write, nor a store the demo does not own.
    const refusal = notACallLog(options.log) ?? (options.fresh ? notTheDemosStore(location) : undefined);
    if (refusal !== undefined) {
      process.stderr.write(`improv demo: ${refusal}\n`);
      process.exitCode = 2;
      return;
    }
    rmSync(options.log, { force: true });
    if (options.fresh) for (const suffix of ["", "-wal", "-shm"]) rmSync(`${location}${suffix}`, { force: true });
    const store = new SqliteStore(location);
    try {
      await runDemo({ log: options.log, store, write: (line) => process.stdout.write(`${line}\n`) });
    } finally {
      await store.close();
    }
    const html = join(dirname(options.log), "report.html");
    process.stdout.write(`\n$ improv telemetry ${options.log} --html ${html}\n`);
    await runTelemetry({ inputs: [options.log], json: false, html, stdout: process.stdout, stderr: new Writable({ write: (_chunk, _encoding, done) => done() }) });
    process.stdout.write(`\nThe same report with charts: ${resolve(html)} (one self-contained page; open it in a browser).\n`);
  });

program
  .command("agents")
  .description("List the agents kept in a store: id, role, records, last call.")
  .argument("<store>", "a SQLite file or sqlite: URL, or a postgres:// URL")
  .option("--json", "print the list as JSON")
  .action(async (location: string, options: { json?: boolean }) => {
    await withStore(location, async (store) => {
      const agents = await store.agents();
      process.stdout.write(options.json ? `${JSON.stringify(agents, null, 2)}\n` : agents.length === 0 ? "No agents in this store.\n" : `${agentsTable(agents)}\n`);
    });
  });

program
  .command("history")
  .description("Print an agent's history from a store, as a table or as JSON records.")
  .argument("<store>", "a SQLite file or sqlite: URL, or a postgres:// URL")
  .option("--agent <id>", "the agent's id (needed when the store holds more than one)")
  .option("--json", "print the records as JSON, one per line")
  .action(async (location: string, options: { agent?: string; json?: boolean }) => {
    await withStore(location, async (store) => {
      const agents = await store.agents();
      const id = options.agent ?? (agents.length === 1 ? agents[0]?.id : undefined);
      const agent = agents.find((candidate) => candidate.id === id);
      if (agent === undefined) {
        const known = agents.map((candidate) => candidate.id).join(", ") || "none";
        throw new UsageError(options.agent === undefined ? `Name the agent with --agent. Agents in this store: ${known}.` : `No agent "${id}" in this store. Agents in it: ${known}.`);
      }
      const read = await readRecords(store, agent);
      saySkipped("history", read);
      const records = read.flatMap((entry) => ("record" in entry ? [entry.record] : []));
      process.stdout.write(options.json ? records.map((record) => `${JSON.stringify(record)}\n`).join("") : `${historyTable(records)}\n`);
    });
  });

program
  .command("telemetry")
  .description("Report on call logs: calls, errors by type, how generated code uses history, by role and method.")
  .argument("[inputs...]", "JSONL log files (plain or .gz), directories of them, or - for standard input")
  .option("--store <store>", "also read the history records of a store (a SQLite file or sqlite: URL, or a postgres:// URL), each as its call's log line")
  .option("--agent <id>", "with --store: only this agent's records")
  .option("--json", "print the report as JSON")
  .option("--since <time>", "only calls at or after this time (ISO 8601)")
  .option("--until <time>", "only calls at or before this time (ISO 8601)")
  .option("--role <role>", "only the calls of this role")
  .option("--method <method>", "only the calls of this method: its name (in every role) or role.method")
  .option("--html <file>", "also write the report as a self-contained HTML page with charts")
  .action(async (inputs: string[], options: { json?: boolean; since?: string; until?: string; role?: string; method?: string; html?: string; store?: string; agent?: string }) => {
    let store: Store | undefined;
    try {
      if (options.agent !== undefined && options.store === undefined) throw new UsageError("--agent names an agent of the store given with --store.");
      if (options.store !== undefined) store = openExistingStore(options.store);
      const opened = store;
      await runTelemetry({
        inputs,
        ...(opened === undefined ? {} : { lines: { read: () => storeLines(opened, options.agent) } }),
        json: options.json === true,
        ...(options.html === undefined ? {} : { html: options.html }),
        ...(options.since === undefined ? {} : { since: options.since }),
        ...(options.until === undefined ? {} : { until: options.until }),
        ...(options.role === undefined ? {} : { role: options.role }),
        ...(options.method === undefined ? {} : { method: options.method }),
        stdout: process.stdout,
        stderr: process.stderr,
      });
    } catch (error) {
      process.stderr.write(`improv telemetry: ${(error as Error).message}\n`);
      process.exitCode = error instanceof UsageError || error instanceof MissingInputError ? 2 : 1;
    } finally {
      await store?.close().catch(() => undefined);
    }
  });

program
  .command("programs")
  .description("List the programs a store keeps for reuse (key, uses, failures, last used), show one and why it was kept, forget one, or list the programs the latest calls did not keep and why.")
  .argument("<store>", "a SQLite file or sqlite: URL, or a postgres:// URL")
  .option("--role <role>", "only the programs of this role")
  .option("--show <key>", "print the program kept under this key, after comment lines saying why it was kept and how it fared")
  .option("--forget <key>", "drop the program kept under this key (the next call of that shape asks the provider)")
  .option("--refused", "list the programs that worked but were not kept, and why, among the latest calls (see --last)")
  .option("--last <n>", "with --refused: how many of the latest calls to look at", "50")
  .option("--json", "print the list as JSON")
  .action(async (location: string, options: { role?: string; show?: string; forget?: string; refused?: boolean; last: string; json?: boolean }) => {
    await withStore(location, async (store) => {
      if (!keepsPrograms(store)) throw new UsageError(`${store.label} keeps no programs.`);
      if ([options.show, options.forget, options.refused].filter((given) => given !== undefined).length > 1) throw new UsageError("Give one of --show, --forget and --refused.");
      if (options.refused) {
        const last = Number(options.last);
        if (!Number.isSafeInteger(last) || last < 1) throw new UsageError(`--last must be a whole number of calls, 1 or more (not "${options.last}").`);
        const { refused, skipped } = await refusedPrograms(store, last, options.role);
        saySkipped("programs", skipped);
        process.stdout.write(options.json ? `${JSON.stringify(refused, null, 2)}\n` : refused.length === 0 ? `No program was refused keeping in the latest ${last} calls.\n` : `${refusedTable(refused)}\n`);
        return;
      }
      const key = options.forget ?? options.show;
      if (key !== undefined) {
        const found = await store.program(key);
        const program = options.role === undefined || found?.role === options.role ? found : undefined;
        if (program === undefined) throw new UsageError(`No program kept under ${key}${options.role === undefined ? "" : ` for role ${options.role}`}.`);
        if (options.show !== undefined) {
          process.stdout.write(`${programListing(program)}\n`);
          return;
        }
        if (!(await store.forgetProgram(key))) throw new UsageError(`No program kept under ${key}.`);
        process.stdout.write(`Forgot ${key}.\n`);
        return;
      }
      const programs = await store.programs(options.role);
      process.stdout.write(options.json ? `${JSON.stringify(programs, null, 2)}\n` : programs.length === 0 ? "No kept programs.\n" : `${programsTable(programs)}\n`);
    });
  });

/**
 * Why `--fresh` may not delete the file at `location`: it holds agents of other roles, or other
 * tables (a database of the application's); undefined when it holds the demo's agents only, or
 * does not exist. Read only: opening it as a store would add improv's tables to whatever it is.
 */
function notTheDemosStore(location: string): string | undefined {
  if (!existsSync(location)) return undefined;
  const refused = (why: string) => `--fresh would delete ${location}, which ${why}. Give the demo a store of its own with --store.`;
  let db: InstanceType<ReturnType<typeof sqliteDatabase>> | undefined;
  try {
    db = new (sqliteDatabase())(location, { readOnly: true });
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((row) => row.name);
    if (!tables.includes("improv_agents") || tables.some((name) => !name.startsWith("improv_") && !name.startsWith("sqlite_"))) return refused("is not a store the demo made");
    const roles = (db.prepare("SELECT DISTINCT role FROM improv_agents").all() as { role: string }[]).map((row) => row.role);
    const others = roles.filter((role) => !DEMO_ROLES.includes(role));
    return others.length === 0 ? undefined : refused(`holds agents the demo did not make (${terminalText(others.slice(0, 5).join(", "))}${others.length > 5 ? ", …" : ""})`);
  } catch {
    return refused("is not a store the demo made");
  } finally {
    db?.close();
  }
}

/** Why the file at `path` is no call log the demo may replace (it holds something else); undefined when it may (absent, empty, or a call log). */
function notACallLog(path: string): string | undefined {
  let head: string;
  try {
    const file = openSync(path, "r");
    try {
      const buffer = Buffer.alloc(64 * 1024);
      head = buffer.subarray(0, readSync(file, buffer, 0, buffer.length, 0)).toString("utf8");
    } finally {
      closeSync(file);
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    return `Cannot use ${path} as the demo's log: ${(error as Error).message}. Give another file with --log.`;
  }
  // Its first line (or as much of it as was read): a call log's is a JSON object with a call_id.
  const first = head.split("\n", 1)[0]?.trim() ?? "";
  if (first === "" || (first.startsWith("{") && /"call_id"\s*:\s*"/.test(first))) return undefined;
  return `${path} is not a call log improv wrote, and the demo replaces its log each run. Give another file with --log.`;
}

/** Records that are not history records, skipped: each said on stderr (the first 20), so the rest of the output stands. */
const MAX_SKIPPED_SAID = 20;

function saySkipped(command: string, read: readonly StoredRecord[]): void {
  const skipped = read.flatMap((entry) => ("problem" in entry ? [`${entry.where} (${entry.problem})`] : []));
  for (const where of skipped.slice(0, MAX_SKIPPED_SAID)) process.stderr.write(terminalText(`improv ${command}: skipped ${where}\n`));
  if (skipped.length > MAX_SKIPPED_SAID) process.stderr.write(`improv ${command}: … and ${skipped.length - MAX_SKIPPED_SAID} more records skipped\n`);
}

/** Opens the store at `location`; a SQLite file that does not exist is a usage mistake (opening would make an empty one). */
function openExistingStore(location: string): Store {
  if (!/^postgres(ql)?:\/\//i.test(location) && !existsSync(sqlitePath(location))) throw new UsageError(`No store at ${location}: the file does not exist.`);
  return openStore(location);
}

/** Opens the store a command names, runs `work`, closes it; a failure is reported with exit code 1 (2 for usage). */
async function withStore(location: string, work: (store: Store) => Promise<void>): Promise<void> {
  let store: Store | undefined;
  try {
    store = openExistingStore(location);
    await work(store);
  } catch (error) {
    process.stderr.write(`improv: ${(error as Error).message}\n`);
    process.exitCode = error instanceof UsageError ? 2 : 1;
  } finally {
    await store?.close().catch(() => undefined);
  }
}

await program.parseAsync(process.argv);
