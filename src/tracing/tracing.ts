/**
 * Optional OpenTelemetry spans, following the OpenTelemetry semantic conventions for generative
 * AI at version 1.37.0 (`gen_ai.*`; Development status there), with improv's own attributes
 * under `improv.*`. `@opentelemetry/api` is an optional peer dependency, loaded once, never
 * bundled; without it every function here does nothing. Parents are passed explicitly, so spans
 * nest even where the application registered no context manager.
 */
import { createRequire } from "node:module";
import type * as OtelApi from "@opentelemetry/api";

declare const SPAN: unique symbol;
/** An OpenTelemetry span, opaque outside this module: improv's type declarations do not need `@opentelemetry/api`, an optional peer. */
export interface Span {
  readonly [SPAN]: true;
}
const otelSpan = (span: Span): OtelApi.Span => span as unknown as OtelApi.Span;

/** The semantic-conventions version the span names and attributes follow. */
export const GEN_AI_SEMCONV_VERSION = "1.37.0";

const VERSION = "0.1.0";

let api: typeof OtelApi | null | undefined;

/** The application's `@opentelemetry/api`, or null when it has none. Resolved from the application's side, once. */
function otel(): typeof OtelApi | null {
  if (api !== undefined) return api;
  try {
    api = createRequire(import.meta.url)("@opentelemetry/api") as typeof OtelApi;
  } catch {
    api = null;
  }
  return api;
}

let tracerOf: { provider: OtelApi.TracerProvider; tracer: OtelApi.Tracer } | undefined;
let noopProvider: OtelApi.TracerProvider | undefined;

/**
 * improv's tracer from the provider registered now (made once per provider); undefined when
 * no provider is registered (the API alone makes only spans that record nothing).
 */
function tracer(otelApi: typeof OtelApi): OtelApi.Tracer | undefined {
  const registered = otelApi.trace.getTracerProvider();
  const provider = registered instanceof otelApi.ProxyTracerProvider ? registered.getDelegate() : registered;
  noopProvider ??= new otelApi.ProxyTracerProvider().getDelegate();
  if (provider === noopProvider) return undefined;
  if (tracerOf?.provider !== provider) tracerOf = { provider, tracer: provider.getTracer("improv", VERSION) };
  return tracerOf.tracer;
}

type Attributes = Record<string, string | number | boolean | undefined>;

function clean(attributes: Attributes): OtelApi.Attributes {
  const out: OtelApi.Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value;
  return out;
}

/**
 * Starts a span as a child of `parent` (or of the active span, for a call the application
 * made); undefined when tracing is off.
 */
export function startSpan(name: string, kind: "internal" | "client", attributes: Attributes, parent?: Span): Span | undefined {
  const otelApi = otel();
  if (otelApi === null) return undefined;
  const active = tracer(otelApi);
  if (active === undefined) return undefined;
  const context = parent === undefined ? otelApi.context.active() : otelApi.trace.setSpan(otelApi.context.active(), otelSpan(parent));
  return active.startSpan(name, { kind: kind === "client" ? otelApi.SpanKind.CLIENT : otelApi.SpanKind.INTERNAL, attributes: clean(attributes) }, context) as unknown as Span;
}

/** Ends a span with more attributes; an `errorType` marks it failed (`error.type`). */
export function endSpan(given: Span | undefined, attributes: Attributes = {}, errorType?: string, message?: string): void {
  if (given === undefined) return;
  const span = otelSpan(given);
  // With the API but no SDK (or a span sampled out) nothing is recorded: no attributes to build.
  if (!span.isRecording()) {
    span.end();
    return;
  }
  span.setAttributes(clean({ ...attributes, ...(errorType === undefined ? {} : { "error.type": errorType }) }));
  if (errorType !== undefined) span.setStatus({ code: otel()?.SpanStatusCode.ERROR ?? 2, ...(message === undefined ? {} : { message }) });
  span.end();
}

/**
 * Runs `work` with `span` as the active span, so spans the application's own code starts inside
 * it (a tool's HTTP client, its database driver) are its children, where the application
 * registered a context manager. Without a span, `work` runs as it is.
 */
export function inSpan<T>(span: Span | undefined, work: () => T): T {
  const otelApi = span === undefined ? null : otel();
  if (otelApi === null || span === undefined) return work();
  return otelApi.context.with(otelApi.trace.setSpan(otelApi.context.active(), otelSpan(span)), work);
}

/** The ids a log line carries to join it to its span, or nothing when the span records nothing. */
export function spanIds(span: Span | undefined): { otel_trace_id: string; otel_span_id: string } | undefined {
  if (span === undefined || !otelSpan(span).isRecording()) return undefined;
  const { traceId, spanId } = otelSpan(span).spanContext();
  return { otel_trace_id: traceId, otel_span_id: spanId };
}
