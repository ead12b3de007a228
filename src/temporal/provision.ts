import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { ProcessSettings } from '../process-settings';
import type { TemporalSettings } from './settings';
import type { Logger } from '../logger';
import { resolveTemporalBinary } from './cli-binary';
import { devServerTuningArgs, startDevServer } from './dev-server';
import { customSearchAttributes } from '../../contracts/search-attributes';

export interface TemporalEndpoint {
  address: string;
  /** Set when we started the server ourselves: it is ours to stop. */
  embedded?: { uiUrl: string; stop(): Promise<void> };
}

/**
 * Where the Temporal server comes from: TEMPORAL_ADDRESS (or a TEMPORAL_PROFILE's address) when set,
 * reached as src/temporal/env-config.ts says; otherwise an embedded dev server run from the `temporal` CLI (see resolveTemporalBinary), and as a last resort the binary that
 * @temporalio/testing downloads (needs the internet).
 */
export async function provisionTemporal(
  config: TemporalSettings & Pick<ProcessSettings, 'dataDir'>,
  log: Logger,
): Promise<TemporalEndpoint> {
  if (config.TEMPORAL_ADDRESS) {
    log.info(
      { address: config.TEMPORAL_ADDRESS, namespace: config.TEMPORAL_NAMESPACE, ...config.temporal?.summary },
      'Temporal: connecting to TEMPORAL_ADDRESS',
    );
    return { address: config.TEMPORAL_ADDRESS };
  }
  const binary = await resolveTemporalBinary(config.TEMPORAL_CLI_PATH, log);
  if (binary) {
    log.info({ binary: binary.path, from: binary.source }, 'Temporal: starting the embedded dev server');
    const server = await startDevServer({
      binary: binary.path,
      dataDir: config.dataDir,
      port: config.TEMPORAL_PORT,
      uiPort: config.TEMPORAL_UI_PORT,
      namespace: config.TEMPORAL_NAMESPACE,
      startTimeoutMs: config.TEMPORAL_START_TIMEOUT_MS,
      log,
    });
    return { address: server.address, embedded: server };
  }
  log.warn('Temporal: no temporal CLI and no Go; downloading the dev server through @temporalio/testing');
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      dbFilename: path.join(config.dataDir, 'temporal.db'),
      port: config.TEMPORAL_PORT,
      ui: true,
      uiPort: config.TEMPORAL_UI_PORT,
      namespace: config.TEMPORAL_NAMESPACE,
      searchAttributes: customSearchAttributes,
      extraArgs: devServerTuningArgs(),
    },
  });
  return {
    address: env.address,
    embedded: { uiUrl: `http://127.0.0.1:${config.TEMPORAL_UI_PORT}`, stop: () => env.teardown() },
  };
}
