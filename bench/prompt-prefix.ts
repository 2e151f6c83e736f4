/**
 * Figure 14: how much of a typical prompt is a prefix a server can cache. improv puts what is the
 * same for every call of a role first (the system prompt: rules, purpose, tools, network) and
 * what changes last (the user prompt: method, arguments, history). For each call after an
 * agent's first, the share is the longest prefix its request shares with an earlier request of
 * the same agent, over the request's length.
 */
import { Agent, ScriptedProvider, type ScriptedCall } from "../src/index.ts";

export interface PromptPrefixFigures {
  /** Per kind of agent: median share of a request's characters that an earlier request began with, and the request's median length. */
  readonly agents: readonly { readonly agent: string; readonly calls: number; readonly medianShare: number; readonly medianChars: number; readonly systemShare: number }[];
}

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

function commonPrefix(a: string, b: string): number {
  const limit = Math.min(a.length, b.length);
  let i = 0;
  while (i < limit && a.charCodeAt(i) === b.charCodeAt(i)) i += 1;
  return i;
}

/** A request as a server sees it: the system prompt, then the user prompt. */
const requestText = (call: ScriptedCall) => `${call.system}\n\n${call.user}`;

async function figureFor(agent: string, make: (provider: ScriptedProvider) => Record<string, (...args: unknown[]) => Promise<unknown>>, calls: number): Promise<PromptPrefixFigures["agents"][number]> {
  const provider = new ScriptedProvider({ programs: (request) => `context.calls = (context.calls ?? 0) + 1; return ${JSON.stringify(request.method)}` });
  const proxy = make(provider);
  const methods = ["add", "convert", "summarize", "lookup", "plan", "total", "average", "describe"];
  for (let i = 0; i < calls; i += 1) await proxy[methods[i % methods.length]!]!(i, `item ${i}`, { note: "x".repeat(i % 40) });
  const texts = provider.calls.map(requestText);
  const shares: number[] = [];
  const systemShares: number[] = [];
  for (let i = 1; i < texts.length; i += 1) {
    const text = texts[i]!;
    const best = Math.max(...texts.slice(0, i).map((earlier) => commonPrefix(earlier, text)));
    shares.push(best / text.length);
    systemShares.push(provider.calls[i]!.system.length / text.length);
  }
  return { agent, calls: texts.length, medianShare: median(shares), medianChars: median(texts.map((text) => text.length)), systemShare: median(systemShares) };
}

export async function promptPrefixFigures(options: { calls: number }): Promise<PromptPrefixFigures> {
  const tools = {
    weather: { description: "Current weather for a city.", inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }, execute: async () => ({ temperature: 21 }) },
    search: { description: "Search the product catalogue.", inputSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] }, execute: async () => [] },
  };
  const as = (agent: unknown) => agent as Record<string, (...args: unknown[]) => Promise<unknown>>;
  return {
    agents: [
      await figureFor("calculator (no tools)", (provider) => as(Agent.for("calculator", { provider, log: false, reuse: false })), options.calls),
      await figureFor("assistant (2 tools, egress, purpose)", (provider) => as(Agent.for("assistant", { provider, log: false, reuse: false, tools, egress: { allow: ["https://api.example.com"] }, purpose: "Answers questions about orders and the weather for a shop's customers." })), options.calls),
    ],
  };
}
