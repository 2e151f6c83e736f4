import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Readable, Writable } from "node:stream";
import { forEachLine, resolveSources } from "./log-reader.ts";
import { CallCollector } from "./report-calls.ts";
import { renderHtmlReport } from "./report-html/page.ts";
import { TelemetryAggregator, type TelemetryReport } from "./telemetry-report.ts";
import { formatReport } from "./telemetry-text.ts";

/** Inputs larger than this show a progress line on a terminal. @unit bytes */
const PROGRESS_THRESHOLD_BYTES = 8 * 1024 * 1024;
const PROGRESS_INTERVAL_MS = 200;

export interface TelemetryCommandOptions {
  readonly inputs: readonly string[];
  readonly json: boolean;
  /** Also write the report as an HTML page to this file. */
  readonly html?: string;
  readonly since?: string;
  readonly until?: string;
  /** Only the calls of this role. */
  readonly role?: string;
  /** Only the calls of this method: its name (every role's), or `role.method`. */
  readonly method?: string;
  readonly stdout: Writable;
  readonly stderr: Writable & { isTTY?: boolean };
  readonly stdin?: () => Readable;
  /** Lines from elsewhere than files (a store's records, as log lines), each with where it came from; read after the files. */
  readonly lines?: { readonly read: () => AsyncIterable<LocatedLine> };
  /** Inputs larger than this show progress on a terminal. Default: 8 MiB. */
  readonly progressThresholdBytes?: number;
}

/** A line from elsewhere than a file, with where it is; or why what is there is no line (`problem`: counted as malformed). */
export type LocatedLine = { readonly where: string; readonly line: Record<string, unknown> } | { readonly where: string; readonly problem: string };

function parseWhen(value: string | undefined, flag: string): Date | undefined {
  if (value === undefined) return undefined;
  const time = Date.parse(value);
  if (Number.isNaN(time)) throw new UsageError(`${flag} must be a date or time such as 2025-01-31 or 2025-01-31T12:00:00Z, got "${value}".`);
  return new Date(time);
}

/** A role or method name to filter on: given, and not blank. */
function parseName(value: string | undefined, flag: string): string | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === "") throw new UsageError(`${flag} needs a name, such as ${flag === "--role" ? "--role calculator" : "--method add or --method calculator.add"}.`);
  return value;
}

/** A mistake in how the command was called (exit code 2). */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/**
 * `improv telemetry <files or dirs…>`: streams call logs and reports calls, errors, history
 * use and its patterns, reuse and repair, tool use and failures, and knowledge (sources, empty
 * retrievals, failures, passages, time), overall and by role and method, for the calls the
 * filters keep. Returns the report.
 */
export async function runTelemetry(options: TelemetryCommandOptions): Promise<TelemetryReport> {
  const since = parseWhen(options.since, "--since");
  const until = parseWhen(options.until, "--until");
  const role = parseName(options.role, "--role");
  const method = parseName(options.method, "--method");
  if (since !== undefined && until !== undefined && since > until) throw new UsageError(`--since (${since.toISOString()}) is after --until (${until.toISOString()}): no call could match.`);
  if (options.inputs.length === 0 && options.lines === undefined) throw new UsageError("Name at least one log file or directory, or - for standard input (or a store with --store).");
  const sources = await resolveSources(options.inputs, options.stdin);
  if (sources.length === 0 && options.inputs.length > 0) throw new UsageError(`Found no log files in ${options.inputs.map((input) => `"${input}"`).join(", ")} (files ending .jsonl, .ndjson, .log or .json, gzipped or not, rotated ones such as calls.jsonl.1 too, searched in subfolders too). Name a log file, or the folder improv logs to.`);
  // The call explorer is part of the HTML page only: a text or JSON report keeps no calls.
  const collector = options.html === undefined ? undefined : new CallCollector();
  const aggregator = new TelemetryAggregator({ ...(since ? { since } : {}), ...(until ? { until } : {}), ...(role === undefined ? {} : { role }), ...(method === undefined ? {} : { method }) }, collector === undefined ? undefined : (line, where) => collector.add(line, where));
  const totalBytes = sources.reduce((total, source) => total + source.size, 0);
  const threshold = options.progressThresholdBytes ?? PROGRESS_THRESHOLD_BYTES;
  const progress = options.stderr.isTTY && totalBytes > threshold ? new Progress(options.stderr, totalBytes) : undefined;
  for (const source of sources) {
    const problem = await forEachLine(
      source,
      (line, lineNumber) => {
        aggregator.addLine(line, `${source.name}:${lineNumber}`);
        progress?.line();
      },
      (bytes) => progress?.bytes(bytes),
    );
    if (problem !== undefined) aggregator.addMalformed(source.name, problem);
  }
  progress?.done();
  if (options.lines !== undefined) {
    for await (const located of options.lines.read()) {
      if ("line" in located) aggregator.addObject(located.line, located.where);
      else aggregator.addMalformed(located.where, located.problem);
    }
  }
  const report = aggregator.report();
  options.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatReport(report)}\n`);
  if (options.html !== undefined) {
    const path = resolve(options.html);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, renderHtmlReport(report, new Date(), collector?.data()));
    options.stderr.write(`improv telemetry: wrote the HTML report to ${path}\n`);
  }
  return report;
}

/** A one-line progress display on a terminal, redrawn at most every 200 ms. */
class Progress {
  #lines = 0;
  #bytes = 0;
  #lastDraw = 0;
  readonly #started = performance.now();
  readonly #out: Writable;
  readonly #total: number;

  constructor(out: Writable, total: number) {
    this.#out = out;
    this.#total = total;
  }

  line(): void {
    this.#lines += 1;
    if ((this.#lines & 1023) === 0) this.#draw();
  }

  bytes(count: number): void {
    this.#bytes += count;
  }

  #draw(): void {
    const now = performance.now();
    if (now - this.#lastDraw < PROGRESS_INTERVAL_MS) return;
    this.#lastDraw = now;
    const rate = Math.round(this.#lines / ((now - this.#started) / 1000));
    const share = Math.min(100, (100 * this.#bytes) / this.#total).toFixed(0);
    this.#out.write(`\r  reading logs: ${this.#lines.toLocaleString("en-US")} lines, ${share}% of ${(this.#total / 2 ** 20).toFixed(0)} MiB, ${rate.toLocaleString("en-US")} lines/s `);
  }

  done(): void {
    this.#out.write("\r\u001b[2K");
  }
}
