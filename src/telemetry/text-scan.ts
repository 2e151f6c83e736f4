import { PATTERN_TAGS, type HistoryScan, type PatternTag } from "./patterns.ts";

/**
 * The textual fallback, for programs that do not parse (logged as `history_scan: "text"`).
 *
 * 1. Comments are removed, and every string or template literal is blanked unless its whole
 *    content is `conversation_history` (so text that merely mentions the history is ignored).
 * 2. History access is detected by `context.conversation_history`, `context?.conversation_history`,
 *    `context["conversation_history"]`, or a destructuring `{ … conversation_history … } = context`.
 * 3. Only when access is detected, pattern tags come from method names anywhere in the program
 *    (`.filter(` → filter, `.length` → count, `for (… of …)` → iterate, …): without data flow,
 *    the fallback cannot tell which collection an operation applies to.
 */
export function scanText(code: string): HistoryScan {
  const text = stripCommentsAndStrings(code);
  const detected =
    /\bcontext\s*(?:\?\.\s*|\.\s*)conversation_history\b/.test(text) ||
    /\bcontext\s*(?:\?\.)?\s*\[\s*(['"`])conversation_history\1\s*\]/.test(text) ||
    /\{[^{}]*\bconversation_history\b[^{}]*\}\s*=\s*context\b/.test(text);
  const patterns = new Set<PatternTag>();
  if (detected) {
    const checks: [PatternTag, RegExp][] = [
      ["filter", /\.\s*filter\s*\(/],
      // A call's or a loop's head is read 200 characters far at most: `[^)]*` read to the end of
      // the text again from every `(` left open, in time quadratic in the program's length.
      ["map", /\.\s*(?:map|flatMap)\s*\(|\bArray\.from\s*\([^)]{0,200},/],
      ["slice", /\.\s*(?:slice|splice)\s*\(/],
      ["count", /\.\s*(?:length|size)\b/],
      ["group", /\b(?:Object|Map)\.groupBy\s*\(/],
      ["find", /\.\s*(?:find|findLast|findIndex|findLastIndex|some|every|includes|indexOf|lastIndexOf)\s*\(/],
      ["sort", /\.\s*(?:sort|toSorted|reverse|toReversed)\s*\(/],
      ["reduce", /\.\s*(?:reduce|reduceRight)\s*\(/],
      ["iterate", /\bfor\s*\([^)]{0,200}\bof\b|\.\s*forEach\s*\(/],
    ];
    for (const [tag, pattern] of checks) if (pattern.test(text)) patterns.add(tag);
  }
  return { scan: "text", historyAccessDetected: detected, patterns: PATTERN_TAGS.filter((tag) => patterns.has(tag)) };
}

/** Removes comments and blanks string contents, keeping strings that are exactly `conversation_history`. */
export function stripCommentsAndStrings(code: string): string {
  let out = "";
  let index = 0;
  while (index < code.length) {
    const char = code[index] as string;
    const next = code[index + 1];
    if (char === "/" && next === "/") {
      const end = code.indexOf("\n", index);
      index = end === -1 ? code.length : end;
      continue;
    }
    if (char === "/" && next === "*") {
      const end = code.indexOf("*/", index + 2);
      index = end === -1 ? code.length : end + 2;
      out += " ";
      continue;
    }
    if (char === '"' || char === "'" || char === "`") {
      let end = index + 1;
      while (end < code.length && code[end] !== char) end += code[end] === "\\" ? 2 : 1;
      const content = code.slice(index + 1, end);
      out += content === "conversation_history" ? `${char}${content}${char}` : `${char}${char}`;
      index = end + 1;
      continue;
    }
    out += char;
    index += 1;
  }
  return out;
}
