import { Ajv2020 } from "ajv/dist/2020.js";
import { readFileSync } from "node:fs";
import { once } from "node:events";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync, zstdCompressSync } from "node:zlib";
import { describe, expect, test } from "vitest";
import { Agent } from "../../src/index.ts";
import { json, redirect, type Route } from "../../test-support/web-server.ts";
import { waitFor } from "../../test-support/wait-for.ts";
import { egressAgent, serve } from "./harness.ts";

const schema = JSON.parse(readFileSync(new URL("../../schema/history-record.schema.json", import.meta.url), "utf8")) as object;
const validateRecord = new Ajv2020({ allErrors: true, strict: false }).compile(schema);

/** A program that returns what a fetch threw: its name, message, and whether it is an EgressError. */
const caught = (call: string) => `try { const r = await ${call}; return { status: r.status }; } catch (e) { return { name: e.name, message: e.message, egress: e instanceof EgressError } }`;

describe("fetch in programs", () => {
  test("without an egress policy there is no fetch at all, and the prompt says there is no network", async () => {
    const { agent, provider } = egressAgent({ probe: "return [typeof fetch, typeof EgressError]" }, {});
    const outcome = await agent.probe();
    expect(outcome.value).toEqual(["undefined", "function"]);
    expect(provider.calls[0]?.system).toContain("There is no `fetch`: this object has no network access.");
  });

  test("a fetch from an allowed origin: a plain response, the fetch in the record and the log line, its URL a source", async () => {
    const news = await serve({ "/feed": json({ headline: "Rain tomorrow" }) });
    const { agent, provider, history, logLines } = egressAgent(
      {
        headline: `const r = await fetch("${news.origin}/feed?page=1&api_key=hunter22"); const body = await r.json();
                   return { ok: r.ok, status: r.status, type: r.headers.get("Content-Type"), has: r.headers.has("content-type"), url: r.url, headline: body.headline, text: (await r.text()).length }`,
      },
      { egress: { allow: [news.origin] } },
    );
    const outcome = await agent.headline();
    expect(outcome.value).toEqual({ ok: true, status: 200, type: "application/json", has: true, url: `${news.origin}/feed?page=1&api_key=hunter22`, headline: "Rain tomorrow", text: 28 });
    expect(news.requests).toHaveLength(1);
    const record = history().at(-1)!;
    expect(validateRecord(record)).toBe(true);
    const source = `${news.origin}/feed?page=1&api_key=[redacted]`;
    expect(record.outcome_summary.sources).toEqual([source]);
    expect(record.outcome_summary.source_count).toBe(1);
    expect(record.tool_calls).toEqual([
      { tool: "fetch", input: { method: "GET", url: source }, ok: true, duration_ms: expect.any(Number), effect: "read", attempt: 1, url: source, status: 200, bytes: 28 },
    ]);
    const line = logLines().at(-1)!;
    expect(line).toMatchObject({ tool_call_count: 1, tool_names: ["fetch"], tool_error_count: 0, tool_access_detected: true, tools_referenced: ["fetch"] });
    expect(provider.calls[0]?.system).toContain(`only to\n  these origins: ${news.origin}`);
    expect(JSON.stringify([record.tool_calls, record.outcome_summary])).not.toContain("hunter22");
  });

  test("waiting for a slow server is not the program's own time", async () => {
    const slow = await serve({ "/slow": (_request, response) => void setTimeout(() => response.end("late"), 400) });
    const { agent } = egressAgent({ wait: `return await (await fetch("${slow.origin}/slow")).text()` }, { egress: { allow: [slow.origin] }, executionTimeoutMs: 150 });
    expect((await agent.wait()).value).toBe("late");
  });

  test("only the attempt that produced the outcome gives sources, and only 2xx answers; every fetch is listed", async () => {
    const site = await serve({ "/a": json("a"), "/b": json("b"), "/missing": json("no", 404) });
    const { agent, history } = egressAgent(
      { read: [`await fetch("${site.origin}/a"); undefinedName.x;`, `await fetch("${site.origin}/missing"); return (await fetch("${site.origin}/b")).json()`] },
      { egress: { allow: [site.origin] } },
    );
    const outcome = await agent.read();
    expect(outcome.value).toBe("b");
    const record = history().at(-1)!;
    expect(record.outcome_summary.sources).toEqual([`${site.origin}/b`]);
    expect(record.tool_calls?.map((call) => [call.attempt, call.url, call.status])).toEqual([
      [1, `${site.origin}/a`, 200],
      [2, `${site.origin}/missing`, 404],
      [2, `${site.origin}/b`, 200],
    ]);
    expect(validateRecord(record)).toBe(true);
  });
});

describe("the policy: refused before any server is contacted", () => {
  test("origins not allowed, other schemes, user info, methods and headers not allowed: EgressError, outcome tool (not retriable)", async () => {
    const site = await serve({ "/": json("ok") });
    const other = await serve({ "/": json("other") });
    const port = site.port;
    const { agent, history } = egressAgent(
      {
        otherPort: caught(`fetch("${other.origin}/")`),
        metadata: caught(`fetch("http://169.254.169.254/latest/meta-data/")`),
        decimal: caught(`fetch("http://2130706433:${port}/")`),
        hex: caught(`fetch("http://0x7f.1:${port}/")`),
        mapped: caught(`fetch("http://[::ffff:127.0.0.1]:${port}/")`),
        userInfo: caught(`fetch("http://127.0.0.1@evil.example/")`),
        credentials: caught(`fetch("http://user:pw@127.0.0.1:${port}/")`),
        file: caught(`fetch("file:///etc/passwd")`),
        post: caught(`fetch("${site.origin}/", { method: "POST", body: "x" })`),
        host: caught(`fetch("${site.origin}/", { headers: { Host: "evil.example" } })`),
        newline: caught(`fetch("${site.origin}/", { headers: { "x-a": "1\\r\\nx-b: 2" } })`),
        uncaught: `await fetch("http://169.254.169.254/"); return "reached"`,
      },
      { egress: { allow: [site.origin] } },
    );
    const expectations: Record<string, string> = {
      otherPort: `the origin ${other.origin} is not in egress.allow`,
      metadata: "the origin http://169.254.169.254 is not in egress.allow",
      // Spellings of 127.0.0.1 are that address: an entry names it, so they reach it (that port only).
      mapped: "the origin http://[::ffff:7f00:1]:",
      userInfo: "a URL with a user name or password is refused",
      credentials: "a URL with a user name or password is refused",
      file: "only http: and https: URLs can be fetched",
      post: "the method POST is not allowed (egress.methods: GET, HEAD)",
      host: "the header host is set by the host",
      newline: "is not a valid header",
    };
    for (const [method, message] of Object.entries(expectations)) {
      const outcome = await agent[method]();
      expect(outcome.value, method).toMatchObject({ name: "EgressError", egress: true, message: expect.stringContaining(message) });
    }
    for (const spelling of ["decimal", "hex"]) expect((await agent[spelling]()).value).toEqual({ status: 200 });
    expect(site.requests).toHaveLength(2);
    expect(other.requests).toHaveLength(0);
    const uncaught = await agent.uncaught();
    expect(uncaught).toMatchObject({ ok: false, errorType: "tool", retriable: false });
    expect(uncaught.errorMessage).toContain("EgressError");
    expect(history().at(-1)?.tool_calls?.[0]).toMatchObject({ tool: "fetch", ok: false, error_type: "tool" });
  });

  test("a read (GET, HEAD, OPTIONS) with a body is refused: it would write with no approval and no count", async () => {
    const site = await serve({ "/orders": json("ok") });
    const approvals: unknown[] = [];
    const { agent } = egressAgent(
      { send: caught(`fetch("${site.origin}/orders", { method: args[0], ...(args[1] ? { body: "ship 500 units" } : {}) })`) },
      { egress: { allow: [site.origin], methods: ["GET", "HEAD", "OPTIONS"] }, toolApproval: (request) => approvals.push(request) < 0 },
    );
    for (const method of ["GET", "HEAD", "OPTIONS"]) {
      expect((await agent.send(method, true)).value, method).toMatchObject({ name: "EgressError", egress: true, message: expect.stringContaining(`a ${method} request cannot have a body`) });
    }
    expect(site.requests).toHaveLength(0);
    expect((await agent.send("OPTIONS", false)).value).toEqual({ status: 200 });
    expect(site.requests.map((request) => request.method)).toEqual(["OPTIONS"]);
    expect(approvals).toEqual([]);
  });

  test("a name is resolved by the host and every address checked: loopback, private, link-local, mapped, mixed answers refused; the server is never reached", async () => {
    const site = await serve({ "/": json("reached") });
    const answers: Record<string, string[]> = {
      "loopback.example.test": ["127.0.0.1"],
      "metadata.example.test": ["169.254.169.254"],
      "private.example.test": ["10.1.2.3"],
      "mapped.example.test": ["::ffff:127.0.0.1"],
      "cgnat.example.test": ["100.64.0.1"],
      "ula.example.test": ["fd00::1"],
      "mixed.example.test": ["93.184.216.34", "127.0.0.1"],
      "nat64.example.test": ["64:ff9b::7f00:1"],
    };
    const resolved: string[] = [];
    const { agent } = egressAgent(
      { get: `try { await fetch("http://" + args[0] + ":${site.port}/"); return "fetched" } catch (e) { return e.message }` },
      {
        egress: {
          allow: [`http://*.example.test:${site.port}`],
          resolve: (hostname: string) => {
            resolved.push(hostname);
            return answers[hostname] ?? [];
          },
        },
      },
    );
    for (const name of Object.keys(answers)) {
      const outcome = await agent.get(name);
      expect(outcome.value, name).toContain(`${name} resolves to `);
      expect(outcome.value, name).toContain("; refused.");
    }
    expect(resolved).toEqual(Object.keys(answers));
    expect(site.requests).toHaveLength(0);
  });

  test("a name that resolves to a public address first and a loopback one next is refused the second time: each connection's own lookup is checked", async () => {
    const site = await serve({ "/": json("reached") });
    let lookups = 0;
    const { agent } = egressAgent(
      { get: `try { await fetch("http://rebind.example.test:${site.port}/"); return "fetched" } catch (e) { return e.message }` },
      { egress: { allow: [`http://*.example.test:${site.port}`], timeoutMs: 300, resolve: () => (lookups++ === 0 ? ["93.184.216.34"] : ["127.0.0.1"]) } },
    );
    const first = await agent.get();
    expect(first.value).not.toBe("fetched");
    const second = await agent.get();
    expect(second.value).toContain("resolves to 127.0.0.1, a loopback address; refused.");
    expect(site.requests).toHaveLength(0);
  });

  test("localhost named with its port opens that port: other ports and other names for it do not", async () => {
    const site = await serve({ "/": json("local") });
    const other = await serve({ "/": json("other") });
    const { agent } = egressAgent(
      { get: `try { return await (await fetch(args[0])).json() } catch (e) { return e.message }` },
      { egress: { allow: [`http://localhost:${site.port}`], resolve: () => ["127.0.0.1"] } },
    );
    expect((await agent.get(`http://localhost:${site.port}/`)).value).toBe("local");
    expect((await agent.get(`http://localhost:${other.port}/`)).value).toContain("is not in egress.allow");
    expect(other.requests).toHaveLength(0);
  });
});

describe("https", () => {
  test("a server's certificate is verified: a self-signed one fails typed and retriable, and no request is read", async () => {
    const fixtures = new URL("./fixtures/", import.meta.url);
    let requests = 0;
    const server = createTlsServer({ key: readFileSync(new URL("localhost-key.pem", fixtures)), cert: readFileSync(new URL("localhost-cert.pem", fixtures)) }, (_request, response) => {
      requests += 1;
      response.end("secret page");
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    try {
      const { agent } = egressAgent({ get: `await fetch("https://localhost:${port}/")` }, { egress: { allow: [`https://localhost:${port}`], resolve: () => ["127.0.0.1"] } });
      const outcome = await agent.get();
      expect(outcome).toMatchObject({ ok: false, errorType: "tool", retriable: true });
      expect(outcome.errorMessage).toMatch(/EgressError: fetch https:\/\/localhost:\d+\/: .*(self-signed|certificate)/);
      expect(requests).toBe(0);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe("redirects: followed by the host, each hop checked again", () => {
  test("to the metadata address, to another loopback port, to file:, or in a loop", async () => {
    const other = await serve({ "/": json("other") });
    const site = await serve({
      "/to-metadata": redirect("http://169.254.169.254/latest/meta-data/"),
      "/to-other": redirect(`${other.origin}/`),
      "/to-file": redirect("file:///etc/passwd"),
      "/loop": redirect("/loop"),
      "/hop": redirect("/end", 307),
      "/end": json("arrived"),
    });
    const reader = egressAgent(
      { get: `try { const r = await fetch(args[0]); return { status: r.status, url: r.url, redirected: r.redirected, body: await r.json() } } catch (e) { return { name: e.name, message: e.message } }` },
      { egress: { allow: [site.origin] } },
    );
    const get = async (path: string) => (await reader.agent.get(`${site.origin}${path}`)).value;
    expect(await get("/to-metadata")).toMatchObject({ name: "EgressError", message: expect.stringContaining("the origin http://169.254.169.254 is not in egress.allow (redirected from") });
    expect(await get("/to-other")).toMatchObject({ name: "EgressError", message: expect.stringContaining(`the origin ${other.origin} is not in egress.allow`) });
    expect(await get("/to-file")).toMatchObject({ name: "EgressError", message: expect.stringContaining("only http: and https: URLs can be fetched") });
    expect(await get("/loop")).toMatchObject({ name: "EgressError", message: expect.stringContaining("more than 5 redirects") });
    expect(await get("/hop")).toEqual({ status: 200, url: `${site.origin}/end`, redirected: true, body: "arrived" });
    expect(other.requests).toHaveLength(0);
    expect(site.requests.filter((request) => request.path === "/loop")).toHaveLength(6);
    const hop = reader.history().at(-1)!;
    expect(hop.tool_calls?.[0]).toMatchObject({ input: { method: "GET", url: `${site.origin}/hop` }, url: `${site.origin}/end`, status: 200 });
    expect(hop.outcome_summary.sources).toEqual([`${site.origin}/end`]);
  });
});

describe("what comes back is bounded", () => {
  test("an endless body, a huge declared one, a gzip bomb: stopped at maxResponseBytes, after decompression; the host goes on", async () => {
    const bomb = gzipSync(Buffer.alloc(200 * 2 ** 20));
    const site = await serve({
      "/endless": (_request, response) => {
        const chunk = Buffer.alloc(64 * 1024, 97);
        const write = () => {
          while (!response.destroyed && response.write(chunk));
          if (!response.destroyed) response.once("drain", write);
        };
        write();
      },
      "/huge": (_request, response) => {
        response.setHeader("content-length", String(5 * 2 ** 30));
        response.write(Buffer.alloc(2 ** 20));
      },
      "/bomb": (_request, response) => {
        response.setHeader("content-encoding", "gzip");
        response.end(bomb);
      },
      "/small": json("fine"),
    });
    const { agent } = egressAgent({ get: caught(`fetch("${site.origin}" + args[0])`) }, { egress: { allow: [site.origin], maxResponseBytes: 100_000 } });
    expect(bomb.length).toBeLessThan(1_000_000);
    for (const path of ["/endless", "/huge", "/bomb"]) {
      const outcome = await agent.get(path);
      expect(outcome.value, path).toMatchObject({ name: "EgressError", message: expect.stringContaining("the body is larger than egress.maxResponseBytes (100000 bytes)") });
    }
    expect((await agent.get("/small")).value).toEqual({ status: 200 });
  });

  test("bodies are decoded as content-encoding says (gzip, deflate either way, br, zstd, stacked); an unknown coding is left as sent", async () => {
    const text = JSON.stringify({ headline: "Rain tomorrow", body: "x".repeat(2_000) });
    const encoded = (encoding: string, body: Buffer): Route => (_request, response) => {
      response.setHeader("content-type", "application/json");
      response.setHeader("content-encoding", encoding);
      response.end(body);
    };
    const site = await serve({
      "/gzip": encoded("gzip", gzipSync(text)),
      "/deflate": encoded("deflate", deflateSync(text)),
      "/raw-deflate": encoded("deflate", deflateRawSync(text)),
      "/br": encoded("br", brotliCompressSync(text)),
      "/zstd": encoded("zstd", zstdCompressSync(text)),
      "/stacked": encoded("deflate, gzip", gzipSync(deflateSync(text))),
      "/unknown": encoded("compress-9000", Buffer.from("opaque bytes")),
      "/corrupt": encoded("gzip", Buffer.from("not gzip at all")),
    });
    const { agent } = egressAgent({ get: `const r = await fetch("${site.origin}" + args[0]); const t = await r.text(); try { return JSON.parse(t).headline } catch { return t }` }, { egress: { allow: [site.origin] } });
    for (const path of ["/gzip", "/deflate", "/raw-deflate", "/br", "/zstd", "/stacked"]) expect((await agent.get(path)).value, path).toBe("Rain tomorrow");
    expect((await agent.get("/unknown")).value).toBe("opaque bytes");
    const corrupt = await agent.get("/corrupt");
    expect(corrupt.errorType).toBe("tool");
    expect(corrupt.errorMessage).toMatch(/^EgressError: fetch http:\/\/127\.0\.0\.1:\d+\/corrupt: incorrect header check/);
  });

  test("a response refused before its body is read (too many content codings) is ended: its connection does not stay open", async () => {
    let opened = 0;
    let closed = 0;
    const site = await serve({
      "/many": (request, response) => {
        opened += 1;
        request.socket.once("close", () => (closed += 1));
        response.writeHead(200, { "content-encoding": "gzip, gzip, gzip, gzip, gzip, gzip" });
        // A body that never ends: only the client can end the connection.
        response.write(Buffer.alloc(1_024));
      },
    });
    const { agent } = egressAgent({ get: `const out = []; for (let i = 0; i < 3; i++) { try { await fetch("${site.origin}/many"); out.push("ok") } catch (e) { out.push(e.message.includes("too many content-encodings")) } } return out` }, { egress: { allow: [site.origin], timeoutMs: 2_000 } });
    expect((await agent.get()).value).toEqual([true, true, true]);
    expect(opened).toBeGreaterThan(0);
    await expect.poll(() => closed, { timeout: 2_000 }).toBe(opened);
  });

  test("what the server sees and what the program gets: fetch's default headers, the server's status text, repeated headers joined, no body for HEAD or 204", async () => {
    const site = await serve({
      "/echo": (request, response) => {
        response.statusCode = 202;
        response.statusMessage = "Taken Gladly";
        response.setHeader("x-tag", ["a", "b"]);
        response.setHeader("content-type", "application/json");
        response.end(JSON.stringify({ method: request.method, body: request.body }));
      },
      "/empty": (_request, response) => {
        response.statusCode = 204;
        response.end();
      },
      "/head": (_request, response) => {
        response.setHeader("content-length", "5");
        response.end("hello");
      },
    });
    const { agent } = egressAgent(
      {
        post: `const r = await fetch("${site.origin}/echo", { method: "POST", body: "hi" }); return { status: r.status, statusText: r.statusText, tag: r.headers.get("x-tag"), names: [...r.headers.entries()].map(([name]) => name), echoed: await r.json() }`,
        own: `const r = await fetch("${site.origin}/echo", { headers: { "user-agent": "my-agent/1", accept: "application/json" } }); return r.status`,
        empty: `const r = await fetch("${site.origin}/empty"); return [r.status, await r.text()]`,
        head: `const r = await fetch("${site.origin}/head", { method: "HEAD" }); return [r.status, await r.text(), r.headers.get("content-length")]`,
      },
      { egress: { allow: [site.origin], methods: ["GET", "HEAD", "POST"] }, toolApproval: () => true },
    );
    const posted = await agent.post();
    expect(posted.value).toMatchObject({ status: 202, statusText: "Taken Gladly", tag: "a, b", echoed: { method: "POST", body: "hi" } });
    const names = (posted.value as { names: string[] }).names;
    expect(names).toEqual([...names].sort());
    expect(site.requests.at(-1)?.headers).toMatchObject({ accept: "*/*", "accept-language": "*", "sec-fetch-mode": "cors", "user-agent": "node", "accept-encoding": "gzip, deflate", "content-type": "text/plain;charset=UTF-8" });
    expect((await agent.own()).value).toBe(202);
    expect(site.requests.at(-1)?.headers).toMatchObject({ "user-agent": "my-agent/1", accept: "application/json" });
    expect(site.requests.at(-1)?.headers["content-type"]).toBeUndefined();
    expect((await agent.empty()).value).toEqual([204, ""]);
    expect((await agent.head()).value).toEqual([200, "", "5"]);
  });

  test("a server that sends its headers slowly, or never answers: stopped at timeoutMs, retriable", async () => {
    const site = await serve({
      "/slow-headers": (_request, response) => void setTimeout(() => response.end("late"), 20_000),
      "/never": () => undefined,
    });
    const { agent } = egressAgent({ get: `await fetch("${site.origin}" + args[0])` }, { egress: { allow: [site.origin], timeoutMs: 200 } });
    for (const path of ["/slow-headers", "/never"]) {
      const started = performance.now();
      const outcome = await agent.get(path);
      // Far sooner than the server's 20 s, however slow the machine.
      expect(performance.now() - started).toBeLessThan(10_000);
      expect(outcome).toMatchObject({ ok: false, errorType: "tool", retriable: true });
      expect(outcome.errorMessage).toContain("no answer within 200 ms (egress.timeoutMs)");
    }
  });

  test("a call tree has at most 16 fetches in flight, however far it fans out: the rest wait their turn", async () => {
    let inFlight = 0;
    let most = 0;
    const site = await serve({
      "/": (_request, response) => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        setTimeout(() => response.end("x".repeat(1_000), () => (inFlight -= 1)), 40);
      },
    });
    const { agent, history } = egressAgent(
      {
        "reader.fan": `const answers = await Promise.all([0, 1, 2, 3].map((i) => delegate("w" + i).pull())); return answers.map((a) => a.ok ? a.value : a.error_type)`,
        pull: `const sizes = await Promise.all(Array.from({ length: 16 }, (_, i) => fetch("${site.origin}/?" + i).then((r) => r.text()).then((t) => t.length))); return sizes.reduce((a, b) => a + b, 0)`,
      },
      { reuse: false, egress: { allow: [site.origin], maxRequests: 64 } },
    );
    const outcome = await agent.fan();
    expect(outcome.value).toEqual([16_000, 16_000, 16_000, 16_000]);
    expect(site.requests).toHaveLength(64);
    expect(most).toBeLessThanOrEqual(16);
    expect(most).toBeGreaterThan(1);
    expect(history()).toHaveLength(1);
  });

  test("a fetch waiting for its turn in the call tree ends with the call's time, as cancelled, and is never sent", async () => {
    const site = await serve({ "/slow": (_request, response) => void setTimeout(() => response.end("late"), 3_000), "/": json(1) });
    const { agent } = egressAgent(
      {
        crowd: `const slow = Array.from({ length: 15 }, () => fetch("${site.origin}/slow").then(() => "done", (e) => e.message));
                const waiting = await delegate("helper").one(); return { waiting: waiting.ok ? waiting.value : waiting.error_message, slow: await Promise.all(slow) }`,
        one: `const last = fetch("${site.origin}/slow"); try { await fetch("${site.origin}/", { method: "POST", body: "x" }); return "sent" } catch (e) { return e.message } finally { await last }`,
      },
      { egress: { allow: [site.origin], methods: ["GET", "POST"] }, toolApproval: () => true, callTimeoutMs: 1_500 },
    );
    const outcome = await agent.crowd();
    expect(outcome).toMatchObject({ ok: false, errorType: "timeout" });
    expect(site.requests.filter((request) => request.path === "/")).toHaveLength(0);
    expect(site.requests.filter((request) => request.path === "/slow")).toHaveLength(16);
  });

  test("a write that waited for its turn and never went is no effect of its call", async () => {
    // The slow answers are held until the helper's call has ended and been logged, so the write never gets a slot in time, however loaded the machine.
    const helperLogged = () => {
      try {
        return logLines().some((line) => line.method === "order");
      } catch {
        return false;
      }
    };
    const site = await serve({
      "/slow": (_request, response) => void waitFor(helperLogged, 20_000).catch(() => undefined).then(() => response.end("late")),
      "/orders": json(1),
    });
    const { agent, logLines } = egressAgent(
      {
        crowd: `const slow = Array.from({ length: 15 }, () => fetch("${site.origin}/slow").then(() => "done"));
                const helper = await delegate("helper", { callTimeoutMs: 600 }).order(); await Promise.all(slow); return helper.error_type`,
        order: `const first = fetch("${site.origin}/slow"); await fetch("${site.origin}/orders", { method: "POST", body: "x" }); await first; return "sent"`,
      },
      { egress: { allow: [site.origin], methods: ["GET", "POST"] }, toolApproval: () => true },
    );
    expect((await agent.crowd()).value).toBe("timeout");
    expect(site.requests.filter((request) => request.path === "/orders")).toHaveLength(0);
    const helper = logLines().find((line) => line.method === "order");
    expect(helper?.effects).toMatchObject({ unknown: 0, applied: 0 });
  });

  test("1,000 fetches in one call: maxRequests reach the server, the rest are refused, and the per-call budget ends the program", async () => {
    const site = await serve({ "/": json(1) });
    const { agent, history } = egressAgent(
      { many: `let fetched = 0, refused = 0; for (let i = 0; i < 1000; i++) { try { await fetch("${site.origin}/"); fetched++ } catch (e) { if (!(e instanceof EgressError)) throw e; refused++ } } return { fetched, refused }` },
      { egress: { allow: [site.origin], maxRequests: 5 } },
    );
    const outcome = await agent.many();
    expect(outcome).toMatchObject({ ok: false, errorType: "budget_exceeded" });
    expect(site.requests).toHaveLength(5);
    const record = history().at(-1)!;
    expect(record.tool_call_count).toBe(256);
    expect(record.tool_calls).toHaveLength(50);
    expect(record.tool_calls?.[5]).toMatchObject({ ok: false, error_message: expect.stringContaining("more than 5 requests (egress.maxRequests)") });
    expect(validateRecord(record)).toBe(true);
  });
});

describe("secrets the host adds", () => {
  test("are sent to their origin only, replace what the program set, and never reach the program, the record, the log or an error", async () => {
    const secret = "s3cr3t-token-0123456789";
    const echo: Route = (request, response) => {
      response.setHeader("content-type", "application/json");
      response.setHeader("x-echo", String(request.headers.authorization));
      response.setHeader("set-cookie", "session=abc");
      response.end(JSON.stringify({ seen: request.headers }));
    };
    const api = await serve({
      "/echo": echo,
      "/fail": (request, response) => {
        response.statusCode = 500;
        response.end(`bad token ${String(request.headers.authorization)}`);
      },
      "/away": redirect("/echo"),
    });
    const elsewhere = await serve({ "/echo": echo });
    const programs = {
      steal: `const r = await fetch("${api.origin}/echo", { headers: { authorization: "mine", cookie: "c=1", "x-keep": "yes" } });
              const text = await r.text(); console.log(text, r.headers.get("x-echo"));
              return { text, echo: r.headers.get("x-echo"), cookie: r.headers.get("set-cookie"), all: [...r.headers.entries()] }`,
      fail: `const r = await fetch("${api.origin}/fail"); throw new Error(await r.text())`,
      other: `const r = await fetch("${elsewhere.origin}/echo", { headers: { authorization: "mine" } }); return (await r.json()).seen.authorization`,
    };
    const { agent, history, logText } = egressAgent(programs, { debug: true, egress: { allow: [api.origin, elsewhere.origin], headers: { [api.origin]: { authorization: `Bearer ${secret}` } } } });
    const stolen = await agent.steal();
    expect(stolen.ok).toBe(true);
    // The server got the host's value, not the program's; the program's other headers went along.
    expect(api.requests[0]?.headers.authorization).toBe(`Bearer ${secret}`);
    expect(api.requests[0]?.headers.cookie).toBeUndefined();
    expect(api.requests[0]?.headers["x-keep"]).toBe("yes");
    expect(stolen.value.cookie).toBeNull();
    expect(stolen.value.echo).toBe("[redacted]");
    const failed = await agent.fail();
    expect(failed.errorMessage).toContain("bad token [redacted]");
    // Another origin gets no secret, and the program's own header goes there as written.
    expect((await agent.other()).value).toBe("mine");
    const seen = JSON.stringify([stolen, failed, history()]) + logText();
    expect(seen).not.toContain(secret);
    expect(seen).toContain("[redacted]");
  });
});

describe("effects", () => {
  test("a method that may change the world is asked of toolApproval with what is sent, and a program that used it is never run again on its own", async () => {
    const site = await serve({ "/orders": json({ id: 7 }, 201) });
    const approvals: unknown[] = [];
    const { agent } = egressAgent(
      {
        order: `const r = await fetch("${site.origin}/orders", { method: "POST", headers: [["x-http-method-override", "PUT"], ["x-pay-to", "alice"], ["X-Pay-To", "mallory"]], body: JSON.stringify({ item: "tea" }) }); notDefined.x; return r.status`,
        denied: caught(`fetch("${site.origin}/orders", { method: "DELETE" })`),
      },
      {
        egress: { allow: [site.origin], methods: ["GET", "POST", "DELETE"] },
        toolApproval: (request) => {
          approvals.push(request);
          return request.input !== null && (request.input as { method: string }).method === "POST";
        },
      },
    );
    const ordered = await agent.order();
    // The mistake after the POST is not repaired: the order is not placed twice.
    expect(ordered).toMatchObject({ ok: false, errorType: "execution" });
    expect(site.requests.filter((request) => request.method === "POST")).toHaveLength(1);
    expect(site.requests[0]?.body).toBe('{"item":"tea"}');
    // As the server reads what it was sent, so the approval is shown it.
    expect(site.requests[0]?.headers["x-pay-to"]).toBe("alice, mallory");
    expect((await agent.denied()).value).toMatchObject({ name: "EgressError", message: expect.stringContaining("denied by the application") });
    expect(approvals).toEqual([
      // What is sent: the program's own headers and its body, as well as the method and the whole URL.
      { kind: "fetch", tool: "fetch", input: { method: "POST", url: `${site.origin}/orders`, headers: { "x-http-method-override": "PUT", "x-pay-to": "alice, mallory" }, body: '{"item":"tea"}' }, role: "reader", lineage: ["reader"], rootAgentId: expect.any(String), agentId: expect.any(String), callId: expect.any(String) },
      { kind: "fetch", tool: "fetch", input: { method: "DELETE", url: `${site.origin}/orders` }, role: "reader", lineage: ["reader"], rootAgentId: expect.any(String), agentId: expect.any(String), callId: expect.any(String) },
    ]);
    expect(site.requests).toHaveLength(1);
  });
});

describe("the egress option", () => {
  test.each([
    [{ allow: [] }, 'Option "egress.allow" must be a non-empty array of origins'],
    [{ allow: ["ftp://example.com"] }, 'Option "egress.allow[0]" ("ftp://example.com") must use http: or https:'],
    [{ allow: ["https://example.com/path"] }, "must be an origin, with no path, query or fragment"],
    [{ allow: ["https://user@example.com"] }, "must not hold a user name or password"],
    [{ allow: ["https://*.com"] }, 'must put "*." before a domain of two labels or more'],
    [{ allow: ["https://a.*.example.com"] }, 'may hold "*" only as its host\'s first label'],
    [{ allow: ["https://example.com"], headers: { "https://other.com": { authorization: "x" } } }, "which is not in egress.allow as written"],
    [{ allow: ["https://example.com"], headers: { "https://example.com": { authorization: "a\nb" } } }, "the value of authorization must be a string of at most 16,384 characters with no line breaks"],
    [{ allow: ["https://example.com"], methods: ["FETCH"] }, 'Option "egress.methods": "FETCH" is not one of'],
    [{ allow: ["https://example.com"], maxResponseBytes: 9_000_000 }, 'Option "egress.maxResponseBytes" must be a whole number from 1 to 8000000'],
    [{ allow: ["https://example.com"], proxy: "x" }, 'Unknown egress option "proxy"'],
  ])("%j is a TypeError that says what is wrong", (egress, message) => {
    expect(() => Agent.for("bad-egress", { egress: egress as never })).toThrow(message);
  });

  test("the message for a bad header value never repeats the value", () => {
    expect(() => Agent.for("bad-egress", { egress: { allow: ["https://example.com"], headers: { "https://example.com": { authorization: "Bearer leak\r\nx" } } } })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining("leak") }),
    );
  });
});

describe("hostile programs", () => {
  test("bad arguments are the program's mistakes; a fetch left running after the program returned is never sent", async () => {
    const site = await serve({ "/": json("ok"), "/late": json("late") });
    const { agent } = egressAgent(
      {
        getter: `const init = {}; Object.defineProperty(init, "headers", { get() { throw new Error("trap") } }); try { await fetch("${site.origin}/", init) } catch (e) { return [e.name, e.message] }`,
        longUrl: `try { await fetch("${site.origin}/?" + "a".repeat(100000)) } catch (e) { return [e.name, e.message] }`,
        manyHeaders: `const headers = {}; for (let i = 0; i < 1000; i++) headers["x-" + i] = "v"; try { await fetch("${site.origin}/", { headers }) } catch (e) { return [e.name, e.message] }`,
        notString: `try { await fetch(42) } catch (e) { return [e.name, e.message] }`,
        detached: `fetch("${site.origin}/late"); return "returned"`,
      },
      { egress: { allow: [site.origin] } },
    );
    expect((await agent.getter()).value).toEqual(["Error", "trap"]);
    expect((await agent.longUrl()).value).toEqual(["TypeError", "fetch(url): the URL must be a string of at most 8000 characters."]);
    expect((await agent.manyHeaders()).value).toEqual(["TypeError", "fetch(url, { headers }): at most 64 headers, each a name and a string value."]);
    expect((await agent.notString()).value).toEqual(["TypeError", "fetch(url, init?) needs the URL as a string."]);
    expect((await agent.detached()).value).toBe("returned");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(site.requests).toHaveLength(0);
  });
});
