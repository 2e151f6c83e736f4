import type { CeilingReport } from "../protocol.ts";

/** Longest line the report pipe carries (a ceiling report); anything longer is not a report and is dropped. @unit characters */
const MAX_LINE_CHARS = 4_096;

/**
 * Splits the report pipe's text into lines. Every complete line is returned, however many a
 * chunk holds; only the unfinished tail is kept, and a tail that grows past the longest
 * report is dropped up to its next newline.
 */
export class ReportLines {
  #pending = "";
  #skipping = false;

  get pendingChars(): number {
    return this.#pending.length;
  }

  push(chunk: string): string[] {
    const parts = (this.#pending + chunk).split("\n");
    this.#pending = parts.pop() ?? "";
    if (this.#skipping && parts.length > 0) {
      parts.shift();
      this.#skipping = false;
    }
    if (this.#pending.length > MAX_LINE_CHARS) {
      this.#pending = "";
      this.#skipping = true;
    }
    return parts;
  }
}

/** The memory watch's report a line holds, or undefined when it is not one. Nothing on the pipe is trusted beyond its shape. */
export function parseCeilingReport(line: string): CeilingReport | undefined {
  try {
    const value = JSON.parse(line) as Partial<CeilingReport>;
    if (value.type !== "memory-ceiling") return undefined;
    const { rssMb, ceilingMb, runId } = value;
    if (![rssMb, ceilingMb, runId].every((n) => typeof n === "number" && Number.isSafeInteger(n) && n >= 0)) return undefined;
    return { type: "memory-ceiling", rssMb: rssMb as number, ceilingMb: ceilingMb as number, runId: runId as number };
  } catch {
    return undefined;
  }
}
