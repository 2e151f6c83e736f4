import type { PatternTag } from "../../src/telemetry/patterns.ts";

/** A generated program with the history usage a careful reader would assign it. */
export interface LabeledProgram {
  readonly name: string;
  readonly code: string;
  readonly detected: boolean;
  readonly patterns: readonly PatternTag[];
}

/**
 * The labeled set for the history scan: programs that reach the history (by every spelling)
 * and programs that only look as if they do (comments, strings, shadowing, unrelated arrays).
 */
export const LABELED_PROGRAMS: readonly LabeledProgram[] = [
  // Reaching the history.
  { name: "dot access, count", code: "return context.conversation_history.length", detected: true, patterns: ["count"] },
  { name: "filter then count", code: "return context.conversation_history.filter((r) => r.outcome_summary.ok).length", detected: true, patterns: ["count", "filter"] },
  { name: "string-literal bracket access", code: "const h = context['conversation_history']; return h.map((r) => r.method_name)", detected: true, patterns: ["map"] },
  { name: "template-literal bracket access", code: "return context[`conversation_history`].slice(-3)", detected: true, patterns: ["slice"] },
  { name: "constant bracket access", code: "const KEY = 'conversation_history'; return context[KEY].find((r) => r.method_name === 'add')", detected: true, patterns: ["find"] },
  { name: "concatenated constant key", code: "return context['conversation' + '_history'].some((r) => !r.outcome_summary.ok)", detected: true, patterns: ["find"] },
  { name: "optional chaining", code: "return context?.conversation_history?.at(-1)?.method_name ?? null", detected: true, patterns: [] },
  { name: "optional call", code: "return context.conversation_history?.filter?.((r) => r.speaker === 'user')", detected: true, patterns: ["filter"] },
  { name: "destructuring", code: "const { conversation_history } = context; return conversation_history.reduce((n, r) => n + r.args.length, 0)", detected: true, patterns: ["reduce"] },
  { name: "destructuring with renaming", code: "const { conversation_history: log } = context; for (const entry of log) if (!entry.outcome_summary.ok) return entry.call_id; return null", detected: true, patterns: ["iterate"] },
  { name: "destructuring with a default", code: "const { conversation_history: h = [] } = context; return h.toSorted((a, b) => a.timestamp.localeCompare(b.timestamp))[0]", detected: true, patterns: ["sort"] },
  { name: "alias of context", code: "const ctx = context; return ctx.conversation_history.length", detected: true, patterns: ["count"] },
  { name: "alias of the history", code: "let h; h = context.conversation_history; return h.filter((r) => r.ok).map((r) => r.call_id)", detected: true, patterns: ["filter", "map"] },
  { name: "function receiving context", code: "function failures(c) { return c.conversation_history.filter((r) => !r.outcome_summary.ok) }\nreturn failures(context).length", detected: true, patterns: ["filter"] },
  { name: "arrow receiving the history", code: "const last = (records) => records.slice(-1)[0];\nreturn last(context.conversation_history)", detected: true, patterns: ["slice"] },
  { name: "function destructuring its parameter", code: "const count = ({ conversation_history }) => conversation_history.length;\nreturn count(context)", detected: true, patterns: ["count"] },
  { name: "Object.groupBy", code: "const groups = Object.groupBy(context.conversation_history, (r) => r.method_name); return Object.keys(groups)", detected: true, patterns: ["group"] },
  { name: "Map.groupBy then size", code: "return Map.groupBy(context.conversation_history, (r) => r.speaker).size", detected: true, patterns: ["count", "group"] },
  { name: "for...of", code: "let total = 0; for (const r of context.conversation_history) total += r.duration_ms ?? 0; return total", detected: true, patterns: ["iterate"] },
  { name: "forEach", code: "const seen = new Set(); context.conversation_history.forEach((r) => seen.add(r.method_name)); return [...seen]", detected: true, patterns: ["iterate"] },
  { name: "index loop", code: "const h = context.conversation_history; let n = 0; for (let i = 0; i < h.length; i++) if (h[i].speaker === 'tool') n++; return n", detected: true, patterns: ["iterate"] },
  { name: "reduceRight", code: "return context.conversation_history.reduceRight((acc, r) => acc.concat(r.method_name), [])", detected: true, patterns: ["reduce"] },
  { name: "sort a copy then slice", code: "return [...context.conversation_history].sort((a, b) => b.duration_ms - a.duration_ms).slice(0, 3)", detected: true, patterns: ["slice", "sort"] },
  { name: "Array.from with a mapper", code: "return Array.from(context.conversation_history, (r) => r.call_id)", detected: true, patterns: ["map"] },
  { name: "findLast on a derived collection", code: "const mine = context.conversation_history.filter((r) => r.speaker === 'user'); return mine.findLast((r) => r.method_name === 'lookup')", detected: true, patterns: ["filter", "find"] },
  { name: "includes on mapped names", code: "return context.conversation_history.map((r) => r.method_name).includes('reset')", detected: true, patterns: ["find", "map"] },
  { name: "reverse and every", code: "const h = context.conversation_history.slice(); h.reverse(); return h.every((r) => r.outcome_summary.ok)", detected: true, patterns: ["find", "slice", "sort"] },
  { name: "arguments[0] is context", code: "return arguments[0].conversation_history.length", detected: true, patterns: ["count"] },
  { name: "Reflect.get", code: "return Reflect.get(context, 'conversation_history').length", detected: true, patterns: [] },
  { name: "access only", code: "const last = context.conversation_history.at(-1); return last ? last.call_id : null", detected: true, patterns: [] },
  { name: "awaited helper with the history", code: "async function scan(list) { return list.filter((r) => r.depth > 0) }\nconst deep = await scan(context.conversation_history); return deep", detected: true, patterns: ["filter"] },
  { name: "callback defined separately", code: "function isError(r) { return !r.outcome_summary.ok }\nreturn context.conversation_history.filter(isError)", detected: true, patterns: ["filter"] },
  { name: "history access in a nested function", code: "const summarize = () => context.conversation_history.length;\nreturn { calls: summarize() }", detected: true, patterns: ["count"] },

  // Looking like history access without reaching it.
  { name: "mentioned in a line comment", code: "// TODO: use context.conversation_history.filter(...) later\nreturn args[0] + args[1]", detected: false, patterns: [] },
  { name: "mentioned in a block comment", code: "/* context.conversation_history.length */ return 42", detected: false, patterns: [] },
  { name: "mentioned in a string", code: "return 'I could read context.conversation_history.map(x => x) but I do not'", detected: false, patterns: [] },
  { name: "mentioned in a template", code: "return `history lives in context.conversation_history (${args.length} args)`", detected: false, patterns: [] },
  { name: "unrelated variable named conversation_history", code: "const conversation_history = args[0]; return conversation_history.filter((x) => x > 1).length", detected: false, patterns: [] },
  { name: "shadowed context", code: "const context = { conversation_history: [1, 2, 3] }; return context.conversation_history.length", detected: false, patterns: [] },
  { name: "shadowing parameter", code: "function f(context) { return context.conversation_history.length }\nreturn f({ conversation_history: [] })", detected: false, patterns: [] },
  { name: "other context key", code: "context.history = (context.history ?? []).concat(args[0]); return context.history.length", detected: false, patterns: [] },
  { name: "operations on unrelated arrays only", code: "return args.filter((a) => a > 0).map((a) => a * 2).sort().slice(0, 2).length", detected: false, patterns: [] },
  { name: "a key that is only almost the history", code: "return context['conversation_history_backup'] ?? context.conversation_historyX ?? null", detected: false, patterns: [] },
  { name: "the in operator with a string", code: "return 'conversation_history' in context", detected: false, patterns: [] },
  { name: "computed key that is not constant", code: "const key = args[0]; return context[key]", detected: false, patterns: [] },
  { name: "object property named conversation_history", code: "const report = { conversation_history: 'none' }; return report.conversation_history", detected: false, patterns: [] },

  // Reaching the history, with operations on unrelated arrays beside it.
  { name: "history count beside unrelated array work", code: "const n = context.conversation_history.length; return args.filter((a) => a > n).map((a) => a - n)", detected: true, patterns: ["count"] },
  { name: "unrelated sort after history find", code: "const last = context.conversation_history.find((r) => r.method_name === 'add'); return [3, 1, 2].sort()", detected: true, patterns: ["find"] },
  { name: "record fields are not collections", code: "const r = context.conversation_history.at(-1); return r.args.map((a) => a * 2).filter(Boolean)", detected: true, patterns: [] },
];
