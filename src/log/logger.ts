import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import pino, { type Logger } from "pino";

const fileLoggers = new Map<string, Logger>();
/** Log targets whose failure was already reported: each is reported once. */
const reported = new Set<unknown>();

/** The pino logger for a `log` option value, or `undefined` when logging is off. File loggers are shared per path. */
export function loggerFor(option: string | Logger | false): Logger | undefined {
  if (option === false) return undefined;
  if (typeof option !== "string") return option;
  const path = resolve(option);
  let logger = fileLoggers.get(path);
  if (!logger) {
    mkdirSync(dirname(path), { recursive: true });
    const destination = pino.destination({ dest: path, sync: true, mkdir: true });
    // A write that fails later (disk full) is reported, never thrown at a caller or left unhandled.
    destination.on("error", (error: unknown) => reportFailure(path, error));
    logger = pino({ base: null, timestamp: false, messageKey: "msg" }, destination);
    fileLoggers.set(path, logger);
  }
  return logger;
}

/** Writes one log line; a failure is reported once per log target on stderr and never reaches the caller. */
export function writeLogLine(option: string | Logger | false, line: Record<string, unknown>): void {
  try {
    loggerFor(option)?.info(line, "improv call");
  } catch (error) {
    reportFailure(typeof option === "string" ? resolve(option) : option, error);
  }
}

function reportFailure(target: unknown, error: unknown): void {
  if (reported.has(target)) return;
  reported.add(target);
  const where = typeof target === "string" ? ` to ${target}` : "";
  process.stderr.write(
    `improv: could not write a call log line${where} (${error instanceof Error ? error.message : String(error)}); calls go on, and further failures of this log are not reported.\n`,
  );
}
