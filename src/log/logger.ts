import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import pino, { type Logger } from "pino";

const fileLoggers = new Map<string, Logger>();
let failureReported = false;

/** The pino logger for a `log` option value, or `undefined` when logging is off. File loggers are shared per path. */
export function loggerFor(option: string | Logger | false): Logger | undefined {
  if (option === false) return undefined;
  if (typeof option !== "string") return option;
  const path = resolve(option);
  let logger = fileLoggers.get(path);
  if (!logger) {
    mkdirSync(dirname(path), { recursive: true });
    logger = pino(
      { base: null, timestamp: false, messageKey: "msg" },
      pino.destination({ dest: path, sync: true, mkdir: true }),
    );
    fileLoggers.set(path, logger);
  }
  return logger;
}

/** Writes one log line; a failure is reported once on stderr and never reaches the caller. */
export function writeLogLine(option: string | Logger | false, line: Record<string, unknown>): void {
  try {
    loggerFor(option)?.info(line, "improv call");
  } catch (error) {
    if (failureReported) return;
    failureReported = true;
    process.stderr.write(`improv: could not write a call log line (${error instanceof Error ? error.message : String(error)}); calls go on, and further log failures are not reported.\n`);
  }
}
