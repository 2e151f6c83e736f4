import { randomUUID } from "node:crypto";
import { cleanUrl, type EgressOutcome, mayWrite, type PreparedRequest, prepareRequest, type SendContext, sendRequest, sentUrl, TREE_FETCHES_IN_FLIGHT } from "../../egress/index.ts";
import { type AskingRun, type BridgeAnswer, bridgeFailure, type FetchRequest } from "../../sandbox/index.ts";
import { endSpan, inSpan, startSpan } from "../../tracing/index.ts";
import type { ToolEffect } from "../../tools/index.ts";
import type { Call } from "../draft.ts";
import { askApproval } from "./approval.ts";

/**
 * A program's `fetch(url, init)`: checked against the agent's egress policy (a refusal contacts
 * no server), approved by `toolApproval` when its method may change the world (and again for
 * each redirect that keeps such a method and its body, with the URL it leads to), made by the
 * host, and answered with the response, its body read whole. The call tree's fetches share
 * `egress.maxRequests`, the barrier and 16 requests in flight (`egress/call-tree.ts`). Every fetch is listed in the
 * call's record as the tool `"fetch"` (its method and URL, and what answered: URL, status,
 * bytes); a 2xx answer is a source of the attempt. A refusal is not retriable; a failure is.
 */
export async function answerFetch(request: FetchRequest, call: Call, run: AskingRun): Promise<BridgeAnswer<"fetch">> {
  const { state, draft } = call;
  const policy = state.options.egress;
  if (policy === undefined) return bridgeFailure("invalid_input", "fetch is not available: this agent has no egress policy.");
  const method = request.method.toUpperCase().slice(0, 20);
  const effect: ToolEffect = mayWrite(method) ? "write" : "read";
  const asked = cleanUrl(request.url, policy.redactor);
  draft.emit({ type: "fetch", method, url: asked });
  let entry = draft.tools.start("fetch", { method, url: asked }, effect, draft.asked.attempts);
  const span = startSpan(
    "execute_tool fetch",
    "client",
    { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "fetch", "gen_ai.tool.call.id": randomUUID(), "improv.call_id": draft.callId, "improv.tool.effect": effect, "http.request.method": method, "url.full": asked },
    draft.program.runSpan,
  );
  const fail = (message: string, retriable: boolean, errorType: "tool" | "cancelled" = "tool") => {
    const shown = policy.redactor.redact(message);
    draft.tools.end(entry, false, { errorType, message: shown });
    endSpan(span, {}, errorType, shown);
    return bridgeFailure(errorType, shown, retriable);
  };
  if (!draft.tree.egress.count(policy)) return fail(`fetch ${asked}: this call has made more than ${policy.maxRequests} requests (egress.maxRequests), counting the calls it delegates.`, false);
  const prepared = prepareRequest(policy, request, draft.tree.egress);
  if (!("url" in prepared)) return fail(prepared.message, false);
  let next: PreparedRequest = prepared;
  let context: SendContext & { readonly from?: URL; readonly status?: number } = { tree: draft.tree.egress };
  let outcome: EgressOutcome;
  let held: (() => void) | undefined;
  for (;;) {
    const shown = cleanUrl(next.url, policy.redactor);
    const writes = mayWrite(next.method);
    if (run.signal.aborted) return fail(`fetch ${shown}: the call ended before the request was sent.`, false, "cancelled");
    if (writes) {
      const { maxWriteCalls } = call.state.options;
      // Held before the wait for approval, so that requests made in parallel cannot all pass the limit.
      if (!draft.tools.holdWrite(maxWriteCalls)) return fail(`fetch ${shown}: ${draft.tools.writeLimitReached(maxWriteCalls)}; this request was not sent.`, false);
      try {
        // The application approves exactly what is sent: the whole URL, the program's headers and body, and for a redirect where it came from.
        const input = { ...approvedRequest(next), ...(context.from === undefined ? {} : { redirectedFrom: sentUrl(context.from), status: context.status }) };
        const approval = await askApproval(call, run, "fetch", "fetch", input);
        if (!approval.approved) return approval.ended ? fail(`fetch ${shown}: the call ended while the application was asked to approve the request.`, false, "cancelled") : fail(`fetch ${shown}: denied ${approval.why}.`, false);
        if (run.signal.aborted) return fail(`fetch ${shown}: the call ended before the request was sent.`, false, "cancelled");
        // From here the world may change: the call's programs are not run again on their own.
        draft.tools.markWrote("fetch");
      } finally {
        draft.tools.letGoWrite();
      }
    }
    const release = await draft.tree.egress.slot(run.signal);
    // A slot given up by a request that its call's end cancelled may come before this run hears of that end.
    if (release === undefined || run.signal.aborted || run.timeLeftMs() <= 0) {
      release?.();
      return fail(`fetch ${shown}: the call ended while the request waited for one of the ${TREE_FETCHES_IN_FLIGHT} its call tree may have in flight; it was not sent.`, false, "cancelled");
    }
    // A request that may write is an effect once it is sent (never undoable: a fetch has no revert); known applied once a response came.
    if (writes && entry.state === undefined) draft.tools.addEffect(entry);
    let sent: Awaited<ReturnType<typeof sendRequest>>;
    try {
      // Spans an HTTP client instrumentation makes for the request are children of the fetch's.
      sent = await inSpan(span, () => sendRequest(policy, next, run.signal, run.timeLeftMs(), context));
    } catch (error) {
      release();
      throw error;
    }
    if (sent.ok !== "redirect") {
      outcome = sent;
      // A body is let go of once it is written to the sandbox process: until then the slot is held.
      if (outcome.ok) held = release;
      else release();
      break;
    }
    release();
    if (entry.state !== undefined && mayWrite(sent.next.method)) {
      // The next hop writes again, approved and counted as a write of its own: it is an effect of
      // its own in the ledger, and this one is done, answered with the redirect.
      entry.state = "applied";
      const from = cleanUrl(sent.from, policy.redactor);
      draft.tools.end(entry, true, undefined, { url: from, status: sent.status, bytes: 0 });
      entry = draft.tools.start("fetch", { method: sent.next.method, url: cleanUrl(sent.next.url, policy.redactor), redirectedFrom: from }, "write", draft.asked.attempts);
    }
    next = sent.next;
    context = { tree: draft.tree.egress, hops: sent.hops, first: sent.first, from: sent.from, status: sent.status };
  }
  if (entry.state !== undefined && outcome.ok) entry.state = "applied";
  if (!outcome.ok) return fail(outcome.message, !outcome.refused, outcome.cancelled ? "cancelled" : "tool");
  const answered = { url: cleanUrl(outcome.finalUrl, policy.redactor), status: outcome.response.status, bytes: outcome.bytes };
  draft.tools.end(entry, true, undefined, answered);
  endSpan(span, { "http.response.status_code": answered.status, "improv.fetch.bytes": answered.bytes });
  return { ok: true, value: outcome.response, sent: held };
}

/**
 * A request as `toolApproval` is shown it: its method, whole URL, the program's own headers (by
 * lower-case name; a name given more than once with its values joined by ", ", as a server
 * reads them) and its body, when it has them.
 */
function approvedRequest(request: PreparedRequest): { method: string; url: string; headers?: Record<string, string>; body?: string } {
  const headers: Record<string, string> = {};
  for (const [given, value] of request.headers) {
    const name = given.toLowerCase();
    headers[name] = Object.hasOwn(headers, name) ? `${headers[name]}, ${value}` : value;
  }
  return {
    method: request.method,
    url: sentUrl(request.url),
    ...(request.headers.length === 0 ? {} : { headers }),
    ...(request.body === null ? {} : { body: request.body }),
  };
}
