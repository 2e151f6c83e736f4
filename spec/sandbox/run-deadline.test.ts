import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { RunDeadline } from "../../src/sandbox/run-deadline.ts";

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
});

afterEach(() => {
  vi.useRealTimers();
});

describe("the held rule's deadline (both processes use this one)", () => {
  test("passes after the run's own time, once", () => {
    const expired = vi.fn();
    const deadline = new RunDeadline(100, expired);
    vi.advanceTimersByTime(99);
    expect(expired).not.toHaveBeenCalled();
    expect(deadline.remainingMs()).toBe(1);
    vi.advanceTimersByTime(1);
    expect(expired).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(1_000);
    expect(expired).toHaveBeenCalledTimes(1);
    expect(deadline.remainingMs()).toBe(0);
  });

  test("does not count another run's hold: stops while paused, and takes off exactly the time the hold lasted", () => {
    const expired = vi.fn();
    const deadline = new RunDeadline(100, expired);
    vi.advanceTimersByTime(40);
    deadline.pause();
    vi.advanceTimersByTime(500);
    expect(expired).not.toHaveBeenCalled();
    // The hold's F line says 500 ms: the run has its 60 ms left.
    deadline.excuse(500);
    expect(deadline.remainingMs()).toBe(60);
    vi.advanceTimersByTime(59);
    expect(expired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(expired).toHaveBeenCalledTimes(1);
  });

  test("an excuse without a pause (the sandbox process's case) moves the deadline by the hold", () => {
    const expired = vi.fn();
    const deadline = new RunDeadline(100, expired, performance.now() - 30);
    expect(deadline.remainingMs()).toBe(70);
    deadline.excuse(25);
    vi.advanceTimersByTime(94);
    expect(expired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(expired).toHaveBeenCalledTimes(1);
  });

  test("a stopped deadline never passes", () => {
    const expired = vi.fn();
    const deadline = new RunDeadline(10, expired);
    deadline.stop();
    deadline.excuse(0);
    vi.advanceTimersByTime(1_000);
    expect(expired).not.toHaveBeenCalled();
  });

  test("made with requests in flight, it counts nothing until the last answer, and is not armed meanwhile", () => {
    const expired = vi.fn();
    const deadline = new RunDeadline(100, expired, performance.now() - 30, 2);
    expect(deadline.waiting).toBe(true);
    vi.advanceTimersByTime(1_000);
    expect(expired).not.toHaveBeenCalled();
    deadline.waitEnded();
    vi.advanceTimersByTime(1_000);
    expect(expired).not.toHaveBeenCalled();
    // The last answer: the 30 ms before the requests count, the wait does not.
    deadline.waitEnded();
    expect(deadline.remainingMs()).toBe(70);
    vi.advanceTimersByTime(70);
    expect(expired).toHaveBeenCalledTimes(1);
  });

  test("an answer taken in an entry bounded by its own limit leaves the deadline unarmed until it is armed again", () => {
    const expired = vi.fn();
    const deadline = new RunDeadline(100, expired, performance.now(), 1);
    vi.advanceTimersByTime(50);
    deadline.waitEnded(0, false);
    expect(deadline.remainingMs()).toBe(100);
    vi.advanceTimersByTime(500);
    expect(expired).not.toHaveBeenCalled();
    // The count went on meanwhile: armed again, the deadline passes at once.
    deadline.arm();
    vi.advanceTimersByTime(0);
    expect(expired).toHaveBeenCalledTimes(1);
  });
});
