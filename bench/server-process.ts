/**
 * What the figures measured on a server process of their own share: the process as `npm start` runs it,
 * on a Temporal dev server and a PostgreSQL schema of its own, and the command line that prints their
 * results (and writes them where the suite, which runs them as child processes, reads them).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestSchema } from '../test/helpers/postgres';
import type { StartedProcess } from '../test/helpers/process';
import { apiUrl, killProcess, serverProcessEnv, startApiProcess } from '../test/helpers/server-processes';
import { startTemporalServer } from '../test/helpers/temporal-server';

export interface ServerProcess {
  /** The API's address. */
  base: string;
  process: StartedProcess;
}

/**
 * Runs `work` on a server process (`--role=all`: API and workers together) whose model is at
 * `openAiBaseUrl`, with `extra` in its environment; everything it started goes once `work` settles.
 */
export async function withServerProcess<T>(
  openAiBaseUrl: string,
  work: (server: ServerProcess) => Promise<T>,
  extra: Record<string, string> = {},
): Promise<T> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-bench-'));
  const schema = await createTestSchema();
  const { server: temporal } = await startTemporalServer(dataDir);
  let started: StartedProcess | undefined;
  try {
    const env = await serverProcessEnv({
      dataDir,
      databaseUrl: schema.url,
      temporalAddress: temporal.address,
      openAiBaseUrl,
      extra,
    });
    started = await startApiProcess(env, 'all');
    return await work({ base: apiUrl(env), process: started });
  } finally {
    if (started) await killProcess(started, 'SIGKILL');
    await temporal.stop();
    await schema.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** A figure's command line: its results on stdout, and in the file BENCH_OUT names if set; then exits. */
export async function printFigures(measure: () => Promise<unknown>): Promise<never> {
  try {
    const text = JSON.stringify(await measure(), null, 2);
    if (process.env.BENCH_OUT) fs.writeFileSync(process.env.BENCH_OUT, text);
    console.log(text);
    process.exit(0);
  } catch (error) {
    console.error(error);
    process.exit(1);
  }
}
