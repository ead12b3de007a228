import Letta from '@letta-ai/letta-client';
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
