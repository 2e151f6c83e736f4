import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from "vitest";
import { McpConnectionError, mcpTools, type McpServer, type McpToolSet, type McpToolsOptions } from "../../src/tools/mcp.ts";
import { isServerTool, type Tool, type ToolExecuteOptions } from "../../src/tools/tool.ts";
import { Agent, ScriptedProvider } from "../../src/index.ts";
import { waitFor } from "../../test-support/wait-for.ts";
import { startNotesHttpServer, type NotesHttpServer } from "./fixtures/http-server.ts";
import { createNotesServer, INJECTED_DESCRIPTION } from "./fixtures/notes.ts";

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "fixtures");
const scratch = mkdtempSync(join(tmpdir(), "improv-mcp-"));

/** The notes server over stdio, run by this very Node. */
function notesServer(env?: Record<string, string>, cwd?: string): McpServer {
  return { command: process.execPath, args: [join(fixtures, "notes-server.ts")], ...(env === undefined ? {} : { env }), ...(cwd === undefined ? {} : { cwd }) };
}

const opened: McpToolSet[] = [];
/** mcpTools, with the set closed after the test. */
async function open(server: McpServer, options?: McpToolsOptions): Promise<McpToolSet> {
  const set = await mcpTools(server, options);
  opened.push(set);
  return set;
}

function callOptions(signal: AbortSignal = new AbortController().signal): ToolExecuteOptions {
  return { signal, abortSignal: signal, callId: "call-1", toolCallId: "tool-call-1", messages: [], context: {} };
}

/** Calls a tool of a set as the host would. */
async function call(set: McpToolSet, name: string, input: unknown = {}, signal?: AbortSignal): Promise<unknown> {
  const execute = set[name]?.execute;
  if (execute === undefined) throw new Error(`no tool ${name}`);
  return execute(input, callOptions(signal));
}

/** Rejects with what `promise` rejects with, and how long that took. */
async function rejection(promise: Promise<unknown>): Promise<{ error: Error; ms: number }> {
  const started = Date.now();
  try {
    await promise;
  } catch (error) {
    return { error: error as Error, ms: Date.now() - started };
  }
  throw new Error("expected a rejection");
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function logLines(file: string): string[] {
  return readFileSync(file, "utf8").trim().split("\n");
}

afterEach(async () => {
  await Promise.all(opened.splice(0).map((set) => set.close()));
});

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("mcpTools over stdio", () => {
  let notes: McpToolSet;
  beforeAll(async () => {
    notes = await mcpTools(notesServer());
  });
  afterAll(() => notes.close());

  test("lists every page of tools, one enumerable property each under an identifier, calling the server by its own name", async () => {
    // 16 tools in pages of 4: "inject" is on the last page. "a.b" collides with "a_b", "x.y" with
    // "x-y"; "close" and "" are left out.
    expect(Object.keys(notes).sort()).toEqual(["a_b", "append", "crash", "fail", "get_weather", "inject", "list", "picture", "retire", "slow", "whoami"]);
    expect(Object.getOwnPropertyDescriptor(notes, "close")?.enumerable).toBe(false);
    expect(typeof notes.close).toBe("function");
    expect(await call(notes, "get_weather", { city: "Paris" })).toBe("Sunny in Paris\n21 °C");
    expect(await call(notes, "a_b")).toBe("Says a_b.");
  });

  test("each tool carries the server's description, schemas and annotations, marked as coming from a server", () => {
    const { append, list, get_weather: weather } = notes;
    expect(append?.description).toBe("Adds a note.");
    expect(append?.inputSchema).toEqual({ type: "object", properties: { text: { type: "string" } }, required: ["text"] });
    // The server's hints are its claims, kept apart: the application has not said it trusts them.
    expect(append?.annotations).toBeUndefined();
    expect(append?.serverAnnotations).toEqual({ title: "Append a note", destructiveHint: false, idempotentHint: false, openWorldHint: false });
    expect(append?.outputSchema).toBeUndefined();
    expect(append?.timeoutMs).toBeUndefined();
    expect(list?.outputSchema).toEqual({ type: "object", properties: { notes: { type: "array", items: { type: "string" } } }, required: ["notes"] });
    expect(list?.annotations).toBeUndefined();
    expect(list?.serverAnnotations).toEqual({ readOnlyHint: true });
    expect(weather?.annotations).toBeUndefined();
    expect(weather?.serverAnnotations).toBeUndefined();
    expect(Object.values(notes).every((tool) => isServerTool(tool))).toBe(true);
    expect(isServerTool({ inputSchema: {}, execute: () => 1 })).toBe(false);
  });

  test("a result is its structured content, else its text joined, else its content items; an error result throws its text", async () => {
    expect(await call(notes, "append", { text: "milk" })).toBe("Noted (1).");
    expect(await call(notes, "append", { text: "eggs" })).toBe("Noted (2).");
    expect(await call(notes, "list")).toEqual({ notes: ["milk", "eggs"] });
    expect(await call(notes, "picture")).toEqual([
      { type: "text", text: "A red dot" },
      { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
    ]);
    const { error } = await rejection(call(notes, "fail"));
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("The notebook is locked.\nTry later.");
  });

  test("a description aimed at the model is kept as data, bounded, and marked as from a server", () => {
    const inject = notes.inject as Tool;
    expect(inject.description?.length).toBe(1_000);
    expect(inject.description).toBe(`${INJECTED_DESCRIPTION.slice(0, 999)}…`);
    expect(isServerTool(inject)).toBe(true);
  });

  test("a server that changes its tool list: calling a tool it removed rejects, the others still work", async () => {
    const set = await open(notesServer());
    expect(await call(set, "retire")).toBe("Retired get-weather.");
    const { error } = await rejection(call(set, "get_weather", { city: "Paris" }));
    expect(error.message).toBe("No tool named get-weather.");
    expect(await call(set, "append", { text: "still" })).toBe("Noted (1).");
  });

  test("the application's annotations are its own, over the server's (when trusted) field by field; timeoutMs is every tool's", async () => {
    const annotations = { append: { idempotentHint: true }, "get-weather": { readOnlyHint: false, openWorldHint: true }, get_weather: { readOnlyHint: true } };
    const set = await open(notesServer(), { annotations, timeoutMs: 5_000 });
    expect(set.append?.annotations).toEqual({ idempotentHint: true });
    expect(set.get_weather?.annotations).toEqual({ readOnlyHint: true, openWorldHint: true });
    expect(set.list?.annotations).toBeUndefined();
    expect(Object.values(set).every((tool) => tool.timeoutMs === 5_000)).toBe(true);
    const trusted = await open(notesServer(), { annotations, trustAnnotations: true });
    expect(trusted.append?.annotations).toEqual({ title: "Append a note", destructiveHint: false, idempotentHint: true, openWorldHint: false });
    expect(trusted.list?.annotations).toEqual({ readOnlyHint: true });
  });

  test("env and cwd reach the server process", async () => {
    const cwd = realpathSync(scratch);
    const set = await open(notesServer({ NOTES_OWNER: "ada" }, cwd));
    expect(await call(set, "whoami")).toMatchObject({ owner: "ada", cwd });
  });

  test("a script that never calls close() still exits once its work is done: the server holds the process only while a request waits", () => {
    const script = join(scratch, "forgetful.ts");
    const mcp = new URL("../../src/tools/mcp.ts", import.meta.url).href;
    writeFileSync(
      script,
      `import { mcpTools } from ${JSON.stringify(mcp)};
       const notes = await mcpTools({ command: process.execPath, args: [${JSON.stringify(join(fixtures, "notes-server.ts"))}] });
       console.log(await notes.get_weather.execute({ city: "Oslo" }, {}));
       await new Promise((resolve) => setTimeout(resolve, 300));
       console.log(await notes.append.execute({ text: "later" }, {}));\n`,
    );
    const began = performance.now();
    const run = spawnSync(process.execPath, [script], { encoding: "utf8", timeout: 30_000 });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(run.stdout).toBe("Sunny in Oslo\n21 °C\nNoted (1).\n");
    expect(performance.now() - began).toBeLessThan(25_000);
  });

  test("close() ends the server process, is safe to call twice, and later calls fail typed", async () => {
    const set = await mcpTools(notesServer());
    const { pid } = (await call(set, "whoami")) as { pid: number };
    expect(isAlive(pid)).toBe(true);
    await Promise.all([set.close(), set.close()]);
    await set.close();
    await waitFor(() => !isAlive(pid), 5_000);
    const { error } = await rejection(call(set, "append", { text: "late" }));
    expect(error).toBeInstanceOf(McpConnectionError);
    expect(error.name).toBe("McpConnectionError");
    expect(error.message).toMatch(/closed/);
  });

  test("a server that dies mid-call: the call rejects at once and is not sent again; the next call reconnects", async () => {
    const log = join(scratch, "dies.log");
    const set = await open(notesServer({ NOTES_LOG: log }));
    const { pid: first } = (await call(set, "whoami")) as { pid: number };
    await call(set, "append", { text: "before" });

    const { error, ms } = await rejection(call(set, "crash"));
    expect(error).toBeInstanceOf(McpConnectionError);
    expect(error.message).toMatch(/closed the connection during the call of tool "crash"/);
    expect(ms).toBeLessThan(5_000);

    // A new process: its notes start empty.
    expect(await call(set, "append", { text: "after" })).toBe("Noted (1).");
    const { pid: second } = (await call(set, "whoami")) as { pid: number };
    expect(second).not.toBe(first);
    expect(logLines(log).filter((line) => line.endsWith("call crash"))).toEqual([`${first} call crash`]);
  });

  test("a server that cannot be started again: the call after its death fails typed, naming the server and why", async () => {
    const set = await open(notesServer({ NOTES_ONCE: join(scratch, "once") }));
    await rejection(call(set, "crash"));
    const { error } = await rejection(call(set, "append", { text: "after" }));
    expect(error).toBeInstanceOf(McpConnectionError);
    expect(error.message).toContain("notes-server.ts");
    expect(error.message).toContain("refusing to start a second time");
    expect((error as McpConnectionError).server).toContain("notes-server.ts");
  });

  test("a server that takes forever: the call's signal ends the call promptly and the server is told", async () => {
    const log = join(scratch, "slow.log");
    const set = await open(notesServer({ NOTES_LOG: log }));
    const controller = new AbortController();
    const pending = call(set, "slow", {}, controller.signal);
    await waitFor(() => {
      try {
        return logLines(log).some((line) => line.endsWith("call slow"));
      } catch {
        return false;
      }
    });
    controller.abort();
    const { error, ms } = await rejection(pending);
    expect(error.name).toBe("AbortError");
    expect(ms).toBeLessThan(1_000);
    await waitFor(() => logLines(log).some((line) => line.endsWith("cancelled slow")));
    expect(await call(set, "append", { text: "next" })).toBe("Noted (1).");
  });

  test("timeoutMs is the SDK's limit for the request too", async () => {
    const set = await open(notesServer(), { timeoutMs: 300 });
    const { error, ms } = await rejection(call(set, "slow"));
    expect(error.message).toBe(`MCP tool "slow" on ${process.execPath} ${join(fixtures, "notes-server.ts")} did not answer within 300 ms.`);
    expect(ms).toBeGreaterThanOrEqual(250);
    expect(ms).toBeLessThan(2_000);
  });

  test("a server that cannot be reached rejects, naming the server and the cause", async () => {
    const missing = await rejection(mcpTools({ command: join(scratch, "no-such-server") }));
    expect(missing.error).toBeInstanceOf(McpConnectionError);
    expect(missing.error.message).toContain("no-such-server");
    expect(missing.error.message).toContain("ENOENT");

    const exits = await rejection(mcpTools({ command: process.execPath, args: ["-e", "process.stderr.write('config file missing'); process.exit(2)"] }));
    expect(exits.error).toBeInstanceOf(McpConnectionError);
    expect(exits.error.message).toContain("process.exit(2)");
    expect(exits.error.message).toContain("config file missing");
  });

  test("bad arguments are a TypeError", async () => {
    await expect(mcpTools({} as McpServer)).rejects.toThrow(TypeError);
    await expect(mcpTools({ url: "not a url" })).rejects.toThrow(/not a URL/);
    await expect(mcpTools(notesServer(), { timeoutMs: 0 })).rejects.toThrow(/timeoutMs must be a whole number/);
  });
});

describe("mcpTools with a server that answers garbage", () => {
  test("lines that are not JSON-RPC are ignored; a malformed or unreadable answer rejects the call, and the set goes on", async () => {
    const set = await open({ command: process.execPath, args: [join(fixtures, "garbage-server.ts")] }, { timeoutMs: 500 });
    expect(Object.keys(set)).toEqual(["noisy", "malformed", "nonsense"]);
    expect(await call(set, "noisy")).toBe("still here");

    const malformed = await rejection(call(set, "malformed"));
    expect(malformed.error).toBeInstanceOf(Error);
    expect(malformed.error.message).toMatch(/^MCP tool "malformed" on .*garbage-server\.ts answered a malformed result: content: .*expected array.*; isError: /);

    // Its answer cannot be read, so none arrives: the call's time limit ends it.
    const nonsense = await rejection(call(set, "nonsense"));
    expect(nonsense.error.message).toMatch(/"nonsense" .* did not answer within 500 ms/);

    expect(await call(set, "noisy")).toBe("still here");
  });
});

describe("mcpTools over Streamable HTTP", () => {
  let server: NotesHttpServer;
  beforeAll(async () => {
    server = await startNotesHttpServer();
  });
  afterAll(() => server.close());

  test("lists and calls the tools, sending the application's headers", async () => {
    const set = await open({ url: server.url, headers: { "x-notes-key": "k1" } });
    expect(Object.keys(set)).toContain("get_weather");
    expect(Object.keys(set)).toHaveLength(11);
    expect(await call(set, "append", { text: "milk" })).toBe("Noted (1).");
    expect(await call(set, "list")).toEqual({ notes: ["milk"] });
    expect(await call(set, "get_weather", { city: "Oslo" })).toBe("Sunny in Oslo\n21 °C");
    expect(server.requests.length).toBeGreaterThan(3);
    expect(server.requests.every((request) => request.headers["x-notes-key"] === "k1")).toBe(true);
  });

  test("close() ends the session on the server", async () => {
    const before = server.sessionCount();
    const set = await mcpTools({ url: server.url.href });
    expect(server.sessionCount()).toBe(before + 1);
    await set.close();
    await set.close();
    expect(server.sessionCount()).toBe(before);
  });

  test("a server that dies mid-call: the call rejects at once; the next call reconnects", async () => {
    const set = await open({ url: server.url });
    const pending = call(set, "slow");
    await waitFor(() => server.log.at(-1) === "call slow");
    server.restart();
    const { error, ms } = await rejection(pending);
    expect(error).toBeInstanceOf(McpConnectionError);
    expect(error.message).toContain(`MCP server ${server.url.href} closed the connection during the call of tool "slow"`);
    expect(ms).toBeLessThan(2_000);
    expect(await call(set, "append", { text: "after" })).toBe("Noted (1).");
    expect(server.sessionCount()).toBe(1);
  });

  test("a server that restarted between calls: the next call opens a new session and goes on", async () => {
    const set = await open({ url: server.url });
    expect(await call(set, "append", { text: "one" })).toBe("Noted (1).");
    server.forgetSessions();
    const [requests, lines] = [server.requests.length, server.log.length];
    expect(await call(set, "append", { text: "two" })).toBe("Noted (1).");
    // Refused for its session (404, so it never ran), then sent once on a new session.
    expect(server.requests[requests]).toMatchObject({ method: "POST", status: 404 });
    expect(server.log.slice(lines)).toEqual(["call append"]);
  });

  test("a URL nobody answers rejects, naming the URL and the cause", async () => {
    const gone = await startNotesHttpServer();
    await gone.close();
    const { error } = await rejection(mcpTools({ url: new URL("?token=secret", gone.url) }));
    expect(error).toBeInstanceOf(McpConnectionError);
    expect(error.message).toContain(gone.url.href);
    expect(error.message).toContain("ECONNREFUSED");
    expect(error.message).not.toContain("secret");
  });
});

describe("mcpTools with the application's Client", () => {
  async function connectedClient(): Promise<Client> {
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await createNotesServer().connect(serverSide);
    const client = new Client({ name: "app", version: "1.0.0" });
    await client.connect(clientSide);
    return client;
  }

  test("uses it, and close() leaves it open", async () => {
    const client = await connectedClient();
    const set = await mcpTools(client);
    expect(await call(set, "append", { text: "mine" })).toBe("Noted (1).");
    await set.close();
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    const { error } = await rejection(call(set, "list"));
    expect(error).toBeInstanceOf(McpConnectionError);
    await client.close();
  });

  test("reverts: the application's undo for a server's tool becomes its revert, and can call the same server", async () => {
    const client = await connectedClient();
    const undone: unknown[] = [];
    const set = await open(client, {
      reverts: {
        append: async (input: { text: string }, result, options) => {
          undone.push([input, result, options.idempotencyKey]);
          return options.callTool("append", { text: `undo ${input.text}` });
        },
      },
    });
    expect(typeof set.append?.revert).toBe("function");
    expect(set.list?.revert).toBeUndefined();
    const provider = new ScriptedProvider({ programs: { jot: "await tools.notes.append({ text: 'milk' }); throw new Error('no')" } });
    const agent = Agent.for("notes", { provider, tools: { notes: set }, onFailure: "revert" });
    const outcome = await agent.jot();
    expect(outcome.ok).toBe(false);
    expect(undone).toEqual([[{ text: "milk" }, "Noted (1).", `${outcome.callId}:1`]]);
    expect(await call(set, "list")).toEqual({ notes: ["milk", "undo milk"] });
    expect(Agent.history(agent).at(-1)?.tool_calls?.map((entry) => entry.state)).toEqual(["reverted"]);
    await expect(mcpTools(client, { reverts: { append: "cancel" as never } })).rejects.toThrow("mcpTools: reverts.append must be a function (input, result, options) that undoes one call of the tool (it is the string \"cancel\").");
    await client.close();
  });

  test("once the application closes it, calls fail typed, without reconnecting", async () => {
    const client = await connectedClient();
    const set = await open(client);
    await client.close();
    const { error } = await rejection(call(set, "append", { text: "late" }));
    expect(error).toBeInstanceOf(McpConnectionError);
    expect(error.message).toBe('The client of MCP server "notes" (the application\'s client) is no longer connected.');
  });
});

describe("mcpTools without the SDK", () => {
  test("says how to install it", async () => {
    vi.resetModules();
    vi.doMock("@modelcontextprotocol/sdk/client/index.js", () => {
      throw Object.assign(new Error("Cannot find package '@modelcontextprotocol/sdk'"), { code: "ERR_MODULE_NOT_FOUND" });
    });
    try {
      const fresh = await import("../../src/tools/mcp.ts");
      const { error } = await rejection(fresh.mcpTools(notesServer()));
      expect(error.message).toContain("npm install @modelcontextprotocol/sdk");
    } finally {
      vi.doUnmock("@modelcontextprotocol/sdk/client/index.js");
      vi.resetModules();
    }
  });
});
