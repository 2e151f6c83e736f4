/**
 * The sandbox process's memory backstop, on a thread of its own: a program's synchronous part
 * blocks the process's main thread (some built-ins cannot even be interrupted), so the watch
 * must run somewhere that keeps running. While runs are active it reads the process's resident
 * memory every {@link CHECK_MS}; past the ceiling it reports to the host on the report pipe and,
 * should the host not end the process first, ends it itself.
 */
import { writeSync } from "node:fs";
import { workerData } from "node:worker_threads";
import type { CeilingReport } from "../protocol.ts";
import { WATCH_SLOTS, type MemoryWatchData } from "./memory-watch-slots.ts";

const CHECK_MS = 25;
/** How long the host has to end the process after a report before this thread does. */
const HOST_GRACE_MS = 1_000;

const { state, reportFd } = workerData as MemoryWatchData;
const slots = new Int32Array(state);

for (;;) {
  if (Atomics.load(slots, WATCH_SLOTS.activeRuns) <= 0) {
    Atomics.wait(slots, WATCH_SLOTS.activeRuns, Atomics.load(slots, WATCH_SLOTS.activeRuns));
    continue;
  }
  const rss = process.memoryUsage.rss();
  const ceilingMb = Atomics.load(slots, WATCH_SLOTS.ceilingMb);
  if (ceilingMb > 0 && rss > ceilingMb * 2 ** 20) {
    const report: CeilingReport = { type: "memory-ceiling", rssMb: Math.round(rss / 2 ** 20), ceilingMb, runId: Atomics.load(slots, WATCH_SLOTS.syncRunId) };
    try {
      writeSync(reportFd, `${JSON.stringify(report)}\n`);
    } catch {
      // No host to tell: end the process all the same.
    }
    Atomics.wait(slots, WATCH_SLOTS.never, 0, HOST_GRACE_MS);
    process.kill(process.pid, "SIGKILL");
  }
  Atomics.wait(slots, WATCH_SLOTS.never, 0, CHECK_MS);
}
