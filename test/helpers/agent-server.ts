import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import type { RunningDevServer } from '../../src/temporal/dev-server';
import { startTemporalServer } from './temporal-server';
import type { Logger } from '../../src/logger';
import { startAnthropicStub, type AnthropicStub } from './anthropic-stub';
import { startOpenAiStub, type OpenAiStub } from './openai-stub';
import { startTestServer, type TestDatabase, type TestServer } from './server';

interface Stubs {
  openai: OpenAiStub;
  anthropic: AnthropicStub;
}

export interface AgentServer<P extends keyof Stubs> {
  /** The provider's local model endpoint the server talks to. */
  stub: Stubs[P];
  server: TestServer;
  /** The official Letta client on the server (no retries: tests see every answer). */
  client: Letta;
}

const providers = {
  openai: { start: startOpenAiStub, key: 'OPENAI_API_KEY', url: 'OPENAI_BASE_URL' },
  anthropic: { start: startAnthropicStub, key: 'ANTHROPIC_API_KEY', url: 'ANTHROPIC_BASE_URL' },
} as const;

/**
 * For a describe block: before its tests, a model stub of `provider` and the whole server wired to it,
 * on a fresh `database`; after them, both stopped. The returned object is filled in by then.
 */
export function useAgentServer<P extends keyof Stubs>(
  provider: P,
  env: Record<string, string> = {},
  database: TestDatabase = 'postgres',
  log?: Logger,
): AgentServer<P> {
  const harness = {} as AgentServer<P>;
  const { start, key, url } = providers[provider];
  beforeAll(async () => {
    harness.stub = (await start()) as Stubs[P];
    harness.server = await startTestServer(
      { [url]: harness.stub.baseURL, [key]: 'test-key', ...env },
      log,
      database,
    );
    harness.client = new Letta({ baseURL: harness.server.url, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => {
    await harness.server?.stopAll();
    await harness.stub?.close();
  });
  return harness;
}

/**
 * useAgentServer (OpenAI) on a Temporal dev server of the describe block's own that suggests continuing
 * as new after `events` history events (Temporal's default is 4,096 events or 4 MiB): a turn or a
 * session of a few steps crosses several runs. The same signal on the same path as the default's.
 */
export function useContinuingAgentServer(events: number): AgentServer<'openai'> {
  const env: Record<string, string> = {};
  let temporal: RunningDevServer | undefined;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-continuing-'));
    ({ server: temporal } = await startTemporalServer(dataDir, [
      `limit.historyCount.suggestContinueAsNew=${events}`,
    ]));
    env.TEMPORAL_ADDRESS = temporal.address;
  }, 120_000);
  const harness = useAgentServer('openai', env);
  afterAll(async () => {
    await temporal?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return harness;
}
