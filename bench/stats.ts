/** Figures of repeated measurements, and ways to take them. */

export interface Percentiles {
  p50: number;
  p95: number;
  max: number;
  n: number;
}

const round = (value: number) => Math.round(value * 100) / 100;

export function percentiles(values: number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  return { p50: round(at(50)), p95: round(at(95)), max: round(sorted[sorted.length - 1]), n: sorted.length };
}

/** Times `work` `reps` times in a row, after `warmup` untimed runs; milliseconds per run. */
export async function timeRuns(reps: number, work: () => Promise<unknown>, warmup = 3): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await work();
  const times: number[] = [];
  for (let i = 0; i < reps; i++) {
    const started = performance.now();
    await work();
    times.push(performance.now() - started);
  }
  return times;
}

/** Runs `work` for indexes 0..count-1, `concurrency` at a time. */
export async function inParallel<T>(
  count: number,
  concurrency: number,
  work: (i: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await work(i);
      }
    }),
  );
  return results;
}

/** The differences of two series, pairwise by rank (median of one minus median of the other, …). */
export function perUnit(total: Percentiles, baseline: Percentiles, units: number, direct = 0): Percentiles {
  const each = (a: number, b: number) => round(Math.max(0, (a - b) / units - direct));
  return {
    p50: each(total.p50, baseline.p50),
    p95: each(total.p95, baseline.p95),
    max: each(total.max, baseline.max),
    n: total.n,
  };
}
