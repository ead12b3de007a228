/**
 * What the replay before a build becomes current (src/temporal/replay-sample.ts) costs with many
 * workflows open, in two parts:
 *
 *   npm run bench:replay -- [paused] [open max…]   (default 1000 paused; open max 100 1000)
 *   npm run bench:replay -- --listing [open…]      (default 10000 open)
 *
 * The first pauses `paused` agent turns on a client tool through the API (the server as `npm start`
 * runs it, in a process of its own, stopped before the replay), then lists, fetches and replays the
 * sample a starting server takes at each `WORKER_REPLAY_OPEN_MAX` given, with this build's workflows,
 * in this process: the time a history costs. The second starts `open` turns no worker takes (only the
 * listing reads them) and times the listing alone: what paging through every open execution costs.
 * Each runs on a Temporal dev server of its own, whose workflows are the bench's alone: no filter.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { replaySample, sampleExecutions } from '../src/temporal/replay-sample';
import { startOpenAiStub } from '../test/helpers/openai-stub';
import { createTestSchema } from '../test/helpers/postgres';
import type { StartedProcess } from '../test/helpers/process';
import { apiUrl, killProcess, serverProcessEnv, startApiProcess } from '../test/helpers/server-processes';
import { startTemporalServer } from '../test/helpers/temporal-server';
import { CLIENT_TOOL, CONCURRENCY, postJson } from './paused-runs';
import { inParallel } from './stats';

const CLOSED_PER_TYPE = 10;

/** A Temporal dev server of the bench's own and a client on it, for `work`. */
async function onOwnCluster<T>(work: (client: Client, address: string) => Promise<T>): Promise<T> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-bench-replay-'));
  const { server: temporal } = await startTemporalServer(dataDir);
  const connection = await Connection.connect({ address: temporal.address });
  try {
    return await work(new Client({ connection }), temporal.address);
  } finally {
    await connection.close();
    await temporal.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** `paused` turns paused on a client tool, then the sample replayed at each of `openMaxes`. */
export const replayCost = (paused: number, openMaxes: number[]) =>
  onOwnCluster(async (client, address) => {
    const schema = await createTestSchema();
    const stub = await startOpenAiStub();
    stub.setDefault(() => ({ toolCalls: [{ name: CLIENT_TOOL.name }] }));
    const env = await serverProcessEnv({
      dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'letta-bench-replay-data-')),
      databaseUrl: schema.url,
      temporalAddress: address,
      openAiBaseUrl: stub.baseURL,
    });
    let server: StartedProcess | undefined;
    try {
      server = await startApiProcess(env, 'all');
      const post = postJson(apiUrl(env));
      await inParallel(paused, CONCURRENCY, async () => {
        const agent = await post('/v1/agents/', { model: 'openai/gpt-4o-mini', include_base_tools: false });
        await post(`/v1/agents/${agent.id}/messages`, {
          messages: [{ role: 'user', content: 'Ask me something' }],
          client_tools: [CLIENT_TOOL],
        });
      });
      await killProcess(server, 'SIGKILL');
      server = undefined;
      const runs = [];
      for (const openPerType of openMaxes) {
        const { replayed, failures, counts, ms } = await replaySample({
          client,
          openPerType,
          closedPerType: CLOSED_PER_TYPE,
          workflowsPath: require.resolve('../workflows'),
        });
        const perHistory = +(ms / Math.max(replayed, 1)).toFixed(1);
        runs.push({
          open_max: openPerType,
          turns: counts.agentTurn,
          replayed,
          failures: failures.length,
          ms,
          per_history_ms: perHistory,
        });
      }
      return { paused, runs };
    } finally {
      if (server) await killProcess(server, 'SIGKILL');
      await stub.close();
      await schema.drop();
      fs.rmSync(env.DATA_DIR, { recursive: true, force: true });
    }
  });

/** `open` turns started on a queue no worker polls, then the listing of the sample timed. */
export const listingCost = (open: number) =>
  onOwnCluster(async (client) => {
    await inParallel(open, 4 * CONCURRENCY, (i) =>
      client.workflow.start('agentTurn', { taskQueue: 'bench-listing', workflowId: `listed-${i}` }),
    );
    const started = performance.now();
    const { counts } = await sampleExecutions({ client, openPerType: 500, closedPerType: CLOSED_PER_TYPE });
    return { open: counts.agentTurn.open, listing_ms: Math.round(performance.now() - started) };
  });

if (require.main === module) {
  const args = process.argv.slice(2);
  const listing = args[0] === '--listing';
  const counts = args.filter((arg) => !arg.startsWith('--')).map(Number);
  const listings = async (opens: number[]) => {
    const results = [];
    for (const open of opens) results.push(await listingCost(open));
    return results;
  };
  const measured = listing
    ? listings(counts.length ? counts : [10_000])
    : replayCost(counts[0] ?? 1000, counts.length > 1 ? counts.slice(1) : [100, 1000]);
  measured.then(
    (results) => {
      console.log(JSON.stringify(results, null, 2));
      process.exit(0);
    },
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
