/**
 * Entry point of the sandbox process. The host forks it with `--no-node-snapshot`; it owns
 * every isolate, talks to the host only through IPC messages (see `../protocol.ts`), and
 * keeps no state the host cannot rebuild: if it dies, the host starts a new one.
 */
import { AgentIsolate, FIRST_MIRROR_RESERVE_MB, type RunControl } from "./agent-isolate.ts";
import type { BridgeAnswer, ChildWireMessage, HostMessage, RunReport, RunRequestMessage } from "../protocol.ts";
import { writeSync } from "node:fs";
import { BUSY_GRACE_MS, REPORT_FD, bridgeFailure, freeLine, nextRunId, packResult, resumedLine, startedLine, unpackRun } from "../protocol.ts";
import { readBridgeRequest } from "./bridge-reader.ts";
import { ownBytes } from "../own-bytes.ts";
import { MemoryWatch } from "./memory-watch.ts";

/**
 * Memory for the isolates of agents between calls, in this process (the host's share of
 * `configureSandbox({ isolateCacheMb })` for it): past it, the least recently used idle isolates
 * are disposed; a busy one never is. The host sends it before any run; this holds until then.
 * @unit MiB
 */
let isolateCacheMb = 256;

const isolates = new Map<string, AgentIsolate>();
const creating = new Map<string, Promise<AgentIsolate>>();
const controls = new Map<number, RunControl>();
/** Runs whose program has started and whose answer has not been sent. */
const startedRuns = new Set<number>();
const runIdByCall = new Map<string, number>();
/** Requests of programs not answered yet, by the id they went to the host with. */
const bridgeWaiters = new Map<number, { readonly runId: number; readonly isolateRequestId: number }>();
let nextRequestId = 1;

function send(message: ChildWireMessage): void {
  if (process.connected) process.send?.(message);
}

function report(line: string): void {
  try {
    writeSync(REPORT_FD, line);
  } catch {
    // No host to tell.
  }
}

/** A program's request, read and sent to the host; a request of a run no longer here is never answered. */
function onBridge(callId: string, isolateRequestId: number, untrusted: unknown): void {
  const runId = runIdByCall.get(callId);
  if (runId === undefined) return;
  const requestId = nextRequestId;
  nextRequestId = nextRunId(nextRequestId);
  const request = readBridgeRequest(untrusted);
  bridgeWaiters.set(requestId, { runId, isolateRequestId });
  if (typeof request !== "string") send({ type: "bridge", runId, requestId, request });
  // Refused here: answered on a turn of its own, as the host's answers are.
  else setImmediate(answerRequest, requestId, bridgeFailure("invalid_input", request));
}

/**
 * Hands the answer to a program's request to its run, which runs on in an entry on this thread:
 * held like a synchronous part (the watch names it, and past the grace other runs are excused).
 * An answer for a run no longer here is dropped.
 */
function answerRequest(requestId: number, answer: BridgeAnswer, tell = false): void {
  const waiter = bridgeWaiters.get(requestId);
  bridgeWaiters.delete(requestId);
  if (waiter === undefined) return;
  const deliver = controls.get(waiter.runId)?.deliver;
  if (deliver === undefined) return;
  if (tell) report(resumedLine(waiter.runId));
  holdFor(waiter.runId, () => deliver(waiter.isolateRequestId, answer));
}

/** Runs `work`, which holds this thread for the run: the watch names the run, and a hold past the grace excuses the others. */
function holdFor<T>(runId: number, work: () => T): T {
  const hold = memoryWatch.holding(runId);
  const began = performance.now();
  try {
    return work();
  } finally {
    memoryWatch.holding(0);
    letGo(runId, hold, performance.now() - began);
  }
}

/**
 * Ends this process at once. `process.exit()` can hang while an isolate thread is stuck
 * (isolated-vm #260), and SIGKILL cannot; the host starts a new sandbox process on demand.
 */
function die(reason: string): never {
  if (reason) process.stderr.write(`improv sandbox: ${reason}; the sandbox process ends and the host starts a new one.\n`);
  process.kill(process.pid, "SIGKILL");
  throw new Error("unreachable");
}

function onCatastrophe(message: string): void {
  // A run still in its synchronous part has not said it started: it must not be sent again.
  for (const runId of startedRuns) report(startedLine(runId));
  die(`isolated-vm lost control of an isolate (${message})`);
}

/**
 * Backstop for memory the isolates' own limits did not catch (they are guidelines, and some
 * allocations happen outside the heap), watched from a thread of its own.
 */
const memoryWatch = new MemoryWatch();
/**
 * The process's ceiling for the isolates it holds now: room for what each isolate with work
 * here (a program running or about to, a sync on its way) may grow to (its limit and its
 * mirror's, with the engine's margin), and the resident size of each idle one and each spare,
 * which does not grow. Idle isolates counted by their limits would lift the ceiling with every agent cached
 * (a hundred idle agents of 64 MiB, some 20 GiB) until it stopped nothing.
 */
function memoryCeilingMb(): number {
  baselineRssMb ??= Math.ceil(process.memoryUsage.rss() / 2 ** 20);
  let limitsMb = 0;
  let idleMb = 0;
  for (const [agentId, isolate] of isolates) {
    if (isolate.busy || inUse.has(agentId)) limitsMb += isolate.memoryLimitMb + isolate.mirrorAllowanceMb;
    else idleMb += isolate.residentMb;
  }
  for (const isolate of retired) limitsMb += isolate.memoryLimitMb + isolate.mirrorAllowanceMb;
  return Math.max(MIN_CEILING_MB, Math.ceil(baselineRssMb + 3 * limitsMb + idleMb + sparesMb() + 256));
}
/**
 * The process's own size before its first run (Node, the watch thread), and the least ceiling:
 * low enough that memory no limit counts (an uninterruptible built-in filling an array) is
 * stopped within a few seconds even on a loaded machine, well before a default time limit.
 */
let baselineRssMb: number | undefined;
const MIN_CEILING_MB = 512;

/**
 * How far an isolate's mirror can grow before the isolate is rebuilt: at least this, and four
 * times the mirror it starts with. A rebuild resends the whole history, and the sandbox process
 * keeps the memory that transfer passed through, so rebuilds should be rare; the part of the
 * reserve the mirror does not use is held back and costs no memory.
 */
const MIN_MIRROR_RESERVE_MB = 256;
/** A mirror smaller than this gets the small first reserve ({@link FIRST_MIRROR_RESERVE_MB}). @unit MiB */
const SMALL_MIRROR_MB = 4;
const MIRROR_RESERVE_FACTOR = 4;

/**
 * The agent's isolate, made anew when it was disposed, its limit changed, or the history
 * outgrew the mirror reserve. The isolate allows exactly the mirror the host measured on top of
 * the program's `memoryLimitMb` (see `AgentIsolate.allowMirror`).
 */
async function isolateFor(agentId: string, memoryLimitMb: number, mirrorMb: number): Promise<AgentIsolate> {
  return warmIsolate(agentId, memoryLimitMb, mirrorMb) ?? reusedIsolate(agentId, memoryLimitMb, mirrorMb) ?? newIsolate(agentId, memoryLimitMb, mirrorMb);
}

/** The agent's isolate when it can take the run as it is (kept most recently used), else undefined. */
function warmIsolate(agentId: string, memoryLimitMb: number, mirrorMb: number): AgentIsolate | undefined {
  const existing = isolates.get(agentId);
  // A busy isolate (a program of the agent still settling) keeps what it allows, if that is enough.
  if (
    existing &&
    !existing.isDisposed &&
    existing.memoryLimitMb === memoryLimitMb &&
    (existing.mirrorMb === mirrorMb || (existing.busy ? existing.mirrorMb > mirrorMb : existing.allowMirror(mirrorMb)))
  ) {
    isolates.delete(agentId);
    isolates.set(agentId, existing);
    return existing;
  }
  return undefined;
}

/** A new isolate for the agent (one already being made for it, if so); callers try {@link reusedIsolate} first. */
async function newIsolate(agentId: string, memoryLimitMb: number, mirrorMb: number): Promise<AgentIsolate> {
  const pending = creating.get(agentId);
  if (pending) return pending;
  const reserve = mirrorMb < SMALL_MIRROR_MB ? FIRST_MIRROR_RESERVE_MB : Math.max(MIN_MIRROR_RESERVE_MB, mirrorMb * MIRROR_RESERVE_FACTOR);
  const created = AgentIsolate.create(memoryLimitMb, mirrorMb, reserve, onBridge, onCatastrophe).finally(() => creating.delete(agentId));
  creating.set(agentId, created);
  const isolate = adopt(agentId, await created);
  if (!runtimeWarmed) {
    runtimeWarmed = true;
    warmWhenIdle();
  }
  return isolate;
}

/** Whether `AgentIsolate.warmRuntimeCode` was started in this process. */
let runtimeWarmed = false;

/**
 * Warms the runtime's code cache once this process has made an isolate and has nothing running
 * or waiting: it holds this thread for some milliseconds, which no run's deadline may be charged.
 */
function warmWhenIdle(): void {
  if (controls.size > 0 || waitingRuns.length > 0 || creating.size > 0) {
    setTimeout(warmWhenIdle, 100).unref();
    return;
  }
  void AgentIsolate.warmRuntimeCode(onCatastrophe);
}

/**
 * A spare (or, with the budget full, the least recently used idle isolate) for the agent, when
 * one will do (see {@link spares}); taken at once, so the run starts on this turn.
 */
function reusedIsolate(agentId: string, memoryLimitMb: number, mirrorMb: number): AgentIsolate | undefined {
  if (creating.has(agentId) || mirrorMb >= SMALL_MIRROR_MB) return undefined;
  const spare = takeSpare(memoryLimitMb, mirrorMb);
  return spare === undefined ? undefined : adopt(agentId, spare);
}

/**
 * Isolates replaced while a run was still in them (a run of the agent that needed a larger one
 * came meanwhile): each is disposed once its last run ends, not under it.
 */
const retired = new Set<AgentIsolate>();

/** Makes `isolate` the agent's, in place of any it had. */
function adopt(agentId: string, isolate: AgentIsolate): AgentIsolate {
  const existing = isolates.get(agentId);
  if (existing !== undefined && existing !== isolate) {
    if (existing.busy) retired.add(existing);
    else existing.dispose();
  }
  isolates.delete(agentId);
  isolates.set(agentId, isolate);
  evictIdle();
  return isolate;
}

/**
 * Isolates whose agents are gone (closed, collected, or dropped from the budget), made ready for
 * new agents (see `AgentIsolate.recycle`): a new agent takes one instead of making one, which is
 * most of what a cold agent costs. Only isolates with the small mirror reserve, whose runs all
 * ended normally, that the runtime could reset; at most {@link SPARES}, and counted against the
 * budget like idle isolates (and dropped first). `configureSandbox({ reuseIsolates: false })`
 * turns this off: every agent then gets an isolate no other agent had.
 */
const spares: AgentIsolate[] = [];
const SPARES = 8;
let reuseIsolates = true;
/**
 * Agents the host forgot while a run of theirs was here or on its way: their isolates are released
 * once it is over (see `tidy`). One whose run never comes stays, the oldest dropped past
 * {@link MAX_FORGOTTEN}.
 */
const forgotten = new Set<string>();
const MAX_FORGOTTEN = 1_024;
/** Agents' isolates taken from the spares since the process started. */
let reused = 0;

/** Keeps the isolate of an agent that is gone as a spare when it can be reset, else disposes it. */
function release(isolate: AgentIsolate): void {
  if (!reuseIsolates || spares.length >= SPARES || isolate.mirrorReserveMb !== FIRST_MIRROR_RESERVE_MB || !isolate.recycle(randomSeed())) {
    isolate.dispose();
    return;
  }
  spares.push(isolate);
}

/** Takes a gone agent's isolate off the books and releases it (see {@link release}). */
function releaseIsolateOf(agentId: string): void {
  forgotten.delete(agentId);
  const isolate = isolates.get(agentId);
  isolates.delete(agentId);
  if (isolate !== undefined) release(isolate);
}

function randomSeed(): number[] {
  return [...crypto.getRandomValues(new Uint32Array(4))];
}

/** A spare of that limit allowing `mirrorMb`, taken off the list; undefined when there is none. */
function takeSpare(memoryLimitMb: number, mirrorMb: number): AgentIsolate | undefined {
  const index = spares.findLastIndex((spare) => spare.memoryLimitMb === memoryLimitMb && !spare.isDisposed);
  if (index < 0) return reclaimLeastRecent(memoryLimitMb, mirrorMb);
  const spare = spares.splice(index, 1)[0]!;
  // One that cannot hold back its reserve is disposed by allowMirror: the call makes its own.
  if (!spare.allowMirror(mirrorMb)) return undefined;
  reused += 1;
  return spare;
}

/** What the spares hold. @unit MiB */
function sparesMb(): number {
  return spares.reduce((sum, spare) => sum + spare.residentMb, 0);
}

/**
 * Agents with work here (a run from its arrival to its answer, a sync until it is added), by how
 * much: their isolates are in use even before a program starts in them, and are never dropped.
 */
const inUse = new Map<string, number>();
function use(agentId: string, change: 1 | -1): void {
  const count = (inUse.get(agentId) ?? 0) + change;
  if (count > 0) inUse.set(agentId, count);
  else inUse.delete(agentId);
}

/**
 * Agents whose large history is on its way in sync chunks, each held in use from its first
 * chunk until its run arrives: dropped between two chunks (another agent's isolate made under
 * a small budget), the isolate would lose the mirror built so far and the host would have to
 * start the sync again. A hold lapses {@link SYNC_HOLD_MS} after its last chunk, so a sync the
 * host gave up (its call ended, or was cancelled) does not keep the isolate for good.
 */
const syncHolds = new Map<string, NodeJS.Timeout>();
/** @unit ms */
const SYNC_HOLD_MS = 60_000;

function holdForSync(agentId: string): void {
  const held = syncHolds.get(agentId);
  if (held === undefined) use(agentId, 1);
  else clearTimeout(held);
  const lapse = setTimeout(releaseSyncHold, SYNC_HOLD_MS, agentId);
  lapse.unref();
  syncHolds.set(agentId, lapse);
}

function releaseSyncHold(agentId: string): void {
  const held = syncHolds.get(agentId);
  if (held === undefined) return;
  clearTimeout(held);
  syncHolds.delete(agentId);
  use(agentId, -1);
}

/** Calls tidied since the isolates were last checked against the budget, and how many may be. */
let tidiedSinceEviction = 0;
const EVICTION_EVERY = 16;

/** Disposes the least recently used idle isolates while those idle hold more than the budget. */
function evictIdle(): void {
  tidiedSinceEviction = 0;
  let held = heldMb();
  // Spares go first: an agent's own isolate also spares its history's sync and its programs' compiling.
  while (held > isolateCacheMb && spares.length > 0) {
    const spare = spares.shift()!;
    held -= spare.residentMb;
    spare.dispose();
  }
  for (const [agentId, isolate] of isolates) {
    if (held <= isolateCacheMb) break;
    if (isolate.busy || inUse.has(agentId)) continue;
    held -= isolate.residentMb;
    isolate.dispose();
    isolates.delete(agentId);
  }
}

/** What the idle isolates and the spares hold. @unit MiB */
function heldMb(): number {
  let held = sparesMb();
  for (const [agentId, isolate] of isolates) if (!isolate.busy && !inUse.has(agentId)) held += isolate.residentMb;
  return held;
}

/**
 * With the budget too full for one more isolate, the least recently used idle one would be
 * dropped to make room for the one a new agent makes: reset, it serves that agent instead.
 */
function reclaimLeastRecent(memoryLimitMb: number, mirrorMb: number): AgentIsolate | undefined {
  if (!reuseIsolates || heldMb() + NEW_ISOLATE_MB <= isolateCacheMb) return undefined;
  for (const [agentId, isolate] of isolates) {
    if (isolate.busy || inUse.has(agentId) || isolate.memoryLimitMb !== memoryLimitMb || isolate.mirrorReserveMb !== FIRST_MIRROR_RESERVE_MB) continue;
    isolates.delete(agentId);
    forgotten.delete(agentId);
    if (!isolate.recycle(randomSeed()) || !isolate.allowMirror(mirrorMb)) {
      isolate.dispose();
      return undefined;
    }
    reused += 1;
    return isolate;
  }
  return undefined;
}

/** What a new isolate holds before its process compacts it (2.5 to 4 MiB measured). @unit MiB */
const NEW_ISOLATE_MB = 3;

/**
 * Once nothing has run here for a moment, isolates not yet compacted are, one per turn of the
 * event loop while nothing else is to be done, the most recently used first (see
 * `AgentIsolate.compact`): a run that arrives meanwhile waits for one collection at most.
 */
let compacting: NodeJS.Timeout | undefined;
const COMPACT_AFTER_IDLE_MS = 1_000;
/** When a run last arrived or was tidied after. @unit ms, on `performance.now()`'s clock */
let lastActive = 0;
function compactWhenIdle(): void {
  if (compacting !== undefined) return;
  compacting = setTimeout(() => {
    compacting = undefined;
    compactNext();
  }, COMPACT_AFTER_IDLE_MS);
  compacting.unref();
}

function compactNext(): void {
  if (controls.size > 0 || waitingRuns.length > 0 || creating.size > 0 || performance.now() - lastActive < COMPACT_AFTER_IDLE_MS) {
    compactWhenIdle();
    return;
  }
  // Idle: the budget is checked once more (between checks, isolates that became idle may pass it).
  if (tidiedSinceEviction > 0) evictIdle();
  const next = [...spares, ...isolates.values()].findLast((isolate) => isolate.compactable);
  if (next === undefined) return;
  memoryWatch.runStarted();
  try {
    next.compact();
  } finally {
    memoryWatch.runEnded();
  }
  // Not unref'd: an unref'd immediate waits for the next message to wake the event loop.
  setImmediate(compactNext);
}

/**
 * A hold of this thread (`hold`, see `busyLine`) that lasted the busy grace or longer delayed
 * every other run here: their deadlines do not count that time, and the host is told exactly
 * how long it was so its deadlines do not either (the held rule in `../protocol.ts`).
 */
function letGo(runId: number, hold: number, elapsedMs: number): void {
  const heldMs = Math.floor(elapsedMs);
  if (heldMs < BUSY_GRACE_MS) return;
  for (const [other, control] of controls) if (other !== runId) control.excuse?.(heldMs);
  report(freeLine(runId, hold, heldMs));
}

/**
 * Runs start one at a time, and a run that arrives while another is starting waits for the
 * next turn of the event loop after that one's synchronous part: by then the answers of the
 * runs before it have been sent, so none waits behind another's program. A run that arrives
 * alone starts at once.
 */
const waitingRuns: RunRequestMessage[] = [];
let startingRun = false;

/** When each waiting run's call must have ended, counted from the run's arrival. */
const callEndsAt = new Map<number, number>();

function enqueueRun(message: RunRequestMessage): void {
  lastActive = performance.now();
  use(message.agentId, 1);
  // The run its syncs went ahead of has come: it holds the isolate from here.
  releaseSyncHold(message.agentId);
  callEndsAt.set(message.runId, performance.now() + message.callTimeLeftMs);
  waitingRuns.push(message);
  if (!startingRun) startNextRun();
}

function cancelledBeforeStart(): RunReport {
  return { kind: "failed", errorType: "cancelled", message: "The call was cancelled before its program ran." };
}

/** Runs the host cancelled before they started here: they are answered, never run. */
const cancelledEarly = new Set<number>();

function startNextRun(): void {
  let message = waitingRuns.shift();
  while (message !== undefined && cancelledEarly.delete(message.runId)) {
    callEndsAt.delete(message.runId);
    use(message.agentId, -1);
    send({ type: "result", runId: message.runId, report: cancelledBeforeStart() });
    message = waitingRuns.shift();
  }
  startingRun = message !== undefined;
  if (message === undefined) return;
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    if (waitingRuns.length > 0) setImmediate(startNextRun);
    else startingRun = false;
  };
  const answer = (report: RunReport) => {
    use(message.agentId, -1);
    send(packResult(message.runId, report));
    setImmediate(tidy, message.agentId, message.runId);
    release();
  };
  const report = run(message, release);
  if (report instanceof Promise) void report.then(answer);
  else answer(report);
}

/**
 * The isolate's work between calls, once a call's answer has left (see the runtime's `tidy`).
 * It holds this thread like a synchronous part of the run that ended, and is counted as one.
 */
function tidy(agentId: string, runId: number): void {
  if (forgotten.has(agentId) && !inUse.has(agentId)) {
    // Its agent is gone and its last run here is over (the reset removes globals too).
    releaseIsolateOf(agentId);
    return;
  }
  const isolate = isolates.get(agentId);
  if (isolate === undefined || isolate.busy || isolate.isDisposed) return;
  // Watched like a synchronous part: held past the grace, the host hears `B` (and `F` after).
  memoryWatch.runStarted();
  try {
    holdFor(runId, () => isolate.tidy());
  } finally {
    memoryWatch.runEnded();
  }
  dropIfDisposed(agentId, isolate);
  // Idle now, it counts against the budget: checked every so many calls (the walk visits every
  // isolate here), and at once whenever an isolate is made.
  tidiedSinceEviction += 1;
  if (tidiedSinceEviction >= EVICTION_EVERY) evictIdle();
  lastActive = performance.now();
  compactWhenIdle();
}

/** Takes an isolate that was disposed (it failed, or could not be tidied) off the warm list. */
function dropIfDisposed(agentId: string, isolate: AgentIsolate): void {
  if (isolate.isDisposed && isolates.get(agentId) === isolate) isolates.delete(agentId);
}

/**
 * Runs one program in its agent's isolate. The report comes at once when the isolate was warm
 * and the program settled in its synchronous part (most calls), else later; it never throws or
 * rejects. `release` lets the next waiting run start once this one's synchronous part is over.
 */
function run(message: RunRequestMessage, release: () => void): RunReport | Promise<RunReport> {
  const control: RunControl = { callEndsAt: callEndsAt.get(message.runId) };
  callEndsAt.delete(message.runId);
  controls.set(message.runId, control);
  runIdByCall.set(message.payload.callId, message.runId);
  memoryWatch.runStarted();
  const warm = warmIsolate(message.agentId, message.memoryLimitMb, message.mirrorMb) ?? reusedIsolate(message.agentId, message.memoryLimitMb, message.mirrorMb);
  if (warm !== undefined) return runIn(warm, message, control, release);
  return newIsolate(message.agentId, message.memoryLimitMb, message.mirrorMb).then(
    (isolate) => runIn(isolate, message, control, release),
    (error: unknown) => endRun(message, undefined, couldNotRun(error)),
  );
}

function runIn(isolate: AgentIsolate, message: RunRequestMessage, control: RunControl, release: () => void): RunReport | Promise<RunReport> {
  // Counted from here, so that `endRun` takes off what was put on, whichever way the run ends.
  isolate.runs += 1;
  // Cancelled while its isolate was being made: it never starts.
  if (control.cancelled) return endRun(message, isolate, cancelledBeforeStart());
  let outcome: RunReport | Promise<RunReport>;
  // The host learns that a run started from its answer, its first bridge request, or its
  // `B` line; one that goes on after its synchronous part without a request says so with an
  // `S` line (see `startedLine`). The program's synchronous part runs inside `isolate.run`,
  // before its first await.
  let hold = 0;
  const steps = {
    starting: () => {
      startedRuns.add(message.runId);
      hold = memoryWatch.holding(message.runId);
    },
    continuing: () => report(startedLine(message.runId)),
  };
  const holdStart = performance.now();
  try {
    memoryWatch.setCeiling(memoryCeilingMb());
    outcome = isolate.run(message, steps, control);
  } catch (error) {
    outcome = couldNotRun(error);
  } finally {
    memoryWatch.holding(0);
    letGo(message.runId, hold, performance.now() - holdStart);
    release();
  }
  if (!(outcome instanceof Promise)) return endRun(message, isolate, outcome);
  return outcome.then(
    (later) => endRun(message, isolate, later),
    (error: unknown) => endRun(message, isolate, couldNotRun(error)),
  );
}

function couldNotRun(error: unknown): RunReport {
  return { kind: "failed", errorType: "execution", message: `The sandbox could not run the program: ${error instanceof Error ? error.message : String(error)}` };
}

/** A run is over here: off the books, its isolate free for the next. */
function endRun(message: RunRequestMessage, isolate: AgentIsolate | undefined, report: RunReport): RunReport {
  memoryWatch.runEnded();
  startedRuns.delete(message.runId);
  controls.delete(message.runId);
  runIdByCall.delete(message.payload.callId);
  if (isolate) {
    isolate.runs -= 1;
    isolate.lastUsed = Date.now();
    if (!isolate.busy && retired.delete(isolate)) isolate.dispose();
    dropIfDisposed(message.agentId, isolate);
  }
  return report;
}

process.on("message", (received: HostMessage) => {
  // The one door host values come in by: every typed array gets a buffer of its own before any isolate sees it.
  const message = ownBytes(received);
  if (Array.isArray(message)) {
    enqueueRun(unpackRun(message));
    return;
  }
  switch (message.type) {
    case "sync":
      holdForSync(message.agentId);
      use(message.agentId, 1);
      void isolateFor(message.agentId, message.memoryLimitMb, message.mirrorMb)
        .then((isolate) => isolate.syncChunk(message))
        .catch(() => false)
        .then((ok) => {
          use(message.agentId, -1);
          // A refused chunk ends this sync: the host starts again from 0 (or gives up).
          if (!ok) releaseSyncHold(message.agentId);
          // The mirror it holds now counts while other programs here run (before the first run, nothing is watched).
          if (baselineRssMb !== undefined) memoryWatch.setCeiling(memoryCeilingMb());
          send({ type: "synced", syncId: message.syncId, ok });
        });
      break;
    case "cancel": {
      const control = controls.get(message.runId);
      if (control !== undefined) {
        control.cancelled = true;
        control.cancel?.();
      }
      else if (waitingRuns.some((waiting) => waiting.runId === message.runId)) cancelledEarly.add(message.runId);
      break;
    }
    case "bridge-result":
      answerRequest(message.requestId, message.answer, message.tell);
      break;
    case "configure":
      isolateCacheMb = message.isolateCacheMb;
      reuseIsolates = message.reuseIsolates;
      if (!reuseIsolates) for (const spare of spares.splice(0)) spare.dispose();
      evictIdle();
      break;
    case "stats": {
      let busyIsolates = 0;
      let idleIsolatesMb = 0;
      for (const isolate of isolates.values()) {
        if (isolate.busy) busyIsolates += 1;
        else idleIsolatesMb += isolate.residentMb;
      }
      busyIsolates += retired.size;
      // Spares are idle isolates too, held against the same budget.
      idleIsolatesMb += sparesMb();
      send({ type: "stats", statsId: message.statsId, isolates: isolates.size + retired.size, busyIsolates, idleIsolatesMb, spareIsolates: spares.length, reusedIsolates: reused, rssMb: process.memoryUsage.rss() / 2 ** 20 });
      break;
    }
    case "forget": {
      releaseSyncHold(message.agentId);
      const isolate = isolates.get(message.agentId);
      if (isolate !== undefined && !isolate.busy && !inUse.has(message.agentId) && !creating.has(message.agentId)) releaseIsolateOf(message.agentId);
      else {
        // A run of the agent still here, or still on its way (sent before the forget, as this
        // process started), keeps or makes its isolate until that run is over.
        forgotten.add(message.agentId);
        if (forgotten.size > MAX_FORGOTTEN) forgotten.delete(forgotten.values().next().value!);
      }
      break;
    }
  }
});

process.on("disconnect", () => die(""));
send({ type: "ready" });
