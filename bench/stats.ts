/**
 * Figures of repeated measurements, and ways to take them. Every percentile is one of per-sample
 * values (never a difference of two series' percentiles), so p50 ≤ p95 ≤ max always holds; where two
 * things are compared, their runs alternate and pair, and the figure is each pair's difference or ratio.
 */

export interface Percentiles {
  p50: number;
  p95: number;
  max: number;
  n: number;
}

/** The number in environment variable `name`, or `fallback` when it is unset. */
export const numberSetting = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

/** Untimed runs before the timed ones: the first turns of an agent warm caches and compile code. */
export const WARMUP = 3;

const round = (value: number) => Math.round(value * 100) / 100;

export function percentiles(values: number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  return { p50: round(at(50)), p95: round(at(95)), max: round(sorted[sorted.length - 1]), n: sorted.length };
}

/**
 * Where the median of what `values` sample lies, 95% of the time: the order statistics n/2 ± 1.96·√n/2
 * (distribution-free, the binomial's normal approximation).
 */
export function medianInterval(values: number[]): [number, number] {
  const sorted = [...values].sort((a, b) => a - b);
  const spread = (1.96 * Math.sqrt(sorted.length)) / 2;
  const low = Math.max(0, Math.floor(sorted.length / 2 - spread));
  const high = Math.min(sorted.length - 1, Math.ceil(sorted.length / 2 + spread));
  return [round(sorted[low]), round(sorted[high])];
}

/** How long `work` takes, in milliseconds. */
export async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

/** Times `work` `reps` times in a row, after `warmup` untimed runs; milliseconds per run. */
export async function timeRuns(
  reps: number,
  work: () => Promise<unknown>,
  warmup = WARMUP,
): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await work();
  const times: number[] = [];
  for (let i = 0; i < reps; i++) times.push(await timed(work));
  return times;
}

/**
 * `reps` rounds of `works`, each run in turn and measured by `measure`, after `warmup` unmeasured rounds:
 * a drift affects all alike.
 */
export async function measureInTurn<T>(
  reps: number,
  works: (() => Promise<unknown>)[],
  measure: (work: () => Promise<unknown>) => Promise<T>,
  warmup = WARMUP,
): Promise<T[][]> {
  for (let i = 0; i < warmup; i++) for (const work of works) await work();
  const samples = works.map((): T[] => []);
  for (let i = 0; i < reps; i++)
    for (const [j, work] of works.entries()) samples[j].push(await measure(work));
  return samples;
}

/** measureInTurn by the time each run takes, in milliseconds. */
export const timeInTurn = (reps: number, works: (() => Promise<unknown>)[], warmup = WARMUP) =>
  measureInTurn(reps, works, timed, warmup);

/** `reps` pairs of runs, `a` then `b`: each pair gives one sample of a difference or a ratio. */
export async function timePairs(
  reps: number,
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
): Promise<{ a: number[]; b: number[] }> {
  const [timesA, timesB] = await timeInTurn(reps, [a, b]);
  return { a: timesA, b: timesB };
}

/** Each pair's `(a - b) / units`: the cost of one of `units` things that `a` does beyond `b`. */
export const perUnit = (pairs: { a: number[]; b: number[] }, units: number): number[] =>
  pairs.a.map((a, i) => (a - pairs.b[i]) / units);

/** Each pair's `a / b`. */
export const ratios = (pairs: { a: number[]; b: number[] }): number[] =>
  pairs.a.map((a, i) => a / pairs.b[i]);

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
