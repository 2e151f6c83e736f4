import { describe, expect, test } from "vitest";
import type { ToolApprovalRequest } from "../../src/index.ts";
import { json, type Route } from "../../test-support/web-server.ts";
import { egressAgent, serve, tried } from "./harness.ts";

const WRITE_METHODS = ["POST", "PUT", "PATCH", "DELETE"] as const;
const STATUSES = [301, 302, 303, 307, 308] as const;

/** The method a redirect leaves, as `fetch` has it: a 303 (and a POST answered 301 or 302) goes on as a GET without its body. */
function nextMethod(status: number, method: string): string {
  return status === 303 || ((status === 301 || status === 302) && method === "POST") ? "GET" : method;
}

/** Redirects to `location` with the status its query names. */
const redirectAsAsked =
  (location: string): Route =>
  (request, response) => {
    response.statusCode = Number(new URL(request.url ?? "/", "http://x").searchParams.get("status"));
    response.setHeader("location", location);
    response.end();
  };

describe("a write request's redirects: every hop that still writes is approved, with its full URL", () => {
  test.each(STATUSES.flatMap((status) => WRITE_METHODS.map((method) => [status, method] as const)))(
    "%i on %s: a hop that keeps the write is asked again; denied, the other origin never receives it",
    async (status, method) => {
      const other = await serve({ "/landing": json("landed") });
      const site = await serve({ "/write": redirectAsAsked(`${other.origin}/landing?from=site`) });
      const approvals: ToolApprovalRequest[] = [];
      const { agent } = egressAgent(
        { write: tried(`fetch("${site.origin}/write?status=${status}", { method: "${method}", body: "order: tea" })`) },
        {
          egress: { allow: [site.origin, other.origin], methods: ["GET", "HEAD", ...WRITE_METHODS] },
          // The application approves writes to the first origin only.
          toolApproval: (request) => {
            approvals.push(request);
            return (request.input as { url: string }).url.startsWith(site.origin);
          },
        },
      );
      const outcome = await agent.write();
      const first = { kind: "fetch", tool: "fetch", input: { method, url: `${site.origin}/write?status=${status}`, body: "order: tea" }, role: "reader", lineage: ["reader"], rootAgentId: expect.any(String), agentId: expect.any(String), callId: expect.any(String) };
      const landedWith = nextMethod(status, method);
      if (landedWith === "GET") {
        // Now a read: it goes on, without the body.
        expect(outcome.value).toEqual({ status: 200, body: '"landed"' });
        expect(approvals).toEqual([first]);
        expect(other.requests.map((request) => [request.method, request.body])).toEqual([["GET", ""]]);
      } else {
        expect(outcome.value).toMatchObject({ name: "EgressError", egress: true, message: expect.stringContaining(`fetch ${other.origin}/landing?from=site: denied by the application`) });
        expect(approvals).toEqual([
          first,
          { ...first, input: { method, url: `${other.origin}/landing?from=site`, body: "order: tea", redirectedFrom: `${site.origin}/write?status=${status}`, status } },
        ]);
        expect(other.requests).toEqual([]);
      }
      expect(site.requests.map((request) => [request.method, request.body])).toEqual([[method, "order: tea"]]);
    },
  );

  test("an approved hop is sent with its method and body; approval is asked once per hop, at most 5 hops", async () => {
    const other = await serve({ "/landing": json("landed"), "/loop": (_request, response) => void response.writeHead(307, { location: "/loop" }).end() });
    const site = await serve({ "/write": redirectAsAsked(`${other.origin}/landing`), "/loop": redirectAsAsked(`${other.origin}/loop`) });
    const approvals: unknown[] = [];
    const { agent } = egressAgent(
      {
        write: tried(`fetch("${site.origin}/write?status=308", { method: "PUT", body: "v=1" })`),
        loop: tried(`fetch("${site.origin}/loop?status=307", { method: "POST", body: "again" })`),
      },
      { egress: { allow: [site.origin, other.origin], methods: ["GET", "PUT", "POST"] }, toolApproval: (request) => approvals.push(request.input) > 0 },
    );
    expect((await agent.write()).value).toEqual({ status: 200, body: '"landed"' });
    expect(other.requests.map((request) => [request.method, request.body])).toEqual([["PUT", "v=1"]]);
    expect(approvals).toHaveLength(2);
    approvals.length = 0;
    expect((await agent.loop()).value).toMatchObject({ name: "EgressError", message: expect.stringContaining("more than 5 redirects") });
    // The first request and 5 redirected hops, each approved before it was sent.
    expect(approvals).toHaveLength(6);
    expect(other.requests.filter((request) => request.path === "/loop")).toHaveLength(5);
  });

  test("each approved hop that writes is an effect of its own in the record: the hop before it answered with the redirect", async () => {
    const other = await serve({ "/landing": json("landed") });
    const site = await serve({ "/write": redirectAsAsked(`${other.origin}/landing`) });
    const { agent, history, logLines } = egressAgent(
      { write: tried(`fetch("${site.origin}/write?status=307", { method: "POST", body: "order 1" })`) },
      { egress: { allow: [site.origin, other.origin], methods: ["GET", "POST"] }, toolApproval: () => true },
    );
    expect((await agent.write()).value).toEqual({ status: 200, body: '"landed"' });
    expect([...site.requests, ...other.requests].map((request) => [request.method, request.body])).toEqual([["POST", "order 1"], ["POST", "order 1"]]);
    const calls = history().at(-1)?.tool_calls;
    expect(calls).toEqual([
      expect.objectContaining({ tool: "fetch", input: { method: "POST", url: `${site.origin}/write?status=307` }, ok: true, state: "applied", url: `${site.origin}/write?status=307`, status: 307 }),
      expect.objectContaining({ tool: "fetch", input: { method: "POST", url: `${other.origin}/landing`, redirectedFrom: `${site.origin}/write?status=307` }, ok: true, state: "applied", url: `${other.origin}/landing`, status: 200 }),
    ]);
    expect(logLines().at(-1)?.effects).toMatchObject({ applied: 2 });
  });

  test("approval sees the full URL that is sent: not cut at 2,000 characters, query values as written", async () => {
    const site = await serve({ "/orders": json("ok", 201) });
    const url = `${site.origin}/orders?api_key=kept-as-written&pad=${"p".repeat(3_000)}#part`;
    const asked: string[] = [];
    const { agent, history } = egressAgent(
      { order: tried(`fetch(${JSON.stringify(url)}, { method: "POST", body: "x" })`) },
      { egress: { allow: [site.origin], methods: ["GET", "POST"] }, toolApproval: (request) => asked.push((request.input as { url: string }).url) > 0 },
    );
    expect((await agent.order()).value).toEqual({ status: 201, body: '"ok"' });
    // What is sent has no fragment.
    expect(asked).toEqual([url.replace("#part", "")]);
    // The record keeps its bounded, cleaned form.
    const recorded = JSON.stringify(history().at(-1)?.tool_calls?.[0]);
    expect(recorded).toContain("api_key=[redacted]");
    expect(recorded).not.toContain("kept-as-written");
  });
});
