import { randomUUID } from "node:crypto";
import { prepareRequest, sendRequest } from "../../egress/fetcher.ts";
import { cleanUrl } from "../../egress/provenance.ts";
import { bridgeFailure, type BridgeAnswer, type FetchRequest } from "../../sandbox/protocol.ts";
import type { AskingRun } from "../../sandbox/host/pending-run.ts";
import { endSpan, inSpan, startSpan } from "../../tracing/tracing.ts";
import type { ToolEffect } from "../../tools/grant.ts";
import type { Call } from "../draft.ts";
import { askApproval } from "./approval.ts";

/** Methods that only read: a program that used them may be run again; any other may change the world. */
const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * A program's `fetch(url, init)`: checked against the agent's egress policy (a refusal contacts
 * no server), approved by `toolApproval` when its method may change the world, made by the host,
 * and answered with the response, its body read whole. Every fetch is listed in the call's
 * record as the tool `"fetch"` (its method and URL, and what answered: URL, status, bytes); a
 * 2xx answer is a source of the attempt. A refusal is not retriable; a failure is.
 */
export async function answerFetch(request: FetchRequest, call: Call, run: AskingRun): Promise<BridgeAnswer<"fetch">> {
  const { state, draft } = call;
  const policy = state.options.egress;
  if (policy === undefined) return bridgeFailure("invalid_input", "fetch is not available: this agent has no egress policy.");
  const method = request.method.toUpperCase().slice(0, 20);
  const effect: ToolEffect = READ_METHODS.has(method) ? "read" : "write";
  const asked = cleanUrl(request.url, policy.secrets);
  const entry = draft.tools.start("fetch", { method, url: asked }, effect, draft.attempts);
  const span = startSpan(
    "execute_tool fetch",
    "client",
    { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "fetch", "gen_ai.tool.call.id": randomUUID(), "improv.call_id": draft.callId, "improv.tool.effect": effect, "http.request.method": method, "url.full": asked },
    draft.runSpan,
  );
  const fail = (message: string, retriable: boolean, errorType: "tool" | "cancelled" = "tool") => {
    draft.tools.end(entry, false, { errorType, message });
    endSpan(span, {}, errorType, message);
    return bridgeFailure(errorType, message, retriable);
  };
  draft.egressRequests += 1;
  if (draft.egressRequests > policy.maxRequests) return fail(`fetch ${asked}: this call has made more than ${policy.maxRequests} requests (egress.maxRequests).`, false);
  const prepared = prepareRequest(policy, request);
  if (!("url" in prepared)) return fail(prepared.message, false);
  if (run.signal.aborted) return fail(`fetch ${asked}: the call ended before the request was sent.`, false, "cancelled");
  if (effect === "write") {
    const approval = await askApproval(call, run, "fetch", { method, url: asked });
    if (!approval.approved) return approval.ended ? fail(`fetch ${asked}: the call ended while the application was asked to approve the request.`, false, "cancelled") : fail(`fetch ${asked}: denied ${approval.why}.`, false);
    if (run.signal.aborted) return fail(`fetch ${asked}: the call ended before the request was sent.`, false, "cancelled");
    // From here the world may change: the call's programs are not run again on their own.
    draft.tools.markWrote("fetch");
  }
  // Spans an HTTP client instrumentation makes for the request are children of the fetch's.
  const outcome = await inSpan(span, () => sendRequest(policy, prepared, run.signal, run.timeLeftMs()));
  if (!outcome.ok) return fail(outcome.message, !outcome.refused, outcome.cancelled ? "cancelled" : "tool");
  const answered = { url: cleanUrl(outcome.finalUrl, policy.secrets), status: outcome.response.status, bytes: outcome.bytes };
  draft.tools.end(entry, true, undefined, answered);
  endSpan(span, { "http.response.status_code": answered.status, "improv.fetch.bytes": answered.bytes });
  return { ok: true, value: outcome.response };
}
