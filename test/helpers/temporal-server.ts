import { resolveTemporalBinary } from '../../src/temporal/cli-binary';
import { startDevServer, type DevServerOptions, type RunningDevServer } from '../../src/temporal/dev-server';
import { connectTemporal } from '../../src/temporal/connection';
import { registerSearchAttributes } from '../../src/temporal/search-attributes';
import { freePort, silentLogger } from './env';

/**
 * A Temporal dev server of the test's own, started the way the server starts its embedded one, with
 * the project's search attributes (and `dynamicConfig`, `key=value` settings of its own). `options`
 * start it again on the same ports and db file.
 */
export async function startTemporalServer(
  dataDir: string,
  dynamicConfig: string[] = [],
): Promise<{ server: RunningDevServer; options: DevServerOptions }> {
  const log = silentLogger();
  const binary = await resolveTemporalBinary(process.env.TEMPORAL_CLI_PATH, log);
  if (!binary)
    throw new Error('no temporal CLI: run `npm run temporal:install` (needs Go) or set TEMPORAL_CLI_PATH');
  const options: DevServerOptions = {
    binary: binary.path,
    dataDir,
    port: await freePort(),
    uiPort: await freePort(),
    namespace: 'default',
    startTimeoutMs: 60_000,
    log,
    dynamicConfig,
  };
  const server = await startDevServer(options);
  const connection = await connectTemporal(server.address, 10_000);
  await registerSearchAttributes(connection, 'default');
  await connection.close();
  return { server, options };
}
