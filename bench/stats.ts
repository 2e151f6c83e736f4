import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
/** Percentiles of a sample, in the sample's unit. */
export function percentile(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1));
  return sorted[index] as number;
}

export interface Summary {
  readonly count: number;
  readonly p50: number;
  readonly p95: number;
}

/** Something to time: one repetition, and what frees it afterwards. */
export interface Subject {
  readonly task: () => Promise<unknown> | unknown;
  readonly close?: () => void;
}

export function summarize(samples: number[]): Summary {
  samples.sort((a, b) => a - b);
  return { count: samples.length, p50: percentile(samples, 0.5), p95: percentile(samples, 0.95) };
}

/** A timed call that must work: a failed call would be timed as if it had. */
export async function expectOk(call: Promise<{ ok: boolean; errorMessage?: string }>): Promise<void> {
  const outcome = await call;
  if (!outcome.ok) throw new Error(`bench call failed: ${outcome.errorMessage}`);
}

/** Times `task` `count` times after `warmup` untimed runs; microseconds. */
export async function measure(task: () => Promise<unknown> | unknown, count: number, warmup: number): Promise<Summary> {
  for (let i = 0; i < warmup; i += 1) await task();
  const samples: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const started = performance.now();
    await task();
    samples.push((performance.now() - started) * 1000);
  }
  return summarize(samples);
}

/** Times each subject in turn, each after its own warm-up (see `measure`), and closes it. */
export async function measureEach<K extends string>(subjects: Record<K, Subject>, count: number, warmup: number): Promise<Record<K, Summary>> {
  const summaries = {} as Record<K, Summary>;
  const entries = Object.entries(subjects) as [K, Subject][];
  try {
    for (const [key, subject] of entries) summaries[key] = await measure(subject.task, count, warmup);
  } finally {
    for (const [, subject] of entries) subject.close?.();
  }
  return summaries;
}

/**
 * Times several subjects round-robin, one repetition of each per round, after `warmup`
 * untimed rounds, so that load drifting on a shared machine affects every subject alike.
 * Microseconds.
 */
export async function measureInterleaved<K extends string>(subjects: Record<K, Subject>, count: number, warmup: number): Promise<Record<K, Summary>> {
  const entries = Object.entries(subjects) as [K, Subject][];
  const samples = entries.map(() => [] as number[]);
  for (let round = 0; round < warmup + count; round += 1) {
    for (const [index, [, subject]] of entries.entries()) {
      const started = performance.now();
      await subject.task();
      if (round >= warmup) samples[index]!.push((performance.now() - started) * 1000);
    }
  }
  return Object.fromEntries(entries.map(([key], index) => [key, summarize(samples[index]!)])) as Record<K, Summary>;
}

/**
 * Runs one figure in a fresh process (`script`, next to this file, with the bench's flags), so
 * nothing of another figure is in the pool it measures; what it printed last, as JSON.
 */
export function figureInChild<T>(script: string, flags: readonly string[], args: readonly string[]): T {
  const child = spawnSync(process.execPath, [...flags, fileURLToPath(new URL(`./${script}`, import.meta.url)), ...args], { encoding: "utf8", maxBuffer: 2 ** 24 });
  if (child.status !== 0) throw new Error(`${script} ${args.join(" ")} failed: ${child.stderr}`);
  return JSON.parse(child.stdout.trim().split("\n").at(-1) ?? "{}") as T;
}
