import type { PatternTag } from "../src/telemetry/patterns.ts";

/** A generated program with the history usage a careful reader would assign it. */
export interface LabeledProgram {
  readonly name: string;
  readonly code: string;
  readonly detected: boolean;
  readonly patterns: readonly PatternTag[];
}

/**
 * One-line programs: every spelling that reaches the history, and programs that only look as if
 * they do (comments, strings, shadowing, unrelated arrays).
 */
const SPELLINGS: readonly LabeledProgram[] = [
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
  { name: "function receiving context", code: "function failures(c) { return c.conversation_history.filter((r) => !r.outcome_summary.ok) }\nreturn failures(context).length", detected: true, patterns: ["count", "filter"] },
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

/**
 * Method bodies as models write them: several statements, helpers (arrow functions, function
 * declarations, object methods), destructuring, optional chaining, aliases, nested callbacks,
 * grouping and filtering by hand, index loops, serialisation; and programs of the same shapes
 * that must not be tagged.
 */
const METHOD_BODIES: readonly LabeledProgram[] = [
  // Helpers and aliases carry history values through calls and returns.
  {
    name: "arrow helper's filtered result counted",
    code: `const history = context.conversation_history ?? [];
const failed = (records) => records.filter((r) => !r.outcome_summary.ok);
const errors = failed(history);
return { total: history.length, failed: errors.length, rate: history.length ? errors.length / history.length : 0 };`,
    detected: true,
    patterns: ["count", "filter"],
  },
  {
    name: "function declaration over the history, called twice and counted",
    code: `function callsOf(name) {
  return context.conversation_history.filter((record) => record.method_name === name);
}
const adds = callsOf('add');
const subtracts = callsOf('subtract');
return adds.length + ' additions, ' + subtracts.length + ' subtractions';`,
    detected: true,
    patterns: ["count", "filter"],
  },
  {
    name: "destructured default, optional chaining, map then slice",
    code: `const { conversation_history: past = [] } = context;
const last = past.at(-1);
return last?.outcome_summary?.ok ? past.map(({ method_name }) => method_name).slice(-5) : [];`,
    detected: true,
    patterns: ["map", "slice"],
  },
  {
    name: "helper with the history as a default parameter",
    code: `function recent(n, list = context.conversation_history) {
  return list.slice(-n);
}
return recent(5).map((r) => r.method_name + '(' + r.args.join(', ') + ')');`,
    detected: true,
    patterns: ["map", "slice"],
  },
  {
    name: "helpers as methods of a local object",
    code: `const stats = {
  errors: (h) => h.filter((r) => !r.outcome_summary.ok),
  methods: (h) => h.map((r) => r.method_name),
};
const h = context.conversation_history;
return { errors: stats.errors(h).length, methods: [...new Set(stats.methods(h))] };`,
    detected: true,
    patterns: ["count", "filter", "map"],
  },
  {
    name: "helper closing over the history, result read as a record",
    code: `const lastCall = (name) => context.conversation_history.findLast((r) => r.method_name === name);
const prev = lastCall(args[0]);
return prev ? prev.outcome_summary.value_preview ?? null : null;`,
    detected: true,
    patterns: ["find"],
  },
  {
    name: "async helper awaited",
    code: `const history = context.conversation_history;
async function hasFailed(method) {
  return history.some((r) => r.method_name === method && !r.outcome_summary.ok);
}
return (await hasFailed('divide')) ? 'divide failed before' : 'no failures';`,
    detected: true,
    patterns: ["find"],
  },
  {
    name: "const alias of context with optional chaining",
    code: `const ctx = context;
const entries = ctx?.conversation_history ?? [];
return entries.filter((e) => e?.speaker === 'delegate').length;`,
    detected: true,
    patterns: ["count", "filter"],
  },
  {
    name: "a chain of aliases",
    code: `const { conversation_history } = context;
const log = conversation_history;
const items = log;
return items.map((item, index) => (index + 1) + '. ' + item.method_name).join('\\n');`,
    detected: true,
    patterns: ["map"],
  },
  {
    name: "predicate helper passed to every on a filtered copy",
    code: `const isOk = (r) => r.outcome_summary.ok;
const mine = context.conversation_history.filter((r) => r.method_name === 'withdraw');
return mine.length > 0 && mine.every(isOk);`,
    detected: true,
    patterns: ["count", "filter", "find"],
  },
  {
    name: "immediately invoked arrow",
    code: `return (() => {
  const h = context.conversation_history;
  return h.length ? h[0].timestamp : null;
})();`,
    detected: true,
    patterns: ["count"],
  },
  {
    name: "guarded with Array.isArray, filter then reduce",
    code: `const history = Array.isArray(context.conversation_history) ? context.conversation_history : [];
const total = history
  .filter((r) => r.method_name === 'add' && r.outcome_summary?.ok)
  .reduce((sum, r) => sum + Number(r.args?.[0] ?? 0), 0);
return total;`,
    detected: true,
    patterns: ["filter", "reduce"],
  },
  {
    name: "JSON round trip copy, then filtered and counted",
    code: `const copy = JSON.parse(JSON.stringify(context.conversation_history));
return copy.filter((r) => r.depth === 0).length;`,
    detected: true,
    patterns: ["count", "filter"],
  },

  // Grouping by hand: writing into an object or a Map keyed by a record's field.
  {
    name: "forEach into an object of arrays",
    code: `const byMethod = {};
context.conversation_history.forEach((entry) => {
  const key = entry.method_name;
  if (!byMethod[key]) byMethod[key] = [];
  byMethod[key].push(entry.call_id);
});
return byMethod;`,
    detected: true,
    patterns: ["group", "iterate"],
  },
  {
    name: "for...of counting into a Map",
    code: `const counts = new Map();
for (const record of context.conversation_history) {
  counts.set(record.method_name, (counts.get(record.method_name) ?? 0) + 1);
}
return Object.fromEntries(counts);`,
    detected: true,
    patterns: ["group", "iterate"],
  },
  {
    name: "reduce into a tally object",
    code: `const tally = context.conversation_history.reduce((acc, r) => {
  const status = r.outcome_summary.ok ? 'ok' : r.outcome_summary.error_type;
  acc[status] = (acc[status] || 0) + 1;
  return acc;
}, {});
return tally;`,
    detected: true,
    patterns: ["group", "reduce"],
  },
  {
    name: "forEach with a function expression into nested counters",
    code: `const summary = {};
context.conversation_history.forEach(function (rec) {
  const m = rec.method_name;
  summary[m] = summary[m] || { ok: 0, failed: 0 };
  if (rec.outcome_summary.ok) summary[m].ok++;
  else summary[m].failed++;
});
return summary;`,
    detected: true,
    patterns: ["group", "iterate"],
  },
  {
    name: "destructuring loop variable, counter object, top entry by sort",
    code: `const counts = {};
for (const { method_name } of context.conversation_history) counts[method_name] = (counts[method_name] || 0) + 1;
const [top] = Object.entries(counts).sort((a, b) => b[1] - a[1]);
return top ? top[0] : null;`,
    detected: true,
    patterns: ["group", "iterate", "sort"],
  },
  {
    name: "logical assignment grouping, then group sizes",
    code: `const groups = {};
for (const r of context.conversation_history) {
  (groups[r.outcome_summary.error_type ?? 'ok'] ||= []).push(r);
}
return Object.keys(groups).map((k) => k + ': ' + groups[k].length);`,
    detected: true,
    patterns: ["count", "group", "iterate", "map"],
  },
  {
    name: "index loop grouping into a Map of arrays",
    code: `const h = context.conversation_history;
const byDepth = new Map();
for (let i = 0; i < h.length; i++) {
  const d = h[i].depth ?? 0;
  if (!byDepth.has(d)) byDepth.set(d, []);
  byDepth.get(d).push(h[i].call_id);
}
return [...byDepth.entries()];`,
    detected: true,
    patterns: ["group", "iterate"],
  },
  {
    name: "first time of each method in a Map, then its size",
    code: `const seen = new Map();
for (const r of context.conversation_history) if (!seen.has(r.method_name)) seen.set(r.method_name, r.timestamp);
return { distinct: seen.size, first: Object.fromEntries(seen) };`,
    detected: true,
    patterns: ["count", "group", "iterate"],
  },
  {
    name: "Object.groupBy entries with group sizes in a nested callback",
    code: `const grouped = Object.groupBy(context.conversation_history, (r) => r.method_name);
return Object.entries(grouped).map(([method, calls]) => ({ method, calls: calls.length, failed: calls.filter((c) => !c.outcome_summary.ok).length }));`,
    detected: true,
    patterns: ["count", "filter", "group", "map"],
  },
  {
    name: "for...of over Object.groupBy entries",
    code: `const groups = Object.groupBy(context.conversation_history, (r) => r.speaker);
const lines = [];
for (const [speaker, records] of Object.entries(groups)) lines.push(speaker + ': ' + records.length);
return lines;`,
    detected: true,
    patterns: ["count", "group", "iterate"],
  },

  // Index loops over the history.
  {
    name: "backward index loop",
    code: `const h = context.conversation_history;
for (let i = h.length - 1; i >= 0; i--) {
  if (h[i].method_name === 'deposit' && h[i].outcome_summary.ok) return h[i].args[0];
}
return null;`,
    detected: true,
    patterns: ["iterate"],
  },
  {
    name: "index loop with the length cached in its header",
    code: `const records = context.conversation_history;
let errors = 0;
for (let i = 0, n = records.length; i < n; i += 1) {
  if (records[i].outcome_summary.status === 'error') errors += 1;
}
return errors;`,
    detected: true,
    patterns: ["iterate"],
  },
  {
    name: "index loop with the length in a constant",
    code: `const history = context.conversation_history;
const n = history.length;
let streak = 0;
for (let i = n - 1; i >= 0; i--) {
  if (!history[i].outcome_summary.ok) break;
  streak++;
}
return streak;`,
    detected: true,
    patterns: ["iterate"],
  },
  {
    name: "while loop scanning forward",
    code: `const h = context.conversation_history;
let i = 0;
while (i < h.length && h[i].speaker !== 'user') i++;
return i;`,
    detected: true,
    patterns: ["iterate"],
  },
  {
    name: "for...of over entries()",
    code: `for (const [i, r] of context.conversation_history.entries()) {
  if (r.method_name === args[0]) return i;
}
return -1;`,
    detected: true,
    patterns: ["iterate"],
  },

  // Counts of derived arrays; the last record by index is not a count.
  {
    name: "failures collected by hand, then counted",
    code: `const failures = [];
for (const r of context.conversation_history) {
  if (r.outcome_summary && !r.outcome_summary.ok) failures.push({ method: r.method_name, error: r.outcome_summary.error_type });
}
return { count: failures.length, failures };`,
    detected: true,
    patterns: ["count", "iterate"],
  },
  {
    name: "a Set of mapped names, its size",
    code: `const methods = new Set(context.conversation_history.map((r) => r.method_name));
return methods.size;`,
    detected: true,
    patterns: ["count", "map"],
  },
  {
    name: "spread of a Set of mapped names, its length",
    code: `const history = context.conversation_history;
return [...new Set(history.map((h) => h.method_name))].length;`,
    detected: true,
    patterns: ["count", "map"],
  },
  {
    name: "flatMap of record arguments, mean of the numbers",
    code: `const numbers = context.conversation_history.flatMap((r) => r.args.filter((a) => typeof a === 'number'));
return numbers.reduce((a, b) => a + b, 0) / (numbers.length || 1);`,
    detected: true,
    patterns: ["count", "map", "reduce"],
  },
  {
    name: "durations collected by hand, sorted, median by index",
    code: `const durations = [];
context.conversation_history.forEach((r) => {
  if (typeof r.duration_ms === 'number') durations.push(r.duration_ms);
});
durations.sort((a, b) => a - b);
return durations[Math.floor(durations.length / 2)] ?? null;`,
    detected: true,
    patterns: ["iterate", "sort"],
  },
  {
    name: "empty check, then the last record by index",
    code: `const history = context.conversation_history;
if (history.length === 0) return null;
const last = history[history.length - 1];
return last.method_name;`,
    detected: true,
    patterns: ["count"],
  },
  {
    name: "the last record by index only",
    code: `const h = context.conversation_history;
const prev = h[h.length - 1];
return prev?.args?.[0] ?? 0;`,
    detected: true,
    patterns: [],
  },
  {
    name: "filter, sort, slice and map with destructured parameters",
    code: `const slowest = context.conversation_history
  .filter(({ duration_ms }) => typeof duration_ms === 'number')
  .sort((a, b) => b.duration_ms - a.duration_ms)
  .slice(0, 3)
  .map(({ call_id, duration_ms }) => ({ call_id, duration_ms }));
return slowest;`,
    detected: true,
    patterns: ["filter", "map", "slice", "sort"],
  },
  {
    name: "findIndex",
    code: `const idx = context.conversation_history.findIndex((r) => !r.outcome_summary.ok);
return idx === -1 ? 'all good' : 'first failure at ' + idx;`,
    detected: true,
    patterns: ["find"],
  },
  {
    name: "filter with a nested some over a record's tool calls",
    code: `const tooled = context.conversation_history.filter((r) => (r.tool_calls ?? []).some((t) => t.name === 'fetch'));
return tooled.map((r) => r.call_id);`,
    detected: true,
    patterns: ["filter", "map"],
  },
  {
    name: "a numeric reduce is not a grouping",
    code: `return context.conversation_history.reduce((total, r) => total + (r.method_name === 'deposit' ? r.args[0] : 0), 0);`,
    detected: true,
    patterns: ["reduce"],
  },
  {
    name: "counting outcomes in plain variables is not a grouping",
    code: `let ok = 0;
let failed = 0;
for (const r of context.conversation_history) {
  if (r.outcome_summary.ok) ok++;
  else failed++;
}
return { ok, failed };`,
    detected: true,
    patterns: ["iterate"],
  },

  // Serialisation is not a query.
  {
    name: "serialised history: its length and a slice of the text",
    code: `const snapshot = JSON.stringify(context.conversation_history);
return { bytes: snapshot.length, preview: snapshot.slice(0, 200) };`,
    detected: true,
    patterns: [],
  },
  {
    name: "size of the serialised history",
    code: `return JSON.stringify(context.conversation_history).length > 10000 ? 'large' : 'small';`,
    detected: true,
    patterns: [],
  },
  {
    name: "a slice serialised into a message",
    code: `const recent = context.conversation_history.slice(-3);
return 'Recent calls: ' + JSON.stringify(recent);`,
    detected: true,
    patterns: ["slice"],
  },

  // Same shapes, nothing of the history queried.
  {
    name: "grouping the arguments by type",
    code: `const byType = {};
for (const value of args) {
  const type = typeof value;
  (byType[type] ??= []).push(value);
}
return byType;`,
    detected: false,
    patterns: [],
  },
  {
    name: "indexing the arguments by id in a forEach",
    code: `const index = {};
args.forEach((item, i) => {
  index[item.id ?? i] = item;
});
return index;`,
    detected: false,
    patterns: [],
  },
  {
    name: "copying one record's named arguments",
    code: `const last = context.conversation_history.at(-1);
const out = {};
for (const [key, value] of Object.entries(last?.kwargs ?? {})) out[key] = String(value);
return out;`,
    detected: true,
    patterns: [],
  },
  {
    name: "index loop over the arguments beside a history count",
    code: `let sum = 0;
for (let i = 0; i < args.length; i++) sum += args[i];
return { sum, calls: context.conversation_history.length };`,
    detected: true,
    patterns: ["count"],
  },
  {
    name: "a generic helper used on the arguments only",
    code: `const unique = (xs) => [...new Set(xs)];
const names = unique(args.map(String));
return { names: names.sort(), seen: context.conversation_history.length };`,
    detected: true,
    patterns: ["count"],
  },
  {
    name: "a helper used on the history and on the arguments, by index",
    code: `const lastOf = (xs) => xs[xs.length - 1];
const prev = lastOf(context.conversation_history);
const lastArg = lastOf(args);
return { prev: prev?.method_name, lastArg };`,
    detected: true,
    patterns: [],
  },
  {
    name: "string work on one record's method name",
    code: `const last = context.conversation_history.at(-1);
return last ? last.method_name.split('_').map((w) => w[0].toUpperCase() + w.slice(1)).join(' ') : '';`,
    detected: true,
    patterns: [],
  },
  {
    name: "one record's arguments serialised as a key, unrelated sort",
    code: `const key = JSON.stringify(context.conversation_history.at(-1)?.args ?? []);
return args.slice().sort().join(',') + key;`,
    detected: true,
    patterns: [],
  },
  {
    name: "a local object with a conversation_history key",
    code: `console.log('checking conversation_history');
const state = { conversation_history: [], total: 0 };
state.total += args[0];
state.conversation_history.push(args[0]);
return state.conversation_history.length;`,
    detected: false,
    patterns: [],
  },
  {
    name: "a helper whose parameter is named history",
    code: `function summarize(history) {
  return history.map((h) => h.name).join(', ');
}
return summarize(args[0] ?? []);`,
    detected: false,
    patterns: [],
  },

  // Further method bodies of these shapes, in other styles.
  {
    name: "switch counting in a for...of, with the total",
    code: `const history = context.conversation_history || [];
let adds = 0, subs = 0;
for (const call of history) {
  switch (call.method_name) {
    case 'add': adds++; break;
    case 'subtract': subs++; break;
  }
}
return { adds, subs, total: history.length };`,
    detected: true,
    patterns: ["count", "iterate"],
  },
  {
    name: "hoisted helper collecting errors by hand",
    code: `const errors = collectErrors(context.conversation_history);
return errors.length ? errors.map((e) => e.call_id) : 'none';

function collectErrors(list) {
  const out = [];
  for (const item of list) {
    if (item.outcome_summary?.status === 'error') out.push(item);
  }
  return out;
}`,
    detected: true,
    patterns: ["count", "iterate", "map"],
  },
  {
    name: "calls per day keyed by a slice of the timestamp",
    code: `const perDay = {};
for (const entry of context.conversation_history) {
  const day = entry.timestamp.slice(0, 10);
  perDay[day] = (perDay[day] ?? 0) + 1;
}
return perDay;`,
    detected: true,
    patterns: ["group", "iterate"],
  },
  {
    name: "Map.groupBy then Array.from with a mapper",
    code: `const byRole = Map.groupBy(context.conversation_history, (r) => r.speaker);
return Array.from(byRole, ([speaker, records]) => ({ speaker, n: records.length }));`,
    detected: true,
    patterns: ["count", "group", "map"],
  },
  {
    name: "reversed copy, then find",
    code: `const recentFirst = context.conversation_history.slice().reverse();
const lastDeposit = recentFirst.find((r) => r.method_name === 'deposit');
return lastDeposit?.args?.[0] ?? 0;`,
    detected: true,
    patterns: ["find", "slice", "sort"],
  },
  {
    name: "helper destructuring context in its parameter",
    code: "function report({ conversation_history: calls }) {\n  const failed = calls.filter((c) => !c.outcome_summary.ok);\n  return `${failed.length}/${calls.length} failed`;\n}\nreturn report(context);",
    detected: true,
    patterns: ["count", "filter"],
  },
  {
    name: "every on the history",
    code: "return context.conversation_history.every((r) => r.outcome_summary.ok) ? 'clean' : 'has errors';",
    detected: true,
    patterns: ["find"],
  },
  {
    name: "group by hand, then averages per group",
    code: `const groups = {};
context.conversation_history.forEach((r) => {
  groups[r.method_name] ??= [];
  groups[r.method_name].push(r.duration_ms ?? 0);
});
const averages = {};
for (const [method, durations] of Object.entries(groups)) {
  averages[method] = durations.reduce((a, b) => a + b, 0) / durations.length;
}
return averages;`,
    detected: true,
    patterns: ["count", "group", "iterate", "reduce"],
  },
  {
    name: "numbered lines with map and a template",
    code: "const lines = context.conversation_history.map((r, i) => `${i + 1}. ${r.method_name} -> ${r.outcome_summary.ok ? 'ok' : 'error'}`);\nreturn lines.join('\\n');",
    detected: true,
    patterns: ["map"],
  },
  {
    name: "a variable named history from the arguments",
    code: `const history = args[0] || [];
return history.filter((x) => x.ok).length;`,
    detected: false,
    patterns: [],
  },
  {
    name: "word frequencies of an argument",
    code: `const freq = {};
args[0].split(' ').forEach((word) => { freq[word] = (freq[word] || 0) + 1; });
return freq;`,
    detected: false,
    patterns: [],
  },
  {
    name: "last record serialised into the context",
    code: `context.lastSnapshot = JSON.stringify(context.conversation_history.slice(-1));
return 'saved';`,
    detected: true,
    patterns: ["slice"],
  },
  {
    name: "filtered count inside a template",
    code: "return `You have called add ${context.conversation_history.filter(r => r.method_name === 'add').length} times.`;",
    detected: true,
    patterns: ["count", "filter"],
  },
  {
    name: "indexOf on mapped names",
    code: `const names = context.conversation_history.map(({ method_name }) => method_name);
return names.indexOf('reset') === -1 ? names.length : names.length - names.indexOf('reset') - 1;`,
    detected: true,
    patterns: ["count", "find", "map"],
  },
  {
    name: "while loop popping a copy",
    code: `const queue = [...context.conversation_history];
let found = null;
while (queue.length) {
  const r = queue.pop();
  if (r.method_name === 'set') { found = r; break; }
}
return found?.args[0];`,
    detected: true,
    patterns: ["iterate"],
  },
  {
    name: "reduce into a Map",
    code: `const byMethod = context.conversation_history.reduce((map, r) => map.set(r.method_name, (map.get(r.method_name) || 0) + 1), new Map());
return Object.fromEntries(byMethod);`,
    detected: true,
    patterns: ["group", "reduce"],
  },
  {
    name: "findLast result destructured with a default",
    code: `const { args: lastArgs = [] } = context.conversation_history.findLast((r) => r.method_name === 'multiply') ?? {};
return lastArgs.reduce((a, b) => a * b, 1);`,
    detected: true,
    patterns: ["find"],
  },
  {
    name: "some per argument, unrelated push",
    code: `const h = context.conversation_history;
const fresh = [];
for (const a of args) {
  if (!h.some((r) => r.args.includes(a))) fresh.push(a);
}
return fresh;`,
    detected: true,
    patterns: ["find"],
  },
  {
    name: "index loop comparing neighbours",
    code: `const h = context.conversation_history;
let changes = 0;
for (let i = 1; i < h.length; i++) {
  if (h[i].method_name !== h[i - 1].method_name) changes++;
}
return changes;`,
    detected: true,
    patterns: ["iterate"],
  },
  {
    name: "sorted copy by timestamp, first element",
    code: `const sorted = [...context.conversation_history].sort((a, b) => a.timestamp.localeCompare(b.timestamp));
return sorted[0]?.call_id ?? null;`,
    detected: true,
    patterns: ["sort"],
  },
  {
    name: "optional chained length",
    code: "return context.conversation_history?.length ?? 0;",
    detected: true,
    patterns: ["count"],
  },
  {
    name: "groupBy of a filtered list, sorted keys",
    code: `const failures = context.conversation_history.filter((r) => !r.outcome_summary.ok);
const byType = Object.groupBy(failures, (r) => r.outcome_summary.error_type);
return Object.keys(byType).sort();`,
    detected: true,
    patterns: ["filter", "group", "sort"],
  },
  {
    name: "helpers composed",
    code: `const h = context.conversation_history;
const ok = (list) => list.filter((r) => r.outcome_summary.ok);
const recent = (list, n) => list.slice(-n);
return recent(ok(h), 3).map((r) => r.value_ref ?? r.call_id);`,
    detected: true,
    patterns: ["filter", "map", "slice"],
  },
  {
    name: "sorting the arguments with a comparator helper",
    code: `const byLength = (a, b) => a.length - b.length;
return [...args].sort(byLength);`,
    detected: false,
    patterns: [],
  },
  {
    name: "typeof check only",
    code: `if (typeof context.conversation_history === 'undefined') return 0;
return 1;`,
    detected: true,
    patterns: [],
  },
  {
    name: "failure ratio with a counter",
    code: `let failures = 0;
const all = context.conversation_history;
for (const r of all) if (r.outcome_summary.status === 'error') failures++;
return all.length === 0 ? 0 : failures / all.length;`,
    detected: true,
    patterns: ["count", "iterate"],
  },
  {
    name: "helper returning a tally, its key count",
    code: `function tally(records) {
  const counts = {};
  records.forEach((r) => { counts[r.speaker] = (counts[r.speaker] || 0) + 1; });
  return counts;
}
const counts = tally(context.conversation_history);
return Object.keys(counts).length;`,
    detected: true,
    patterns: ["count", "group", "iterate"],
  },
  {
    name: "forEach with index collecting ids, then slice",
    code: `const out = [];
context.conversation_history.forEach((r, i) => {
  if (i > 0 && r.outcome_summary.ok) out.push(r.call_id);
});
return out.slice(-2);`,
    detected: true,
    patterns: ["iterate", "slice"],
  },
  {
    name: "records made from the arguments, stored in the context",
    code: `const records = args.map((a) => ({ value: a }));
context.records = records;
return records.length;`,
    detected: false,
    patterns: [],
  },
  {
    name: "sizes of the groups",
    code: `const groups = Object.groupBy(context.conversation_history, ({ method_name }) => method_name);
const sizes = Object.values(groups).map((g) => g.length);
return Math.max(...sizes);`,
    detected: true,
    patterns: ["count", "group", "map"],
  },
  {
    name: "length by destructuring",
    code: `const { length } = context.conversation_history;
return length > 10 ? 'busy' : 'quiet';`,
    detected: true,
    patterns: ["count"],
  },
  {
    name: "index loop bounded by Math.min",
    code: `let text = '';
for (let i = 0; i < Math.min(5, context.conversation_history.length); i++) {
  const r = context.conversation_history.at(-1 - i);
  text += r.method_name + '\\n';
}
return text;`,
    detected: true,
    patterns: ["iterate"],
  },
  {
    name: "filter then forEach pushing ids",
    code: `const ids = [];
context.conversation_history.filter((r) => r.depth > 0).forEach((r) => ids.push(r.call_id));
return ids;`,
    detected: true,
    patterns: ["filter", "iterate"],
  },
  {
    name: "arguments.length only",
    code: "return arguments.length;",
    detected: false,
    patterns: [],
  },
  {
    name: "dedupe by serialised arguments, then count",
    code: `const seen = new Set();
const unique = [];
for (const r of context.conversation_history) {
  const key = JSON.stringify(r.args);
  if (!seen.has(key)) { seen.add(key); unique.push(r); }
}
return unique.length;`,
    detected: true,
    patterns: ["count", "iterate"],
  },
];

/** The labeled set for the history scan (`npm run scan-accuracy`, spec/telemetry/scan.test.ts). */
export const LABELED_PROGRAMS: readonly LabeledProgram[] = [...SPELLINGS, ...METHOD_BODIES];
