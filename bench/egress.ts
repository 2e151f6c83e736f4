/** Figure 13: what a program's fetch costs beyond the request itself, against the same request made by the host. */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent as Dispatcher, fetch as hostFetch } from "undici";
import { Agent, ScriptedProvider } from "../src/index.ts";
import { redactorFor } from "../src/egress/redaction.ts";
import { requestFloors } from "./baselines.ts";
import { expectOk, measure, measureInterleaved, type Summary } from "./stats.ts";

export interface EgressFigures {
  /** A call whose program fetches from a local server once, the same call without the fetch, and the host fetching the same URL itself: alternating rounds. */
  readonly withFetch: Summary;
  readonly withoutFetch: Summary;
  readonly hostFetch: Summary;
  /** The call with the fetch, from an origin the host adds a credential for: every string of the answer redacted, the call tree's barrier kept. */
  readonly withCredentials: Summary;
  /** Redacting a 5 MB body that holds no credential, for a bearer token and a cookie. @unit µs */
  readonly redaction5Mb: Summary;
  /** What a fetch from a program adds beyond the request itself: with − without − the host's own fetch (p50s). @unit µs */
  readonly overheadP50: number;
  /** (d) and (e) in the same rounds (see figure 12's floors): (e) − (d) is what any request from a program costs before improv's own work. */
  readonly sandboxRoundTrip: Summary;
  readonly bridgeRoundTrip: Summary;
  /** What a fetch adds beyond the request itself and beyond that floor: `overheadP50` − ((e) − (d)). @unit µs */
  readonly beyondFloorP50: number;
  /** Requests the provider received: one per method when every timed call ran a kept program. */
  readonly providerRequests: number;
}

export async function egressFigures(options: { count: number; warmup: number }): Promise<EgressFigures> {
  const server = createServer((_request, response) => {
    response.setHeader("content-type", "application/json");
    response.end('{"headline":"Rain tomorrow"}');
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const url = `${origin}/feed`;
  const credentialed = Agent.for("bench-egress-credentials", {
    provider: new ScriptedProvider({ programs: { withCredentials: `const r = await fetch("${url}"); return (await r.json()).headline.length + args[0]` } }),
    log: false,
    egress: { allow: [origin], headers: { [origin]: { authorization: "Bearer bench-token-0123456789abcdef", cookie: "sid=bench-session-0123456789" } } },
  });
  // Reuse on: after the warm-up every call runs its kept program, so the two calls differ by the fetch alone.
  const provider = new ScriptedProvider({ programs: { withFetch: `const r = await fetch("${url}"); return (await r.json()).headline.length + args[0]`, withoutFetch: "return 13 + args[0]" } });
  const agent = Agent.for("bench-egress", { provider, log: false, egress: { allow: [origin] } });
  // The host's own request: the same client, a pool of its own, keep-alive alike.
  const dispatcher = new Dispatcher({ keepAliveTimeout: 1_000 });
  let floors: Awaited<ReturnType<typeof requestFloors>> | undefined;
  try {
    floors = await requestFloors();
    const figures = await measureInterleaved(
      {
        withFetch: { task: () => expectOk(agent.withFetch(1)) },
        withoutFetch: { task: () => expectOk(agent.withoutFetch(1)) },
        hostFetch: { task: async () => (await (await hostFetch(url, { dispatcher })).json()) as unknown },
        withCredentials: { task: () => expectOk(credentialed.withCredentials(1)) },
        ...floors.subjects,
      },
      options.count,
      options.warmup,
    );
    const redactor = redactorFor([
      ["authorization", "Bearer bench-token-0123456789abcdef"],
      ["cookie", "sid=bench-session-0123456789"],
    ]);
    const body = '{"headline":"Rain tomorrow","text":"lorem ipsum dolor sit amet"} '.repeat(Math.ceil(5_000_000 / 64)).slice(0, 5_000_000);
    const redaction5Mb = await measure(() => redactor.redact(body), Math.max(5, Math.round(options.count / 100)), 3);
    const overheadP50 = figures.withFetch.p50 - figures.withoutFetch.p50 - figures.hostFetch.p50;
    return { ...figures, redaction5Mb, overheadP50, beyondFloorP50: overheadP50 - (figures.bridgeRoundTrip.p50 - figures.sandboxRoundTrip.p50), providerRequests: provider.calls.length };
  } finally {
    floors?.close();
    await dispatcher.close();
    server.closeAllConnections();
    server.close();
  }
}
