import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config';
import { createLogger, logsArePretty, type Logger } from './logger';
import { modelProviders, startupBanner, type StartupFacts } from './banner';
import { checkReport, runChecks } from './check';
import { startServer, type Role, type RunningServer } from './server';
import { errorText } from './temporal/connection';
import { installTemporalRuntime } from './temporal/runtime';
import { temporalMetricsExporter } from './observability/temporal-metrics';

const roles: Role[] = ['all', 'api', 'worker', 'tools'];

function parseOptions(argv: string[]): { role: Role; check: boolean } {
  const { values } = parseArgs({
    args: argv,
    options: { role: { type: 'string', default: 'all' }, check: { type: 'boolean', default: false } },
  });
  if (!roles.includes(values.role as Role)) {
    throw new ConfigError(`--role=${values.role}: expected one of ${roles.join(', ')}`);
  }
  return { role: values.role as Role, check: values.check };
}

async function main(): Promise<void> {
  let options;
  let config;
  try {
    options = parseOptions(process.argv.slice(2));
    config = loadConfig();
  } catch (error) {
    // One line naming what is wrong, before any logger exists, then a non-zero exit.
    process.stderr.write(`${errorText(error)}\n`);
    process.exit(2);
  }
  if (options.check) {
    const results = await runChecks(config);
    process.stdout.write(checkReport(results));
    process.exit(results.every((r) => r.ok) ? 0 : 1);
  }
  const { role } = options;
  const log = createLogger(config.LOG_LEVEL, config.LOG_FORMAT);
  const temporalMetrics = await temporalMetricsExporter(config.METRICS_PORT);
  installTemporalRuntime(log, temporalMetrics?.telemetry);

  const serverOptions = { role, temporalMetricsUrl: temporalMetrics?.url };

  const server = await startServer(config, log, serverOptions).catch((error) => {
    log.fatal({ error: errorText(error) }, 'start-up failed');
    process.stderr.write(`start-up failed: ${errorText(error)}\n`);
    process.exit(error instanceof ConfigError ? 2 : 1);
  });

  void announce(server, config, log);

  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return void log.info({ signal }, 'already stopping');
    stopping = true;
    // A closed terminal (SIGHUP) fails every later write to it: the stop goes on without its log.
    if (signal === 'SIGHUP')
      for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
    log.info({ signal, graceMs: config.SHUTDOWN_GRACE_MS }, 'stopping: no new turns; calls in flight finish');
    setTimeout(() => {
      log.error({ timeoutMs: config.SHUTDOWN_TIMEOUT_MS }, 'shutdown took too long; exiting');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS).unref();
    server.stop().then(() => log.info('stopped'));
  };
  // The same ordered stop for each: a deploy (SIGTERM), Ctrl-C (SIGINT), a closed terminal (SIGHUP). A
  // signal left unhandled would end the process at once, its 'exit' handlers unrun, and leave the
  // embedded Temporal server (its own session, so no terminal signal reaches it) running.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => shutdown(signal));

  await server.finished.catch(async (error) => {
    log.fatal({ error: errorText(error) }, 'a component failed; stopping');
    await server.stop();
    process.exitCode = 1;
  });
}

/** The banner on a terminal; otherwise the same facts as one log line. */
async function announce(server: RunningServer, config: Config, log: Logger): Promise<void> {
  const facts: StartupFacts = {
    apiUrl: server.url,
    temporalUiUrl: server.temporalUiUrl,
    temporalAddress: server.temporalAddress,
    dataDir: config.dataDir,
    embeddedDatabase: !config.DATABASE_URL,
    providers: modelProviders(config),
    sandbox: await server.sandboxStatus,
    passwordRequired: server.passwordRequired,
  };
  if (logsArePretty(config.LOG_FORMAT)) process.stdout.write(startupBanner(facts));
  else log.info(facts, 'ready');
}

void main();
