import { isolateExecutionTimeoutFor } from '../src/temporal/worker';

/**
 * Node enforces the SDK's isolate execution timeout with a watchdog thread per entry into a workflow's
 * context; patches/ (applied by npm install) makes the SDK take 0 as no timeout, the default here.
 */
describe("the agent worker's isolate execution timeout", () => {
  it('is none by default: the installed SDK takes 0 as none', () => {
    expect(isolateExecutionTimeoutFor(0)).toEqual({ ms: 0, fallback: false });
  });

  it('is the one configured when one is', () => {
    expect(isolateExecutionTimeoutFor(2_000)).toEqual({ ms: 2_000, fallback: false });
  });
});
