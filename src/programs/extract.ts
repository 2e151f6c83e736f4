/**
 * Taking the program a model meant out of the text of its reply. Chat models asked for "the
 * body of a JavaScript method" answer in many ways: a structured `{ "code" }` object, code in
 * one or several fenced blocks (with a plan, a usage example or shell commands beside it),
 * reasoning in `<think>` tags first, prose before and after, a fence never closed. The rules
 * are documented in docs/programs.md.
 */
import { parseProgram } from "./parse.ts";

/** Fence tags of blocks that may hold the program. Blocks with any other tag (text, json, bash, …) are prose, data or shell. */
const CODE_TAGS: ReadonlySet<string> = new Set(["", "js", "javascript", "mjs", "cjs", "jsx", "ts", "typescript", "tsx", "node", "es6", "ecmascript"]);
/** Tags of blocks that may hold a structured `{ "code" }` object. */
const DATA_TAGS: ReadonlySet<string> = new Set(["json", "jsonc", "json5"]);
/** Reasoning some models write before their answer. */
const REASONING = /<(think|thinking|reasoning|reflection)>[\s\S]*?(?:<\/\1>|$)/gi;
/** Longest text searched line by line for code among prose, in lines and in characters (each line taken off costs a parse of the rest). */
const MAX_PROSE_LINES = 400;
const MAX_PROSE_CHARS = 64 * 1024;
/** Longest reply searched for its program; a longer one is passed on as it is, too long to run. */
const MAX_REPLY_CHARS = 4 * 1024 * 1024;
/** Fenced blocks looked into for the program (later fences still mark their lines as fenced). */
const MAX_FENCED_BLOCKS = 200;

interface FencedBlock {
  readonly tag: string;
  readonly body: string;
}

/** A reply's first {@link MAX_FENCED_BLOCKS} fenced blocks, and which of its lines any fence holds (its fence lines too). */
interface Fences {
  readonly blocks: readonly FencedBlock[];
  readonly fenced: Uint8Array;
}

const OPENING_FENCE = /^(\s*)(`{3,}|~{3,})\s*([\w+#.-]*)/;
const CLOSING_FENCE = /^\s*(`{3,}|~{3,})\s*$/;

/**
 * The program in a model's reply, or `null` when it holds none (empty content, a JSON object
 * whose `code` is not a string). Text that holds no recognisable code comes back as it is, for
 * the sandbox's compiler to reject with a clear message.
 *
 * @param method The method the program is for: among several code blocks, one that is a body
 *   for it is preferred over a usage example that calls it.
 * @example
 * extractProgram('Here you go:\n```js\nreturn args[0] + args[1];\n```', "add"); // "return args[0] + args[1];"
 */
export function extractProgram(content: string | null | undefined, method?: string): string | null {
  if (typeof content !== "string") return null;
  if (content.length > MAX_REPLY_CHARS) return content;
  const text = withoutReasoning(content.replace(/\r\n?/g, "\n")).trim();
  if (text === "") return null;
  // The reply's fences, found once for both ways of reading it.
  const lines = text.split("\n");
  const fences = fencedBlocks(lines);
  const structured = structuredCode(text, fences.blocks);
  if (structured !== undefined) return structured === null ? null : nonEmpty(fromText(structured, method));
  return nonEmpty(fromText(text, method, lines, fences));
}

function nonEmpty(code: string): string | null {
  return code.trim() === "" ? null : code;
}

function withoutReasoning(text: string): string {
  const stripped = text.replace(REASONING, "");
  // A closing tag with no opening one: the reasoning began in the prompt's own template.
  const close = /<\/(think|thinking|reasoning|reflection)>/i.exec(stripped);
  return close ? stripped.slice(close.index + close[0].length) : stripped;
}

/** The `code` of a JSON object reply (`undefined`: not one; `null`: one whose `code` is not a string). */
function structuredCode(text: string, blocks: readonly FencedBlock[]): string | null | undefined {
  const fromObject = (candidate: string): string | null | undefined => {
    // Also the object encoded twice (a JSON string holding it), or alone in an array, as some servers and proxies send it.
    if (!candidate.startsWith("{") && !candidate.startsWith('"') && !candidate.startsWith("[")) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(candidate);
      if (typeof parsed === "string" && parsed.trimStart().startsWith("{")) parsed = JSON.parse(parsed);
      if (Array.isArray(parsed) && parsed.length === 1) parsed = parsed[0];
    } catch {
      return undefined;
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed) || !("code" in parsed)) return undefined;
    const { code } = parsed as { code: unknown };
    return typeof code === "string" ? code : null;
  };
  const whole = fromObject(text);
  if (whole !== undefined) return whole;
  for (const block of blocks) {
    if (DATA_TAGS.has(block.tag) || block.tag === "") {
      const inFence = fromObject(block.body.trim());
      if (inFence !== undefined) return inFence;
    }
  }
  return undefined;
}

/** The program among fenced blocks, or among prose when there are none. */
function fromText(text: string, method: string | undefined, lines = text.split("\n"), fences = fencedBlocks(lines)): string {
  const { blocks, fenced } = fences;
  const candidates = blocks.filter((block) => CODE_TAGS.has(block.tag) && block.body.trim() !== "");
  if (candidates.length > 0) return bestBlock(candidates, method).body.trim();
  if (blocks.length === 0) return codeAmongProse(text);
  // Only prose, data or shell blocks: whatever code there is lies outside them.
  return codeAmongProse(lines.filter((_, index) => fenced[index] === 0).join("\n").trim());
}

/** The reply's fences, found in one pass over its lines. */
function fencedBlocks(lines: readonly string[]): Fences {
  const blocks: FencedBlock[] = [];
  const fenced = new Uint8Array(lines.length);
  for (let index = 0; index < lines.length; index += 1) {
    // Any indentation: a fence inside a list item is indented too, and so is its code.
    const open = OPENING_FENCE.exec(lines[index] as string);
    if (!open) continue;
    const indent = (open[1] as string).length;
    const fence = open[2] as string;
    let end = index + 1;
    while (end < lines.length && !closes(lines[end] as string, fence)) end += 1;
    fenced.fill(1, index, end + 1);
    if (blocks.length < MAX_FENCED_BLOCKS) {
      const body = lines.slice(index + 1, end).map((line) => (/^\s*$/.test(line.slice(0, indent)) ? line.slice(indent) : line));
      blocks.push({ tag: (open[3] ?? "").toLowerCase(), body: body.join("\n") });
    }
    index = end;
  }
  return { blocks, fenced };
}

/** Whether `line` closes a block opened by `fence`: the same mark, at least as many times, alone on its line. */
function closes(line: string, fence: string): boolean {
  const close = CLOSING_FENCE.exec(line)?.[1];
  return close !== undefined && close[0] === fence[0] && close.length >= fence.length;
}

/** Among code blocks, the one most like a body for `method`; on a tie the last (a reply's "improved version" comes after the first). */
function bestBlock(blocks: readonly FencedBlock[], method: string | undefined): FencedBlock {
  let best = blocks[0] as FencedBlock;
  let bestScore = Number.NEGATIVE_INFINITY;
  for (const block of blocks) {
    const score = bodyScore(block.body, method);
    if (score >= bestScore) {
      best = block;
      bestScore = score;
    }
  }
  return best;
}

function bodyScore(code: string, method: string | undefined): number {
  let score = 0;
  if (/\b(?:args|kwargs|context)\b/.test(code)) score += 2;
  if (/\breturn\b/.test(code)) score += 1;
  if (method !== undefined && /^[\w$]+$/.test(method)) {
    // Each run of spaces is read 20 far at most: `\s*` twice in a row, or from each of many
    // blank lines' starts, took time quadratic in a reply's length.
    if (new RegExp(`\\b(?:function[ \\t]{0,20}\\*?[ \\t]{0,20}${escape(method)}\\b|(?:const|let|var)[ \\t]{1,20}${escape(method)}[ \\t]{0,20}=)|^[ \\t]{0,20}(?:async[ \\t]{1,20})?${escape(method)}[ \\t]{0,20}\\([^)]{0,200}\\)[ \\t]{0,20}\\{`, "m").test(code)) score += 2;
    // `calc.add(2, 3)`: a call of the method on some object is how a usage example looks.
    if (new RegExp(`[\\w$)\\]]\\s*\\.\\s*${escape(method)}\\s*\\(`).test(code)) score -= 3;
  }
  return score;
}

function escape(name: string): string {
  return name.replace(/\$/g, "\\$");
}

/**
 * The code in text that may have prose around it: the whole text when it parses, else the text
 * with prose-like lines taken off its start and end (and any "Explanation:" section after the
 * code) until it parses. When nothing parses, the text as it is.
 */
function codeAmongProse(text: string): string {
  if (parseProgram(text).ok) return text;
  if (text.length > MAX_PROSE_CHARS) return text;
  let lines = text.split("\n");
  if (lines.length > MAX_PROSE_LINES) return text;
  const section = lines.findIndex((line, index) => index > 0 && /^\s*(?:\*\*|#+\s*)?(?:explanation|notes?|how it works|usage|example|this (?:code|function|body)\b)[^`]*$/i.test(line));
  if (section > 0 && parseProgram(lines.slice(0, section).join("\n")).ok) lines = lines.slice(0, section);
  while (lines.length > 0) {
    const candidate = lines.join("\n").trim();
    if (candidate !== "" && parseProgram(candidate).ok) return candidate;
    if (isProse(lines[0] as string)) lines = lines.slice(1);
    else if (isProse(lines[lines.length - 1] as string)) lines = lines.slice(0, -1);
    else break;
  }
  return text;
}

function isProse(line: string): boolean {
  const trimmed = line.trim();
  if (trimmed === "") return true;
  if (/^(?:[-*+]\s|\d+\.\s|#{1,6}\s|>\s|\*\*)/.test(trimmed)) return true;
  if (/[;{}]$/.test(trimmed) || /^(?:return|const|let|var|if|for|while|throw|await|function|class|\/\/|\/\*)\b/.test(trimmed)) return false;
  return /^[A-Za-z][A-Za-z'’,]*(?:\s+\S+){2,}/.test(trimmed) || trimmed.endsWith(":");
}
