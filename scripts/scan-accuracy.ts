/**
 * `npm run scan-accuracy`: precision and recall of the history scan on the labeled set in
 * test-support/labeled-programs.ts, and the share of programs whose access and tags are both
 * exactly right ("tags exact"), next to the textual fallback and a plain regex.
 */
import { scanProgram } from "../src/telemetry/scan.ts";
import { scanText } from "../src/telemetry/text-scan.ts";
import { PATTERN_TAGS, type PatternTag } from "../src/telemetry/patterns.ts";
import { LABELED_PROGRAMS } from "../test-support/labeled-programs.ts";

type Scanner = (code: string) => { historyAccessDetected: boolean; patterns: readonly PatternTag[] };

/** What a plain regex over the source would say: any mention counts, any method anywhere counts. */
const plainRegex: Scanner = (code) => {
  const detected = /conversation_history/.test(code);
  const methods: [PatternTag, RegExp][] = [
    ["filter", /\.filter\(/], ["map", /\.(?:map|flatMap)\(/], ["slice", /\.(?:slice|splice)\(/], ["count", /\.(?:length|size)\b/],
    ["group", /groupBy\(/], ["find", /\.(?:find|findLast|findIndex|some|every|includes|indexOf)\(/], ["sort", /\.(?:sort|toSorted|reverse)\(/],
    ["reduce", /\.reduce(?:Right)?\(/], ["iterate", /for\s*\(|\.forEach\(/],
  ];
  return { historyAccessDetected: detected, patterns: detected ? methods.filter(([, re]) => re.test(code)).map(([tag]) => tag) : [] };
};

interface Tally { tp: number; fp: number; fn: number }
const ratio = (a: number, b: number) => (b === 0 ? 1 : a / b);
const format = (t: Tally) => `precision ${ratio(t.tp, t.tp + t.fp).toFixed(3)}  recall ${ratio(t.tp, t.tp + t.fn).toFixed(3)}  (tp ${t.tp}, fp ${t.fp}, fn ${t.fn})`;

function evaluate(scanner: Scanner) {
  const detection: Tally = { tp: 0, fp: 0, fn: 0 };
  const patterns: Tally = { tp: 0, fp: 0, fn: 0 };
  const perTag = new Map<PatternTag, Tally>(PATTERN_TAGS.map((tag) => [tag, { tp: 0, fp: 0, fn: 0 }]));
  const misses: string[] = [];
  for (const program of LABELED_PROGRAMS) {
    const result = scanner(program.code);
    if (result.historyAccessDetected && program.detected) detection.tp += 1;
    else if (result.historyAccessDetected) detection.fp += 1;
    else if (program.detected) detection.fn += 1;
    for (const tag of PATTERN_TAGS) {
      const predicted = result.patterns.includes(tag);
      const actual = program.patterns.includes(tag);
      const tally = perTag.get(tag) as Tally;
      if (predicted && actual) { patterns.tp += 1; tally.tp += 1; }
      else if (predicted) { patterns.fp += 1; tally.fp += 1; }
      else if (actual) { patterns.fn += 1; tally.fn += 1; }
    }
    if (result.historyAccessDetected !== program.detected || result.patterns.join() !== program.patterns.join()) misses.push(program.name);
  }
  return { detection, patterns, perTag, misses };
}

console.log(`History scan accuracy on ${LABELED_PROGRAMS.length} labeled programs (${LABELED_PROGRAMS.filter((p) => p.detected).length} reach the history, ${LABELED_PROGRAMS.filter((p) => !p.detected).length} do not)\n`);
for (const [name, scanner] of [["AST scan (used when the program parses)", (code: string) => scanProgram(code)], ["textual fallback", scanText], ["plain regex (baseline)", plainRegex]] as [string, Scanner][]) {
  const { detection, patterns, perTag, misses } = evaluate(scanner);
  console.log(name);
  console.log(`  access detected    ${format(detection)}`);
  console.log(`  pattern tags       ${format(patterns)}`);
  for (const [tag, tally] of perTag) if (tally.tp + tally.fp + tally.fn > 0) console.log(`    ${tag.padEnd(8)}         ${format(tally)}`);
  const exact = LABELED_PROGRAMS.length - misses.length;
  console.log(`  tags exact         ${ratio(exact, LABELED_PROGRAMS.length).toFixed(3)}  (${exact} of ${LABELED_PROGRAMS.length} programs labeled exactly)`);
  console.log(`  programs not labeled exactly: ${misses.length}${misses.length ? ` (${misses.slice(0, 8).join("; ")}${misses.length > 8 ? "; …" : ""})` : ""}\n`);
}
