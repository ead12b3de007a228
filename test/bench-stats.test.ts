/** The bench's statistics (bench/stats.ts): percentiles of samples, and the interval of a median. */
import { medianInterval, percentiles } from '../bench/stats';

const oneTo = (n: number) => Array.from({ length: n }, (_, i) => n - i);

describe('bench statistics', () => {
  it('takes percentiles of the samples themselves, in order whatever order they came in', () => {
    expect(percentiles(oneTo(100))).toEqual({ p50: 51, p95: 96, max: 100, n: 100 });
  });

  it('bounds a median by the order statistics around it, narrower as samples grow', () => {
    const [low, high] = medianInterval(oneTo(100));
    expect([low, high]).toEqual([41, 61]);
    const [lowMore, highMore] = medianInterval(oneTo(400).map((v) => v / 4));
    expect(highMore - lowMore).toBeLessThan(high - low);
    expect(lowMore).toBeLessThanOrEqual(50);
    expect(highMore).toBeGreaterThanOrEqual(50);
    expect(medianInterval([7])).toEqual([7, 7]);
  });
});
