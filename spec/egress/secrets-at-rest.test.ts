/**
 * DESIGN 14 (3): for a call whose call tree sent injected credentials, nothing improv writes
 * holds a recognizable copy of them, even one the program assembled from pieces the response
 * redaction could not see. The server sends the credential back cut in pieces of 6 characters
 * (and spelled with dashes); the program puts them together and hands the whole on every way it
 * has. What is read back: the outcomes, the history records (the child's too), the JSONL log
 * (with debug: prompts, console, context), the SQLite file and its WAL, the kept values, the
 * spans.
 */
import { trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { Agent, ScriptedProvider, SqliteStore, type HistoryRecord } from "../../src/index.ts";
import { serve } from "./harness.ts";
import { moveVersionOn } from "../../test-support/turns.ts";

/** The credential the host adds (no `/` or `+`: its pieces go through a JSON body unescaped). */
const TOKEN = "Zq8xKp4vWm2xYv7RtN3bLc6H";
/** A second credential of digits only, which a program can turn into a number. */
const PIN = "86753091122334";

const exporter = new InMemorySpanExporter();
const tracing = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
beforeAll(() => void trace.setGlobalTracerProvider(tracing));
afterAll(async () => {
  trace.disable();
  await tracing.shutdown();
});
beforeEach(() => exporter.reset());

/** Forms of the credential a reader would recognize: each is looked for as any 8 characters in a row, in any letter case. */
function formsOf(token: string): Record<string, string> {
  const bytes = Buffer.from(token);
  return {
    verbatim: token,
    reversed: [...token].reverse().join(""),
    hex: bytes.toString("hex"),
    base64: bytes.toString("base64").slice(1, -2),
    base64url: bytes.toString("base64url").slice(1, -2),
  };
}

/** The first recognizable form of `token` that `text` holds, with what is around it; undefined when none. */
function copyIn(text: string, token = TOKEN): string | undefined {
  const lower = text.toLowerCase();
  for (const [name, form] of Object.entries(formsOf(token))) {
    const folded = form.toLowerCase();
    for (let start = 0; start + 8 <= folded.length; start += 1) {
      const at = lower.indexOf(folded.slice(start, start + 8));
      if (at !== -1) return `${name} at ${at}: …${text.slice(Math.max(0, at - 60), at + 40)}…`;
    }
  }
  return undefined;
}

/** The bytes of a SQLite database and its WAL, read as Latin-1 and as UTF-16 (V8 writes a context's strings either way). */
function databaseText(path: string): string {
  const files = [path, `${path}-wal`].filter((file) => existsSync(file)).map((file) => readFileSync(file));
  return files.map((bytes) => `${bytes.toString("latin1")}\n${bytes.toString("utf16le")}\n${bytes.subarray(1).toString("utf16le")}`).join("\n");
}

/** The echo server: the credential of each request sent back in pieces too short to recognize. */
const routes = {
  "/pieces": (request: { url?: string; headers: Record<string, unknown> }, response: import("node:http").ServerResponse) => {
    const token = request.url?.includes("of=pin") ? String(request.headers["x-pin"]) : String(request.headers.authorization).replace(/^Bearer /, "");
    response.setHeader("content-type", "application/json");
    response.end(JSON.stringify({ a: token.slice(0, 6), b: token.slice(6, 12), c: token.slice(12, 18), d: token.slice(18) }));
  },
  "/spelled": (request: { headers: Record<string, unknown> }, response: import("node:http").ServerResponse) => {
    response.end(String(request.headers.authorization).replace(/^Bearer /, "").split("").join("-"));
  },
};

/** The credential put together from its pieces, in the program. */
const ASSEMBLE = `const p = await (await fetch(args[0] + "/pieces")).json(); const secret = p.a + p.b + p.c + p.d;`;

const PROGRAMS: Record<string, string> = {
  give: `${ASSEMBLE} return { token: secret, line: "key=" + secret, upper: secret.toUpperCase(), reversed: [...secret].reverse().join(""), hex: [...secret].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join(""), [secret]: [secret], map: new Map([[secret, secret]]), error: new Error(secret) };`,
  spell: `const secret = (await (await fetch(args[0] + "/spelled")).text()).split("-").join(""); return secret;`,
  fail: `${ASSEMBLE} throw new Error("the key is " + secret);`,
  say: `${ASSEMBLE} console.log("the key is", secret); console.log(JSON.stringify({ secret })); return "said";`,
  tell: `${ASSEMBLE} await tools.note({ text: secret }); await tools.strict({ text: secret }); return "told";`,
  pass: `${ASSEMBLE} const told = await delegate("helper").keep(secret, kw({ also: secret, map: new Map([[secret, secret]]), set: new Set([secret]), error: new Error(secret) })); return told;`,
  keep: `context.kept = args[0]; return "kept " + args[0];`,
  stash: `${ASSEMBLE} context.token = secret; context.nested = { [secret]: [secret, { deeper: "x" + secret }] }; context.set = new Set([secret]); return "stashed";`,
  recall: `return context;`,
  bytes: `${ASSEMBLE} context.bytes = new Uint8Array([...secret].map((c) => c.charCodeAt(0))); return { bytes: context.bytes, buffer: context.bytes.buffer };`,
  digits: `const p = await (await fetch(args[0] + "/pieces?of=pin")).json(); const pin = p.a + p.b + p.c; context.pin = Number(pin); return { number: Number(pin), big: BigInt(pin), text: pin };`,
  name: `${ASSEMBLE} const byRole = await delegate(secret).keep(1); const byMethod = await delegate("helper")[secret](1); return { byRole, byMethod };`,
  fetchPieces: `return await (await fetch(args[0] + "/pieces")).json();`,
  gather: `const p = (await delegate("fetcher").fetchPieces(args[0])).value; const secret = p.a + p.b + p.c + p.d; context.gathered = secret; return secret;`,
  echo: `context.echoed = args[0]; console.log(args[0]); return args[0];`,
  // As if the model had seen the credential somewhere and set the header itself.
  own: `return (await fetch(args[0] + "/pieces", { headers: { authorization: "Bearer ${TOKEN}" } })).status;`,
};

interface Setup {
  readonly agent: Record<string, (...args: unknown[]) => Promise<{ ok: boolean; value?: unknown; errorMessage?: string; callId: string }>>;
  readonly origin: string;
  readonly received: string[];
  /** Every request the provider got (the delegated calls' too). */
  readonly asked: ScriptedProvider["calls"];
  /** Everything improv wrote of the agent and its delegated agents, as text (records, log, database, kept values, spans). */
  readonly written: () => Promise<string>;
}

const opened: { agent: unknown; store: SqliteStore }[] = [];
afterEach(async () => {
  for (const { agent, store } of opened.splice(0)) {
    await Agent.close(agent);
    await store.close();
  }
});

/** A durable agent (SQLite on a temp file, a JSONL log with debug) whose egress adds the credential for the echo server. */
async function setup(): Promise<Setup> {
  const api = await serve(routes);
  const dir = mkdtempSync(join(tmpdir(), "improv-at-rest-"));
  const database = join(dir, "improv.db");
  const log = join(dir, "calls.jsonl");
  const store = new SqliteStore(database);
  const received: string[] = [];
  const provider = new ScriptedProvider({ programs: PROGRAMS });
  const agent = await Agent.open("reader", {
    store,
    id: "reader-1",
    provider,
    log,
    debug: true,
    egress: { allow: [api.origin], headers: { [api.origin]: { authorization: `Bearer ${TOKEN}`, "x-pin": PIN } } },
    tools: {
      note: {
        description: "Takes a note.",
        inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
        execute: async ({ text }: { text: string }) => (received.push(text), { noted: text.length }),
        annotations: { readOnlyHint: true },
      },
      strict: {
        description: "Refuses what it is given, quoting it.",
        inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
        execute: async ({ text }: { text: string }) => {
          throw new Error(`refused: ${text}`);
        },
        annotations: { readOnlyHint: true },
      },
    },
  });
  opened.push({ agent, store });
  const written = async () => {
    const records = Agent.history(agent) as readonly HistoryRecord[];
    const traces = records.map((record) => Agent.trace(record.trace_id ?? ""));
    const values = await Promise.all(records.flatMap((record) => (record.outcome_summary.content_ref === undefined ? [] : [Agent.value(agent, record.outcome_summary.content_ref)])));
    const spans = exporter.getFinishedSpans().map((span) => ({ name: span.name, attributes: span.attributes, status: span.status, events: span.events }));
    return [JSON.stringify(records), JSON.stringify(traces), readFileSync(log, "utf8"), databaseText(database), JSON.stringify(values, (_key, value: unknown) => (value instanceof Map || value instanceof Set ? [...value] : value)), JSON.stringify(spans)].join("\n");
  };
  return { agent: agent as unknown as Setup["agent"], origin: api.origin, received, asked: provider.calls, written };
}

/** The outcome as text, Maps, Sets and errors included. */
function shown(outcome: unknown): string {
  return JSON.stringify(outcome, (_key, value: unknown) => (value instanceof Map || value instanceof Set ? [...value] : value instanceof Error ? `${value.name}: ${value.message}` : value));
}

describe("a credential the program assembled is in nothing improv writes of a call whose tree sent it", () => {
  test("returned (as a value, a key, in a Map and an Error, upper-cased, reversed): the outcome, record, log, kept value and store hold none", async () => {
    const { agent, origin, written } = await setup();
    const outcome = await agent.give!(origin);
    expect(outcome.ok, outcome.errorMessage).toBe(true);
    expect(outcome.value).toMatchObject({ token: "[redacted]", line: "key=[redacted]", upper: "[redacted]", reversed: "[redacted]" });
    expect(copyIn(shown(outcome))).toBeUndefined();
    expect(copyIn(await written())).toBeUndefined();
  });

  test("spelled with separators by the server, joined by the program: taken out once whole", async () => {
    const { agent, origin, written } = await setup();
    const outcome = await agent.spell!(origin);
    expect(outcome.value).toBe("[redacted]");
    expect(copyIn(await written())).toBeUndefined();
  });

  test("thrown: the error message in the outcome, record, log line and spans", async () => {
    const { agent, origin, written } = await setup();
    const outcome = await agent.fail!(origin);
    expect(outcome.errorMessage).toBe("Error: the key is [redacted]");
    const text = await written();
    expect(text).toContain("the key is [redacted]");
    expect(copyIn(text)).toBeUndefined();
  });

  test("logged with console.log: the log line's console", async () => {
    const { agent, origin, written } = await setup();
    expect((await agent.say!(origin)).ok).toBe(true);
    const text = await written();
    expect(text).toContain("the key is [redacted]");
    expect(copyIn(text)).toBeUndefined();
  });

  test("passed to tools: the tool gets it, the record's tool calls (input, error) and the spans do not", async () => {
    const { agent, origin, received, written } = await setup();
    const outcome = await agent.tell!(origin);
    expect(received).toEqual([TOKEN]);
    expect(outcome.errorMessage).toContain("refused: [redacted]");
    const text = await written();
    expect(text).toContain('"input":{"text":"[redacted]"}');
    expect(copyIn(text)).toBeUndefined();
  });

  test("passed to a delegated call: the child's record, context, log line and prompt in it, its provider's request, and its answer", async () => {
    const { agent, origin, asked, written } = await setup();
    const outcome = await agent.pass!(origin);
    expect(outcome.value).toMatchObject({ ok: true, value: "kept [redacted]" });
    const text = await written();
    expect(text).toContain('"method_name":"keep"');
    expect(copyIn(text)).toBeUndefined();
    const childRequest = asked.find((request) => request.method === "keep");
    expect(childRequest?.args).toEqual(["[redacted]"]);
    expect(childRequest?.kwargs).toMatchObject({ also: "[redacted]" });
    expect(childRequest?.user).toContain("[redacted]");
    expect(copyIn(shown(asked))).toBeUndefined();
  });

  test("kept in context: the store's context row and the host's copy (a later call reads it redacted)", async () => {
    const { agent, origin, written } = await setup();
    expect((await agent.stash!(origin)).ok).toBe(true);
    const later = await agent.recall!();
    expect(later.value).toMatchObject({ token: "[redacted]", nested: { "[redacted]": ["[redacted]", { deeper: "x[redacted]" }] } });
    expect(copyIn(shown(later))).toBeUndefined();
    expect(copyIn(await written())).toBeUndefined();
  });

  test("written into the program's own text: the program is not kept (it would be a store row), the record says why, and the next call asks again", async () => {
    const { agent, origin, written } = await setup();
    const first = await agent.own!(origin);
    expect(first.ok, first.errorMessage).toBe(true);
    expect(first.value).toBe(200);
    const again = await agent.own!(origin);
    expect(again.ok, again.errorMessage).toBe(true);
    const records = Agent.history(agent) as readonly HistoryRecord[];
    expect(records.map((record) => record.program_source)).toEqual(["generated", "generated"]);
    expect(records[0]?.reuse_decision).toEqual({ kept: false, reason: expect.stringContaining("a credential this call sent") });
    expect(copyIn(await written())).toBeUndefined();
  });

  test("written into the program's own text and sent only when the program runs again after a conflict: still not kept", async () => {
    const api = await serve({ "/x": (_request, response) => void response.end("ok") });
    const database = join(mkdtempSync(join(tmpdir(), "improv-at-rest-")), "improv.db");
    const store = new SqliteStore(database);
    let runs = 0;
    const provider = new ScriptedProvider({ programs: { go: `const n = await tools.bump({}); if (n > 1) await fetch("${api.origin}/x", { headers: { authorization: "Bearer ${TOKEN}" } }); return n * 2;` } });
    const agent = await Agent.open("rerun", {
      store,
      id: "rerun-1",
      provider,
      egress: { allow: [api.origin], headers: { [api.origin]: { authorization: `Bearer ${TOKEN}` } } },
      tools: {
        // The first run's context is overtaken by another process: the program runs again, and then sends.
        bump: { description: "Counts runs.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: () => ((runs += 1) === 1 && moveVersionOn(database, "rerun-1"), runs) },
      },
    });
    opened.push({ agent, store });
    const outcome = await (agent as unknown as Setup["agent"]).go!();
    expect(outcome.value).toBe(4);
    expect(runs).toBe(2);
    expect((Agent.history(agent) as readonly HistoryRecord[]).at(-1)?.reuse_decision).toMatchObject({ kept: false, reason: expect.stringContaining("a credential this call sent") });
    expect(await store.programs("rerun")).toEqual([]);
  });

  test("credentials sent by a delegated call count for its caller: the caller's value and context hold no copy", async () => {
    const { agent, origin, written } = await setup();
    const outcome = await agent.gather!(origin);
    expect(outcome.value).toBe("[redacted]");
    expect(copyIn(shown(await agent.recall!()))).toBeUndefined();
    expect(copyIn(await written())).toBeUndefined();
  });
});

describe("what cannot hold a redacted text holds none: it is redacted whole", () => {
  test("bytes spelling the credential, returned and kept in context", async () => {
    const { agent, origin, written } = await setup();
    const outcome = await agent.bytes!(origin);
    expect(outcome.value).toEqual({ bytes: "[redacted]", buffer: "[redacted]" });
    expect((await agent.recall!()).value).toMatchObject({ bytes: "[redacted]" });
    expect(copyIn(await written())).toBeUndefined();
  });

  test("a credential of digits turned into a number and a BigInt", async () => {
    const { agent, origin, written } = await setup();
    const outcome = await agent.digits!(origin);
    expect(outcome.value).toEqual({ number: "[redacted]", big: "[redacted]", text: "[redacted]" });
    const text = await written();
    expect(copyIn(text, PIN)).toBeUndefined();
    expect(copyIn(text)).toBeUndefined();
  });

  test("a delegated role or method named by the credential is refused: agent ids, spans and records would hold it", async () => {
    const { agent, origin, written } = await setup();
    const outcome = await agent.name!(origin);
    expect(outcome.value).toMatchObject({ byRole: { ok: false, error_type: "invalid_input" }, byMethod: { ok: false, error_type: "invalid_input" } });
    expect((outcome.value as { byRole: { error_message: string } }).byRole.error_message).toContain("egress.headers");
    expect(copyIn(await written())).toBeUndefined();
  });
});

describe("a call whose tree sent no credentials is written as it is", () => {
  test("a value that merely looks like the credential is kept whole in the value, record, log and store", async () => {
    const { agent, written } = await setup();
    const outcome = await agent.echo!(TOKEN);
    expect(outcome.value).toBe(TOKEN);
    const text = await written();
    expect(text).not.toContain("[redacted]");
    expect(copyIn(text)).toBeDefined();
    expect((await agent.recall!()).value).toMatchObject({ echoed: TOKEN });
  });
});
