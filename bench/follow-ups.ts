/** Figure 10: follow-ups. Choosing and rendering the prompt's history block, queries, and what kept values hold, as history grows. */
import { Agent, type Provider } from "../src/index.ts";
import { choosePreview } from "../src/history/preview.ts";
import { renderPrompts } from "../src/call/prompt.ts";
import { AgentHistory } from "../src/history/agent-history.ts";
import { DEFAULT_OPTIONS } from "../src/state/options.ts";
import { syntheticRecord } from "../test-support/records.ts";
import { measure, type Summary } from "./stats.ts";

export interface FollowUpFigures {
  readonly sizes: {
    readonly records: number;
    readonly latestPrompt: Summary;
    readonly relevantPrompt: Summary;
    readonly query: Summary;
    /** Kept values after 200 calls returning ~1 KiB each, on top of the history. */
    readonly keptValues: { readonly count: number; readonly bytes: number };
  }[];
}

/** A history of `count` records, one in 20 an error. */
function historyOf(count: number): AgentHistory {
  const history = new AgentHistory();
  history.replace(
    Array.from({ length: count }, (_, index) => {
      const record = syntheticRecord(index);
      return JSON.stringify(index % 20 === 7 ? { ...record, outcome_summary: { status: "error", ok: false, error_type: "execution", retriable: false } } : record);
    }),
  );
  return history;
}

const provider: Provider = { generate: async () => ({ code: "return { rows: Array.from({ length: 40 }, (_, i) => ({ i, label: 'row ' + i })) }", model: "bench" }) };

export async function followUpFigures(options: { sizes: readonly number[]; count: number }): Promise<FollowUpFigures> {
  const sizes = [];
  for (const records of options.sizes) {
    const history = historyOf(records);
    const call = { method: "add", args: [records - 3, 4], kwargs: {} };
    const render = (strategy: "latest" | "relevant") => () => {
      const preview = choosePreview(history, { ...DEFAULT_OPTIONS.historyPreview, strategy, limit: 5 }, call);
      return renderPrompts({ role: "calculator", method: "add", args: call.args, kwargs: {}, contextKeys: [], historyCount: history.length, historyPreview: preview, previewMaxChars: 2_000 });
    };
    const latestPrompt = await measure(render("latest"), options.count, 50);
    const relevantPrompt = await measure(render("relevant"), options.count, 50);
    const query = await measure(() => history.query({ method: "multiply", status: "error", last: 10 }), options.count, 50);
    const agent = Agent.for("bench-values", { provider, log: false });
    agent.remember({ conversation_history: Array.from({ length: records }, (_, index) => syntheticRecord(index)) });
    for (let index = 0; index < 200; index += 1) await agent.rows();
    const refs = Agent.history(agent, { last: 200 }).flatMap((record) => (record.outcome_summary.content_ref === undefined ? [] : [record.outcome_summary.content_ref]));
    const values = await Promise.all(refs.map((ref) => Agent.value(agent, ref)));
    const kept = values.filter((value) => value !== undefined);
    sizes.push({ records, latestPrompt, relevantPrompt, query, keptValues: { count: kept.length, bytes: kept.reduce<number>((sum, value) => sum + JSON.stringify(value).length * 2, 0) } });
  }
  return { sizes };
}
