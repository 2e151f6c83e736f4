import { Agent, type AgentProxy } from "../index.ts";
import { kw } from "../call/index.ts";
import { type Outcome, readEnv } from "../shared/index.ts";
import { AnthropicProvider, OpenAIProvider, type Provider, ScriptedProvider } from "../providers/index.ts";
import type { Store } from "../store/index.ts";
import { startNewsSite } from "./demo-news.ts";
import { SEARCH_DESCRIPTION, searchProducts } from "./demo-products.ts";
import { historyTable } from "./tables.ts";
import { mcpTools, type McpToolSet, type Tool } from "../tools/index.ts";
import { fromRetrieval, lexicalEmbedder, literal, memoryRetriever } from "../knowledge/index.ts";

/** The roles of the agents the demo makes, its helpers included: a store holding others is not the demo's alone. */
export const DEMO_ROLES: readonly string[] = ["calculator", "assistant", "toolbuilder", "statistician", "shopper", "news", "support"];

/**
 * Scripted completions for the offline demo: what a model might write for each method.
 * They stand in for the model so the demo runs with no network and no API key.
 */
export const DEMO_PROGRAMS: Record<string, string> = {
  "calculator.add": "context.value = (context.value ?? 0) + args[0];\nreturn context.value;",
  "calculator.multiply": "context.value = (context.value ?? 0) * args[0];\nreturn context.value;",
  "calculator.convert": [
    "const { from, to } = kwargs;",
    "if (from === 'c' && to === 'f') return args[0] * 9 / 5 + 32;",
    "if (from === 'f' && to === 'c') return (args[0] - 32) * 5 / 9;",
    "throw new RangeError(`cannot convert ${from} to ${to}`);",
  ].join("\n"),
  "calculator.divide": "if (args[0] === 0) throw new RangeError('division by zero');\ncontext.value = context.value / args[0];\nreturn context.value;",
  "calculator.summary": [
    "const done = context.conversation_history.filter((r) => r.outcome_summary.ok);",
    "const failed = context.conversation_history.filter((r) => !r.outcome_summary.ok);",
    "return {",
    "  computed: done.map((r) => `${r.method_name}(${r.args.join(', ')})`),",
    "  failed: failed.map((r) => `${r.method_name}: ${r.error_type}`),",
    "  current: context.value,",
    "};",
  ].join("\n"),
  "assistant.lookup": [
    "const facts = { 'boiling point of water': { answer: '100 °C at sea level', source: 'CRC Handbook' } };",
    "const fact = facts[args[0]];",
    "if (!fact) throw new Error('unknown topic');",
    "context.lastTopic = args[0];",
    "return fact.answer;",
  ].join("\n"),
  "assistant.source": [
    "const last = context.conversation_history.findLast((r) => r.method_name === 'lookup' && r.outcome_summary.ok);",
    "if (!last) return 'I have not looked anything up yet.';",
    "const sources = { 'boiling point of water': 'CRC Handbook' };",
    "return `${sources[last.args[0]]} (from call ${last.call_id.slice(0, 8)})`;",
  ].join("\n"),
  "toolbuilder.build": [
    "const stats = delegate('statistician');",
    "const mean = await stats.mean(args[0]);",
    "const spread = await stats.range(args[0]);",
    "return { mean: mean.value, range: spread.value };",
  ].join("\n"),
  "statistician.mean": "return args[0].reduce((a, b) => a + b, 0) / args[0].length;",
  "shopper.price": [
    "const { items } = await tools.catalogue.search({ query: args[0] });",
    "if (items.length === 0) throw new Error(`nothing in the catalogue matches \"${args[0]}\"`);",
    "const price = await tools.convert({ value: items[0].priceUsd, from: 'USD', to: kwargs.currency ?? 'EUR' });",
    "return `${items[0].name}: ${price.value.toFixed(2)} ${price.unit}`;",
  ].join("\n"),
  "shopper.toolsUsed": [
    "const calls = context.conversation_history.flatMap((r) => r.tool_calls ?? []);",
    "return calls.map((c) => `${c.tool}${c.ok ? '' : ' (failed)'}`);",
  ].join("\n"),
  "shopper.checkout": [
    "const placed = [];",
    "for (const query of args[0]) {",
    "  const { items } = await tools.catalogue.search({ query });",
    "  if (items.length === 0) throw new Error(`nothing in the catalogue matches \"${query}\"`);",
    "  placed.push(await tools.order({ item: items[0].name }));",
    "}",
    "return placed;",
  ].join("\n"),
  "shopper.orders": [
    "const orders = context.conversation_history.flatMap((r) => (r.tool_calls ?? []).filter((c) => c.tool === 'order'));",
    "return orders.map((c) => `${c.input.item}: ${c.state}`);",
  ].join("\n"),
  "statistician.range": "return Math.max(...args[0]) - Math.min(...args[0]);",
  "news.headlines": [
    "const response = await fetch(args[0]);",
    "if (!response.ok) throw new Error(`the feed answered ${response.status}`);",
    "const feed = await response.json();",
    "return feed.items.slice(0, 2).map((item) => item.title);",
  ].join("\n"),
  "news.sources": [
    "const last = context.conversation_history.findLast((r) => r.method_name === 'headlines' && r.outcome_summary.ok);",
    "if (!last) return 'I have not read the news yet.';",
    "return { from: last.outcome_summary.sources, call: last.call_id.slice(0, 8) };",
  ].join("\n"),
  "news.peek": "return (await fetch('http://169.254.169.254/latest/meta-data/')).status;",
  "support.answer": [
    "const kb = knowledge.find((segment) => segment.name === 'kb');",
    "const best = kb?.results?.[0];",
    "if (!best) return 'The knowledge base has nothing on that.';",
    "return `${best.content} [${best.sourceId}]`;",
  ].join("\n"),
  "support.basis": [
    "const last = context.conversation_history.findLast((r) => r.method_name === 'answer' && r.outcome_summary.ok);",
    "if (!last) return 'I have not answered anything yet.';",
    "const kb = (last.knowledge ?? []).find((k) => k.name === 'kb');",
    "return { question: last.args[0], passages: (kb?.results ?? []).map((r) => `${r.source_id} (${r.score.toFixed(2)})`) };",
  ].join("\n"),
};

/** The demo's support knowledge base: a few passages, searched by words (the offline embedder). */
const SUPPORT_PASSAGES = [
  { id: "refunds.md#1", content: "Refunds reach the original card within five working days of the return being received.", metadata: { topic: "billing" } },
  { id: "refunds.md#2", content: "Refunds for gift cards are issued as store credit.", metadata: { topic: "billing" } },
  { id: "shipping.md#1", content: "Orders ship within two working days; tracking links arrive by email.", metadata: { topic: "orders" } },
  { id: "returns.md#1", content: "Returns are free within thirty days; print the label from your account page.", metadata: { topic: "orders" } },
  { id: "account.md#1", content: "Passwords can be reset from the sign-in page with the link sent by email.", metadata: { topic: "account" } },
] as const;

/** What the demo needs from its surroundings. */
export interface DemoOptions {
  readonly log: string;
  /** Where the demo's agents are kept between runs. */
  readonly store: Store;
  readonly write: (line: string) => void;
  /** Use this provider instead of choosing from the environment. */
  readonly provider?: Provider;
}

function describeOutcome(outcome: Outcome): string {
  return outcome.ok ? `ok → ${JSON.stringify(outcome.value)}` : `error ${outcome.errorType}: ${outcome.errorMessage}`;
}

/** Runs the demo story; resolves with the agents so callers can inspect them. */
export async function runDemo(options: DemoOptions): Promise<Record<string, AgentProxy>> {
  const { write } = options;
  const liveKey = options.provider !== undefined ? undefined : readEnv("OPENAI_API_KEY") !== undefined ? "OPENAI_API_KEY" : readEnv("ANTHROPIC_API_KEY") !== undefined ? "ANTHROPIC_API_KEY" : undefined;
  const provider = options.provider ?? (liveKey === "OPENAI_API_KEY" ? new OpenAIProvider() : liveKey === "ANTHROPIC_API_KEY" ? new AnthropicProvider() : new ScriptedProvider({ programs: DEMO_PROGRAMS }));
  write(
    liveKey !== undefined
      ? `Mode: LIVE model (${(provider as OpenAIProvider | AnthropicProvider).model}) from ${liveKey}.`
      : "Mode: OFFLINE — scripted completions stand in for the model (no network, no API key).",
  );
  write(`Log: ${options.log}`);
  const earlier = (await options.store.agents()).reduce((sum, agent) => sum + agent.records, 0);
  write(
    earlier === 0
      ? `Store: ${options.store.label} (new: the agents will remember this run next time)\n`
      : `Store: ${options.store.label} (${earlier} calls remembered from earlier runs; improv demo --fresh starts over)\n`,
  );
  const common = { provider, log: options.log, store: options.store };
  const show = async (label: string, call: Promise<Outcome>) => write(`  ${label.padEnd(34)} ${describeOutcome(await call)}`);

  write("1. A calculator, with a contract: its purpose, and what each method returns (checked)");
  const calc = await Agent.open<{ value: number }, "add" | "multiply" | "convert" | "divide" | "summary">("calculator", { ...common, ...CALCULATOR_CONTRACT });
  calc.value = 5;
  write(`  calc.value = 5; calc.value          → ${calc.value} (a setter: no model call)`);
  await show("calc.add(3)", calc.add(3));
  await show("calc.multiply(4)", calc.multiply(4));
  await show("calc.convert(100, kw({c→f}))", calc.convert(100, kw({ from: "c", to: "f" })));
  await show("calc.divide(0)", calc.divide(0));
  await show("calc.summary()  [reads history]", calc.summary());

  write("\n2. An assistant answering a follow-up from history");
  const assistant = await Agent.open<{}, "lookup" | "source">("assistant", common);
  if (Agent.history(assistant).length > 0) await show("assistant.source()  [remembered]", assistant.source());
  await show("assistant.lookup('boiling point…')", assistant.lookup("boiling point of water"));
  await show("assistant.source()  [follow-up]", assistant.source());

  write("\n3. A tool builder that delegates");
  const builder = await Agent.open<{}, "build">("toolbuilder", common);
  await show("builder.build([2, 4, 9])", builder.build([2, 4, 9]));
  const stats = builder.delegate("statistician");

  write("\n4. A shopper with tools: the application's unit table, and an MCP server the demo starts");
  const catalogue = await startCatalogue(write);
  const agents: Record<string, AgentProxy> = { calculator: calc, assistant, toolbuilder: builder, "toolbuilder → statistician": stats };
  try {
    const book = new Map<string, string>();
    const placed: string[] = [];
    const shopper = await Agent.open<{}, "price" | "toolsUsed" | "checkout" | "orders">("shopper", {
      ...common,
      tools: { convert: CURRENCY_TOOL, order: orderTool(book, placed), catalogue: catalogue.tools },
      // A checkout that fails part way cancels the orders it placed.
      onFailure: "revert",
    });
    await show("shopper.price('kettle')", shopper.price("kettle"));
    await show("shopper.price('mug', kw({→GBP}))", shopper.price("mug", kw({ currency: "GBP" })));
    await show("shopper.price('unicorn')", shopper.price("unicorn"));
    await show("shopper.toolsUsed()  [reads history]", shopper.toolsUsed());
    await show("shopper.checkout(['kettle', 'unicorn'])", shopper.checkout(["kettle", "unicorn"]));
    await show("shopper.orders()  [undone? history]", shopper.orders());
    const standing = new Set(book.values());
    const cancelled = placed.filter((order) => !standing.has(order));
    write(`  order book after the failed checkout: ${book.size > 0 ? [...book.values()].join(", ") : cancelled.length > 0 ? `empty (cancelled: ${cancelled.join(", ")})` : "empty (no order was placed)"}`);
    agents.shopper = shopper;
  } finally {
    await catalogue.close();
  }

  write("\n5. A news reader with network access under a policy: a news site the demo serves itself");
  const site = await startNewsSite();
  let news: AgentProxy | undefined;
  try {
    const reader = await Agent.open<{}, "headlines" | "sources" | "peek">("news", { ...common, egress: { allow: [site.origin] } });
    write(`  egress: { allow: ["${site.origin}"] }`);
    await show("news.headlines(feed)", reader.headlines(`${site.origin}/feed.json`));
    await show("news.sources()  [where from? history]", reader.sources());
    await show("news.peek()  [the cloud metadata address]", reader.peek());
    agents.news = news = reader;
  } finally {
    await site.close();
  }

  write("\n6. A support desk answering from its knowledge base, and saying which passages it used");
  const docs = memoryRetriever({ embedder: lexicalEmbedder() });
  await docs.add(SUPPORT_PASSAGES);
  const support = await Agent.open<{}, "answer" | "basis">("support", {
    ...common,
    knowledge: [fromRetrieval(docs, { name: "kb", query: (call) => String(call.args[0] ?? call.method), topK: 2 }), literal("Answer from the passages, and cite their ids.", { name: "style" })],
  });
  write(`  knowledge: a memory retriever over ${SUPPORT_PASSAGES.length} passages (lexical embedder: words, not meaning)`);
  await show("support.answer('refunds…')", support.answer("How many days until my refund reaches the card?"));
  await show("support.basis()  [which passages?]", support.basis());
  agents.support = support;

  for (const [name, agent] of Object.entries(agents)) {
    write(`\nHistory of ${name}:\n${historyTable(Agent.history(agent))}`);
  }
  return { calc, assistant, builder, stats, ...(news === undefined ? {} : { news }), ...(agents.shopper === undefined ? {} : { shopper: agents.shopper }) };
}

/** The demo calculator's contract: shown to the model, and each value checked against its `returns`. */
const CALCULATOR_CONTRACT = {
  purpose: "A calculator that keeps a running total in context.value.",
  methods: {
    add: { description: "Adds args[0] to the running total and returns the new total.", returns: { type: "number" } },
    multiply: { description: "Multiplies the running total by args[0] and returns the new total.", returns: { type: "number" } },
    convert: { description: "Converts a temperature (args[0]) between Celsius and Fahrenheit (kwargs from and to: 'c' or 'f').", returns: { type: "number" } },
    divide: { description: "Divides the running total by args[0]; division by zero is an error.", returns: { type: "number" } },
    summary: {
      description: "What was computed so far, read from the history: the calls that worked, those that failed, the total.",
      returns: { type: "object", properties: { computed: { type: "array", items: { type: "string" } }, failed: { type: "array", items: { type: "string" } } }, required: ["computed", "failed"] },
    },
  },
} as const;

/** Exchange rates from US dollars: the application's own table, granted as a tool. */
const RATES_FROM_USD: Readonly<Record<string, number>> = { USD: 1, EUR: 0.92, GBP: 0.79, JPY: 151 };

const CURRENCY_TOOL: Tool<{ value: number; from: string; to: string }> = {
  description: "Converts an amount between currencies (USD, EUR, GBP, JPY) with the application's rate table.",
  inputSchema: {
    type: "object",
    properties: { value: { type: "number" }, from: { enum: Object.keys(RATES_FROM_USD) }, to: { enum: Object.keys(RATES_FROM_USD) } },
    required: ["value", "from", "to"],
    additionalProperties: false,
  },
  annotations: { readOnlyHint: true },
  execute: ({ value, from, to }) => ({ value: (value / (RATES_FROM_USD[from] as number)) * (RATES_FROM_USD[to] as number), unit: to }),
};

/** The demo's order desk: `order` places an order in `book` (a write tool) and lists it in `placed`; its `revert` cancels it. */
function orderTool(book: Map<string, string>, placed: string[]): Tool<{ item: string }, string> {
  return {
    description: "Places an order for one catalogue item; returns the order's id.",
    inputSchema: { type: "object", properties: { item: { type: "string" } }, required: ["item"], additionalProperties: false },
    execute: ({ item }, { idempotencyKey }) => {
      const id = `order-${book.size + 1}`;
      book.set(idempotencyKey ?? id, `${id} (${item})`);
      placed.push(`${id} (${item})`);
      return id;
    },
    // Found by the key the order was placed under, so an order whose answer was lost is found too.
    revert: (_input, _result, { idempotencyKey }) => void book.delete(idempotencyKey),
  };
}

/**
 * Starts the demo's catalogue MCP server (stdio) and lists its tools. Where it cannot start (the
 * MCP SDK, an optional dependency, is not installed), the same catalogue is served in-process,
 * so the story goes on.
 */
async function startCatalogue(write: (line: string) => void): Promise<{ readonly tools: McpToolSet | Record<string, Tool>; close(): Promise<void> }> {
  const script = new URL(`./demo-catalogue${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url);
  try {
    // The demo's own server: its hints (search is read-only) are trusted as the application's.
    const catalogue = await mcpTools({ command: process.execPath, args: [decodeURIComponent(script.pathname)] }, { trustAnnotations: true });
    write(`  MCP server "catalogue" started (stdio): tools ${Object.keys(catalogue).map((name) => `catalogue.${name}`).join(", ")}`);
    return { tools: catalogue, close: () => catalogue.close() };
  } catch (error) {
    write(`  (no MCP server: ${error instanceof Error ? error.message : String(error)}; the catalogue is served in-process instead)`);
    const search: Tool<{ query: string }> = {
      description: SEARCH_DESCRIPTION,
      inputSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"], additionalProperties: false },
      annotations: { readOnlyHint: true },
      execute: ({ query }) => searchProducts(query),
    };
    return { tools: { search }, close: async () => {} };
  }
}
