import { hasAsyncContextFrames } from '../src/temporal/async-context';

describe('async context frames', () => {
  it('are Node 24 default, Node 22 flag, and never on Node 20', () => {
    expect(hasAsyncContextFrames('24.1.0', [])).toBe(true);
    expect(hasAsyncContextFrames('24.1.0', ['--no-async-context-frame'])).toBe(false);
    expect(hasAsyncContextFrames('22.23.5', [])).toBe(false);
    expect(hasAsyncContextFrames('22.23.5', ['--experimental-async-context-frame'])).toBe(true);
    expect(hasAsyncContextFrames('20.20.2', ['--experimental-async-context-frame'])).toBe(false);
  });
});
