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

/** Times `task` `count` times after `warmup` untimed runs; microseconds. */
export async function measure(task: () => Promise<unknown> | unknown, count: number, warmup: number): Promise<Summary> {
  for (let i = 0; i < warmup; i += 1) await task();
  const samples: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const started = performance.now();
    await task();
    samples.push((performance.now() - started) * 1000);
  }
  samples.sort((a, b) => a - b);
  return { count, p50: percentile(samples, 0.5), p95: percentile(samples, 0.95) };
}
