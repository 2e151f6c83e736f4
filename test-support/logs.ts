/**
 * JSONL logs for tests: a path for a log in a fresh temporary folder, and the lines a log holds,
 * parsed.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A path for a log in a fresh temporary folder (`prefix` names the folder); the file is not made. */
export function tempLogPath(prefix = "improv-log-", name = "calls.jsonl"): string {
  return join(mkdtempSync(join(tmpdir(), prefix)), name);
}

/** Each line of the JSONL log at `path`, parsed (a log with no lines throws, as JSON.parse does). */
export function readLogLines<Line = Record<string, unknown>>(path: string): Line[] {
  return readFileSync(path, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Line);
}
