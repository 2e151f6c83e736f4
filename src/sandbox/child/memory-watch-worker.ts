/**
 * The sandbox process's watch, on a thread of its own: a program's synchronous part blocks the
 * process's main thread (some built-ins cannot even be interrupted), so the watch must run
 * somewhere that keeps running. While runs are active it
 * - reads the process's resident memory every {@link MEMORY_CHECK_MS}; past the ceiling it
 *   reports to the host on the report pipe and, should the host not end the process first,
 *   ends it itself;
 * - tells the host when one run has held the main thread longer than {@link BUSY_GRACE_MS}
 *   (`B<runId>/<hold>`), so the host sends other agents' runs elsewhere meanwhile (the main
 *   thread itself says when it lets go).
 */
import { writeSync } from "node:fs";
import { workerData } from "node:worker_threads";
import { BUSY_GRACE_MS, busyLine, type CeilingReport } from "../protocol.ts";
import { holdNumber, WATCH_SLOTS, type MemoryWatchData } from "./memory-watch-slots.ts";

const TICK_MS = 10;
const MEMORY_CHECK_MS = 25;
/** How long the host has to end the process after a report before this thread does. */
const HOST_GRACE_MS = 1_000;

const { state, reportFd } = workerData as MemoryWatchData;
const slots = new Int32Array(state);

function report(line: string): void {
  try {
    writeSync(reportFd, line);
  } catch {
    // No host to tell.
  }
}

let held = 0;
let heldHold = 0;
let heldSince = 0;
let toldBusy = false;
let lastMemoryCheck = 0;

for (;;) {
  if (Atomics.load(slots, WATCH_SLOTS.activeRuns) <= 0) {
    held = 0;
    toldBusy = false;
    Atomics.wait(slots, WATCH_SLOTS.activeRuns, Atomics.load(slots, WATCH_SLOTS.activeRuns));
    continue;
  }
  const now = performance.now();
  const holding = Atomics.load(slots, WATCH_SLOTS.syncRunId);
  const hold = Atomics.load(slots, WATCH_SLOTS.holds);
  if (holding !== held || hold !== heldHold) {
    held = holding;
    heldHold = hold;
    heldSince = now;
    toldBusy = false;
  } else if (held !== 0 && !toldBusy && now - heldSince >= BUSY_GRACE_MS) {
    report(busyLine(held, holdNumber(heldHold)));
    toldBusy = true;
  }
  if (now - lastMemoryCheck >= MEMORY_CHECK_MS) {
    lastMemoryCheck = now;
    const rss = process.memoryUsage.rss();
    const ceilingMb = Atomics.load(slots, WATCH_SLOTS.ceilingMb);
    if (ceilingMb > 0 && rss > ceilingMb * 2 ** 20) {
      const ceiling: CeilingReport = { type: "memory-ceiling", rssMb: Math.round(rss / 2 ** 20), ceilingMb, runId: holding };
      report(`${JSON.stringify(ceiling)}\n`);
      Atomics.wait(slots, WATCH_SLOTS.never, 0, HOST_GRACE_MS);
      process.kill(process.pid, "SIGKILL");
    }
  }
  Atomics.wait(slots, WATCH_SLOTS.never, 0, TICK_MS);
}
