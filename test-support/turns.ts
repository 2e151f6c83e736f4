/**
 * Processes calling one durable agent at once, for the tests of processes taking turns:
 * `turnsProcess` runs test-support/fixtures/turns.ts and gathers its outcomes; `checkCounter`
 * reads the store afterwards and says what is wrong with the counter agent there, if anything.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { DatabaseSync } from "node:sqlite";
import type { Store } from "../src/index.ts";

const TURNS = new URL("./fixtures/turns.ts", import.meta.url).pathname;

export interface CallLine {
  readonly ok: boolean;
  readonly value?: number;
  readonly errorType?: string;
  readonly errorMessage?: string;
  readonly asked: number;
}

export interface TurnsProcess {
  readonly child: ChildProcess;
  /** Outcomes printed so far, one per resolved call. */
  readonly calls: CallLine[];
  /** Resolves once its agent is open (with `go`, it then waits for a line on stdin). */
  readonly opened: Promise<void>;
  /** Resolves when the process ends: its exit code, signal and what it wrote to stderr. */
  readonly done: Promise<{ code: number | null; signal: NodeJS.Signals | null; finished: boolean; stderr: string }>;
}

/** Starts the turns fixture: `calls` calls of `method` on agent `id`. */
export function turnsProcess(location: string, id: string, calls: number, method: "inc" | "hold" | "stall", options: Record<string, unknown> = {}): TurnsProcess {
  const child = spawn(process.execPath, [TURNS, location, id, String(calls), method, JSON.stringify(options)], { stdio: ["pipe", "pipe", "pipe"] });
  const lines: CallLine[] = [];
  let finished = false;
  let ready!: () => void;
  const opened = new Promise<void>((resolve) => (ready = resolve));
  let pending = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    pending += chunk.toString("utf8");
    const parts = pending.split("\n");
    pending = parts.pop() ?? "";
    for (const part of parts) {
      if (part === "ready") ready();
      else if (part === "done") finished = true;
      else lines.push(JSON.parse(part) as CallLine);
    }
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; finished: boolean; stderr: string }>((resolve) => child.on("close", (code, signal) => resolve({ code, signal, finished, stderr })));
  return { child, calls: lines, done, opened };
}

/** What is wrong with counter agent `id` in `store` after `calls` counted calls, none failed (empty: nothing); closes the store. */
export async function checkCounter(store: Store, id: string, calls: number): Promise<string[]> {
  try {
    const state = await store.open(id, "counter");
    const records = state.records.map((text) => JSON.parse(text) as { call_id: string; outcome_summary: { ok: boolean } });
    const problems: string[] = [];
    if (records.length !== calls) problems.push(`${records.length} records, not ${calls}`);
    if (state.length !== records.length) problems.push(`the agent says ${state.length} records, the store holds ${records.length}`);
    if (new Set(records.map((record) => record.call_id)).size !== records.length) problems.push("a call id is recorded twice");
    const failed = records.filter((record) => !record.outcome_summary.ok).length;
    if (failed > 0) problems.push(`${failed} records of failed calls`);
    if (state.context?.values.n !== calls) problems.push(`context.n is ${String(state.context?.values.n)}, not ${calls}`);
    const log = state.context?.values.log as number[] | undefined;
    if (JSON.stringify(log) !== JSON.stringify(Array.from({ length: calls }, (_, index) => index + 1))) problems.push(`context.log is not 1…${calls} in order: ${JSON.stringify(log?.slice(0, 20))}…`);
    return problems;
  } finally {
    await store.close();
  }
}

/** Moves agent `id`'s version on in the SQLite file at `path`, as another writer that ignores leases would: a commit made on the version before meets a conflict. */
export function moveVersionOn(path: string, id: string): void {
  const db = new DatabaseSync(path);
  try {
    db.prepare("UPDATE improv_agents SET version = version + 1 WHERE id = ?").run(id);
  } finally {
    db.close();
  }
}
