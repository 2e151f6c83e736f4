/**
 * The host's side of the bridge: one handler per request kind (`../../sandbox/protocol.ts`,
 * `BridgeKinds`), each in a module of its own. The table is typed by the kinds, so the compiler
 * names a kind without a handler.
 */
import { type AskingRun, type BridgeAnswer, bridgeFailure, type BridgeKind, type BridgeRequest, SANDBOX_LIMITS } from "../../sandbox/index.ts";
import type { Call } from "../draft.ts";
import { answerContent } from "./content.ts";
import { answerDelegate } from "./delegate.ts";
import { answerFetch } from "./fetch.ts";
import { answerTool } from "./tool.ts";

/** What a handler is given: the request (read by the sandbox process, still untrusted in its values), the call whose program asked, and that program's run. */
export type BridgeHandler<K extends BridgeKind> = (request: BridgeRequest<K>, call: Call, run: AskingRun) => Promise<BridgeAnswer<K>>;

const HANDLERS: { readonly [K in BridgeKind]: BridgeHandler<K> } = {
  delegate: answerDelegate,
  content: answerContent,
  tool: answerTool,
  fetch: answerFetch,
};

/**
 * Answers one request of `call`'s program, within the budget of requests its call tree shares. A
 * handler that throws is answered as the host's failure by the sandbox process's routing
 * (`RunHooks.onBridge`).
 */
export function answerBridge(request: BridgeRequest, call: Call, run: AskingRun): Promise<BridgeAnswer> {
  if (!call.draft.tree.takeRequest()) {
    return Promise.resolve(bridgeFailure("budget_exceeded", `This call and the calls it delegated have made ${SANDBOX_LIMITS.maxDelegateCalls} requests of the host in all (delegated calls, tools, fetch, content), the most one application call may make.`));
  }
  const handler = HANDLERS[request.kind] as BridgeHandler<BridgeKind>;
  return handler(request, call, run);
}
