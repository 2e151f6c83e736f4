/**
 * Binary values entering an isolate carry their own bytes and nothing else: no typed array a
 * program receives (an argument, its context, a delegated call's arguments or answer, a kept
 * value, an application value) is a view over a buffer of the sandbox process, so no program can
 * read another agent's messages through `view.buffer`.
 */
import { describe, expect, test } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, ScriptedProvider, SqliteStore, configureSandbox } from "../../src/index.ts";

/** A function for programs: every view and ArrayBuffer reachable from a value, with everything its buffer holds. */
const REPORT = `function report(value) {
  const views = [];
  const seen = new Set();
  const walk = (v) => {
    if (v === null || typeof v !== "object" || seen.has(v)) return;
    seen.add(v);
    if (ArrayBuffer.isView(v)) { views.push(v); return; }
    if (v instanceof ArrayBuffer) { views.push(new Uint8Array(v)); return; }
    if (v instanceof Map) { for (const [k, x] of v) { walk(k); walk(x); } return; }
    if (v instanceof Set) { for (const x of v) walk(x); return; }
    for (const k of Object.keys(v)) walk(v[k]);
  };
  walk(value);
  return views.map((v) => ({
    kind: Object.prototype.toString.call(v).slice(8, -1),
    byteOffset: v.byteOffset,
    byteLength: v.byteLength,
    bufferLength: v.buffer.byteLength,
    buffer: Array.from(new Uint8Array(v.buffer)),
  }));
}
`;

/** A program that reports the views reachable from `value` (an expression). */
function binaryReport(value: string): string {
  return `${REPORT}return report(${value});`;
}

interface ViewReport {
  readonly kind: string;
  readonly byteOffset: number;
  readonly byteLength: number;
  readonly bufferLength: number;
  readonly buffer: number[];
}

function bytesOf(view: ArrayBufferView | ArrayBuffer): number[] {
  return ArrayBuffer.isView(view) ? Array.from(new Uint8Array(view.buffer, view.byteOffset, view.byteLength)) : Array.from(new Uint8Array(view));
}

/** Each view the program saw holds exactly the bytes of the value sent, in a buffer of its own. */
function expectOwnBytes(reports: unknown, sent: readonly (ArrayBufferView | ArrayBuffer)[]): void {
  expect(Array.isArray(reports)).toBe(true);
  const seen = reports as ViewReport[];
  expect(seen).toHaveLength(sent.length);
  seen.forEach((report, index) => {
    const expected = bytesOf(sent[index] as ArrayBufferView);
    expect({ kind: report.kind, byteOffset: report.byteOffset, bufferLength: report.bufferLength, buffer: report.buffer }).toEqual({
      kind: report.kind,
      byteOffset: 0,
      bufferLength: expected.length,
      buffer: expected,
    });
  });
}

/** Every kind of view, each over a larger buffer at an offset (as a slice of a file read would be). */
function everyView(): ArrayBufferView[] {
  const backing = () => {
    const buffer = new ArrayBuffer(256);
    new Uint8Array(buffer).forEach((_, index, all) => (all[index] = (index * 7 + 3) % 251));
    return buffer;
  };
  const pooled = Buffer.from("pooled bytes"); // Node's small buffers share one slab
  return [
    new Int8Array(backing(), 8, 5),
    new Uint8Array(backing(), 3, 7),
    new Uint8ClampedArray(backing(), 1, 4),
    new Int16Array(backing(), 16, 3),
    new Uint16Array(backing(), 2, 5),
    new Int32Array(backing(), 32, 2),
    new Uint32Array(backing(), 4, 3),
    new Float32Array(backing(), 12, 2),
    new Float64Array(backing(), 8, 2),
    new BigInt64Array(backing(), 16, 2),
    new BigUint64Array(backing(), 24, 1),
    new DataView(backing(), 5, 9),
    pooled,
    new Uint8Array([1, 2, 3]),
  ];
}

describe("binary values entering an isolate", () => {
  test("arguments: every kind of typed array and DataView, at any offset, arrives as its own bytes only", async () => {
    const provider = new ScriptedProvider({ programs: { inspect: binaryReport("args") } });
    const agent = Agent.for("binary-args", { provider });
    const views = everyView();
    const outcome = await agent.inspect(...views, "ssn 123-45-6789 of another user");
    expect(outcome.errorMessage).toBeUndefined();
    expectOwnBytes(outcome.value, views);
  });

  test("named arguments, and views nested in objects, arrays, Maps and Sets", async () => {
    const provider = new ScriptedProvider({ programs: { inspect: binaryReport("[args, kwargs]") } });
    const agent = Agent.for("binary-nested", { provider });
    const [a, b, c, d] = everyView();
    const outcome = await Agent.call(agent, "inspect", [{ list: [a], map: new Map([["k", b]]) }, new Set([c])], { kwargs: { d } });
    expect(outcome.errorMessage).toBeUndefined();
    expectOwnBytes(outcome.value, [a, b, c, d] as ArrayBufferView[]);
  });

  test("a view in an array's named property arrives as its own bytes", async () => {
    const provider = new ScriptedProvider({ programs: { inspect: binaryReport("[args[0].extra]") } });
    const agent = Agent.for("binary-array-property", { provider });
    const list: unknown[] & { extra?: Uint8Array } = [1, 2];
    list.extra = new Uint8Array([65, 66, 67]);
    const outcome = await agent.inspect(list, "another agent's payload");
    expect(outcome.errorMessage).toBeUndefined();
    expectOwnBytes(outcome.value, [new Uint8Array([65, 66, 67])]);
  });

  test("a view over a SharedArrayBuffer of the host arrives as a copy the host's memory cannot change", async () => {
    const provider = new ScriptedProvider({ programs: { inspect: binaryReport("args") } });
    const agent = Agent.for("binary-shared", { provider });
    const memory = new SharedArrayBuffer(64);
    const shared = [new Int32Array(memory, 8, 4), new Uint8Array(memory, 3, 5)] as const;
    shared[0].set([1, -2, 3, -4]);
    shared[1].set([9, 8, 7, 6, 5]);
    const outcome = await agent.inspect(...shared);
    expect(outcome.errorMessage).toBeUndefined();
    expectOwnBytes(outcome.value, [...shared]);
  });

  test("context: a view the application stored, and one a program kept, are their own bytes in later calls", async () => {
    const provider = new ScriptedProvider({
      programs: {
        keep: "context.kept = new Float64Array(new ArrayBuffer(64), 16, 2); context.kept.set([1.5, -2.25]); context.small = new Uint8Array(new ArrayBuffer(9), 1, 3).fill(6); return true",
        inspect: binaryReport("[context.stored, context.kept, context.small]"),
      },
    });
    const agent = Agent.for<{ stored: Uint16Array }>("binary-context", { provider });
    const stored = new Uint16Array(new ArrayBuffer(32), 6, 3);
    stored.set([7, 8, 9]);
    agent.stored = stored;
    expect((await agent.keep()).ok).toBe(true);
    const outcome = await agent.inspect();
    expect(outcome.errorMessage).toBeUndefined();
    expectOwnBytes(outcome.value, [stored, new Float64Array([1.5, -2.25]), new Uint8Array([6, 6, 6])]);
  });

  test("a durable agent's stored context: the application and its programs get views of their own bytes after a reopen", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "improv-binary-")), "improv.db");
    const provider = new ScriptedProvider({ programs: { inspect: binaryReport("[context.stored]") } });
    const first = new SqliteStore(path);
    const agent = await Agent.open<{ stored: Uint8Array; note: string }>("binary-durable", { provider, store: first, id: "b-1" });
    agent.note = "x".repeat(500);
    agent.stored = new Uint8Array([3, 1, 4, 1, 5]);
    await Agent.save(agent);
    await first.close();
    const second = new SqliteStore(path);
    const reopened = await Agent.open<{ stored: Uint8Array; note: string }>("binary-durable", { provider, store: second, id: "b-1" });
    const stored = reopened.stored;
    expect({ byteOffset: stored.byteOffset, bufferLength: stored.buffer.byteLength, bytes: [...stored] }).toEqual({ byteOffset: 0, bufferLength: 5, bytes: [3, 1, 4, 1, 5] });
    const outcome = await reopened.inspect();
    expect(outcome.errorMessage).toBeUndefined();
    expectOwnBytes(outcome.value, [new Uint8Array([3, 1, 4, 1, 5])]);
    await second.close();
  });

  test("a delegated call's arguments and its answer, and a kept value read with content(), are their own bytes", async () => {
    const provider = new ScriptedProvider({
      programs: {
        "binary-parent.make": "return { bytes: new Int16Array(new ArrayBuffer(40), 4, 3).fill(-5) }",
        "binary-parent.relay": `${REPORT}
const ref = context.conversation_history.findLast((r) => r.method_name === "make").outcome_summary.content_ref;
const kept = await content(ref);
const answered = await delegate("binary-child").echo(new Uint32Array(new ArrayBuffer(48), 8, 2).fill(9));
return { kept: report(kept), childSaw: answered.value.reports, answer: report(answered.value.back) };`,
        "binary-child.echo": `${REPORT}return { reports: report(args), back: new Uint8Array(new ArrayBuffer(16), 2, 3).fill(4) };`,
      },
    });
    const agent = Agent.for("binary-parent", { provider });
    expect((await agent.make()).ok).toBe(true);
    const outcome = await agent.relay();
    expect(outcome.errorMessage).toBeUndefined();
    const seen = outcome.value as { kept: ViewReport[]; childSaw: ViewReport[]; answer: ViewReport[] };
    expectOwnBytes(seen.kept, [new Int16Array([-5, -5, -5])]);
    expectOwnBytes(seen.childSaw, [new Uint32Array([9, 9])]);
    expectOwnBytes(seen.answer, [new Uint8Array([4, 4, 4])]);
  });

  test("a tool's binary result never reaches a program as a view over more than its own bytes", async () => {
    // Node's small Buffers are slices of one shared slab, which holds other values of the host.
    const other = Buffer.from("host secret of another agent");
    const provider = new ScriptedProvider({
      programs: {
        inspect: `${REPORT}try { const result = await tools.bytes({}); return { reports: report(result) }; } catch (error) { return { refused: error.name + ": " + error.message }; }`,
      },
    });
    const agent = Agent.for("binary-tool", {
      provider,
      tools: { bytes: { description: "Bytes.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, execute: () => ({ data: Buffer.from("tool bytes") }) } },
    });
    const outcome = await agent.inspect();
    expect(outcome.errorMessage).toBeUndefined();
    const value = outcome.value as { reports?: ViewReport[]; refused?: string };
    if (value.reports !== undefined) expectOwnBytes(value.reports, [Buffer.from("tool bytes")]);
    else expect(value.refused).toMatch(/^ToolError: .*data/);
    expect(JSON.stringify(outcome.value)).not.toContain(JSON.stringify([...other.subarray(0, 8)]).slice(1, -1));
  });

  test("100 agents at once, each with a secret in its context and binary arguments: none reads another's data", async () => {
    configureSandbox({ processes: 2 });
    const provider = new ScriptedProvider({
      programs: {
        "tenant.scan": `const text = String.fromCharCode(...new Uint8Array(args[0].buffer));
const found = text.match(/secret-of-tenant-\\d+/g) ?? [];
return { found, bufferLength: args[0].buffer.byteLength, byteLength: args[0].byteLength };`,
      },
    });
    const agents = Array.from({ length: 100 }, (_, index) => {
      const agent = Agent.for<{ profile: string }>("tenant", { provider, id: `tenant-${index}` });
      agent.profile = `secret-of-tenant-${index} ssn ${String(index).padStart(3, "0")}-45-6789`;
      return agent;
    });
    for (let round = 0; round < 3; round += 1) {
      const outcomes = await Promise.all(agents.map((agent, index) => agent.scan(new Uint8Array(new ArrayBuffer(64), 4, 8).fill(index), `secret-of-tenant-${index}`)));
      for (const outcome of outcomes) {
        expect(outcome.errorMessage).toBeUndefined();
        expect(outcome.value).toEqual({ found: [], bufferLength: 8, byteLength: 8 });
      }
    }
  });
});
