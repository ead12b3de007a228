import { runUpgradeCheck, UpgradeCheckError } from '../scripts/upgrade-check';
import { testTemporalAddress } from './helpers/env';

/**
 * Issue 30, point 4, as `npm run upgrade:check` runs it (scripts/upgrade-check.ts): a turn paused for
 * approval under the last commit whose workflow code differs (built from git) finishes after the
 * server is replaced by this checkout's build (global-setup.ts built it), on the run's Temporal.
 */
describe('upgrade from the previous release', () => {
  it('finishes a turn paused for approval under the previous release after the upgrade', async () => {
    const lines: string[] = [];
    try {
      const result = await runUpgradeCheck({
        temporalAddress: testTemporalAddress(),
        log: (line) => lines.push(line),
      });
      expect(result.previous).toMatch(/^[0-9a-f]{40}$/);
    } catch (error) {
      const details = error instanceof UpgradeCheckError ? `\n${error.details}` : '';
      throw new Error(`${lines.join('\n')}\n${String(error)}${details}`, { cause: error });
    }
  }, 360_000);
});
