/** Figure 11: what tracing costs a call, with no tracer provider registered and with one. */
import { trace } from "@opentelemetry/api";
import { BasicTracerProvider, SimpleSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { Agent, ScriptedProvider } from "../src/index.ts";
import { endSpan, startSpan } from "../src/tracing/tracing.ts";
import { measureInterleaved, type Summary } from "./stats.ts";

/** An exporter that drops what it is given, so the figure is the spans' own cost. */
const dropping: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => undefined };

export interface TracingFigures {
  /** The three spans of a call started and ended with no provider registered (the API's no-op spans). @unit µs */
  readonly noopSpansPerCall: number;
  readonly callWithout: Summary;
  readonly callWith: Summary;
}

export async function tracingFigures(options: { count: number; warmup: number }): Promise<TracingFigures> {
  const loops = 100_000;
  const started = performance.now();
  for (let index = 0; index < loops; index += 1) {
    const invoke = startSpan("invoke_agent bench", "internal", { "gen_ai.operation.name": "invoke_agent", "improv.call_id": "c" });
    endSpan(startSpan("chat m", "client", { "gen_ai.operation.name": "chat" }, invoke));
    endSpan(startSpan("run_program add", "internal", { "improv.operation": "run_program" }, invoke));
    endSpan(invoke, { "improv.outcome.status": "ok" });
  }
  const noopSpansPerCall = ((performance.now() - started) * 1000) / loops;
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(dropping)] });
  const agent = Agent.for("bench-tracing", { provider: new ScriptedProvider({ programs: { add: "return args[0] + args[1]" } }), log: false, reuse: false });
  const summaries = await measureInterleaved(
    {
      callWithout: { task: () => agent.add(1, 2) },
      callWith: {
        task: async () => {
          trace.setGlobalTracerProvider(provider);
          try {
            await agent.add(1, 2);
          } finally {
            trace.disable();
          }
        },
      },
    },
    options.count,
    options.warmup,
  );
  await provider.shutdown();
  return { noopSpansPerCall, callWithout: summaries.callWithout, callWith: summaries.callWith };
}
