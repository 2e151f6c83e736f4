import { type ParsedProgram, parseProgram } from "../programs/index.ts";
import { HistoryAnalysis } from "./history-analysis.ts";
import type { HistoryScan } from "./patterns.ts";
import type { AnyNode } from "./syntax.ts";
import { scanText } from "./text-scan.ts";

/** Scans a generated program for its use of the history. Uses `parsed` when the caller already parsed it. */
export function scanProgram(code: string, parsed?: ParsedProgram): HistoryScan {
  if (parsed === undefined) return scanOnce(code, parseProgram(code));
  // A program run again (a kept one, say) comes with the parse the host keeps for it: scanned once.
  let scan = scansByParse.get(parsed);
  if (scan === undefined) {
    scan = scanOnce(code, parsed);
    scansByParse.set(parsed, scan);
  }
  return scan;
}

const scansByParse = new WeakMap<ParsedProgram, HistoryScan>();

function scanOnce(code: string, parsed: ParsedProgram): HistoryScan {
  let scan: HistoryScan;
  if (!parsed.ok) scan = scanText(code);
  else {
    try {
      scan = new HistoryAnalysis(parsed.ast as AnyNode).run();
    } catch {
      // A construct the analysis does not know must not cost the log line.
      scan = scanText(code);
    }
  }
  Object.freeze(scan.patterns);
  return Object.freeze(scan);
}
