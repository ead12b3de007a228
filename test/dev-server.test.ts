/**
 * The embedded dev server left running by a process that died (`npm start` killed by kill -9): the
 * next start stops it and starts its own on the same ports and db file, once the leftover has gone.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDevServer } from '../src/temporal/dev-server';
import { connectTemporal } from '../src/temporal/connection';
import { isAlive } from './helpers/process';
import { startTemporalServer } from './helpers/temporal-server';

describe('a leftover embedded dev server', () => {
  it('is stopped by the next start, which then binds its ports', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-leftover-'));
    // Its pid file stays behind, as a kill -9 of the process that started it leaves it.
    const { server: leftover, options } = await startTemporalServer(dataDir);
    const next = await startDevServer(options);
    try {
      expect(next.pid).not.toBe(leftover.pid);
      expect(isAlive(leftover.pid)).toBe(false);
      const connection = await connectTemporal(next.address, 10_000);
      await connection.close();
    } finally {
      await next.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
