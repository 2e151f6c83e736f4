/**
 * The host side's waits for the sandbox pool, in one place. They are settings of the library,
 * not of an agent; tests lower some of them to see what happens when one runs out.
 */
export const poolTimings = {
  /**
   * How long a sandbox process may take to become ready, and how long work sent to it (a run
   * not yet started, a history sync) waits while no program there is running before the
   * process counts as stuck and is replaced. @unit ms
   */
  stuckAfterMs: 10_000,
  /**
   * How long the sandbox processes stay once the last open agent was closed (`Agent.close`), so
   * that an agent made for the next request does not pay for a process start. They never keep the
   * application alive meanwhile. @unit ms
   */
  closedIdleMs: 30_000,
  /** How long a process beyond `processes` may stay idle before it is ended. @unit ms */
  retireIdleMs: 5_000,
  /** How long an agent whose program held its process past the busy grace keeps other agents away from that process. @unit ms */
  heavyForMs: 10_000,
  /**
   * How long an agent stays in a process before another agent's earlier long program there
   * may move it again (a program holding that process right now moves it at once). @unit ms
   */
  minDwellMs: 1_000,
};
