import net from 'node:net';
import pino from 'pino';
import { loadConfig, type Config } from '../../src/config';

/** Set by global-setup.ts: the Temporal dev server and PostgreSQL shared by the whole test run. */
export const testTemporalAddress = () => requiredEnv('TEST_TEMPORAL_ADDRESS');
/** The Web UI of that Temporal dev server (`temporal server start-dev --ui-port`). */
export const testTemporalUiUrl = () => requiredEnv('TEST_TEMPORAL_UI_URL');
export const testDatabaseUrl = () => process.env.DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test';

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests through jest (global-setup.ts sets it)`);
  return value;
}

export const silentLogger = () => pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/** A Config as the server would load it, from a clean environment plus `env`. */
export function testConfig(env: Record<string, string>): Config {
  return loadConfig({ LOG_LEVEL: 'silent', ...env });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A free port below Linux's ephemeral range (32768 up), which `freePort` (listen(0)) never hands out:
 * for a process that binds it only a minute later (`npm start` builds first), so that no other test
 * can be given it meanwhile.
 */
export async function freePortBelowEphemeral(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

export const uniqueSuffix = () => `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
