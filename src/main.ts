import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config';
import { createLogger } from './logger';
import { startServer, type Role } from './server';
import { errorText } from './temporal/connection';
import { installTemporalRuntime } from './temporal/runtime';

const roles: Role[] = ['all', 'api', 'worker'];

function parseRole(argv: string[]): Role {
  const { values } = parseArgs({ args: argv, options: { role: { type: 'string', default: 'all' } } });
  if (!roles.includes(values.role as Role)) {
    throw new ConfigError(`--role=${values.role}: expected one of ${roles.join(', ')}`);
  }
  return values.role as Role;
}

async function main(): Promise<void> {
  let role: Role;
  let config;
  try {
    role = parseRole(process.argv.slice(2));
    config = loadConfig();
  } catch (error) {
    // One line naming what is wrong, before any logger exists, then a non-zero exit.
    process.stderr.write(`${errorText(error)}\n`);
    process.exit(2);
  }
  const log = createLogger(config.LOG_LEVEL);
  installTemporalRuntime(log);

  const server = await startServer(config, log, { role }).catch((error) => {
    log.fatal({ error: errorText(error) }, 'start-up failed');
    process.stderr.write(`start-up failed: ${errorText(error)}\n`);
    process.exit(error instanceof ConfigError ? 2 : 1);
  });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    setTimeout(() => {
      log.error({ timeoutMs: config.SHUTDOWN_TIMEOUT_MS }, 'shutdown took too long; exiting');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS).unref();
    server.stop().then(() => log.info('stopped'));
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));

  await server.finished.catch(async (error) => {
    log.fatal({ error: errorText(error) }, 'a component failed; stopping');
    await server.stop();
    process.exitCode = 1;
  });
}

void main();
