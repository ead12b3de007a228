import { Runtime, type LogLevel, type LogMetadata, type TelemetryOptions } from '@temporalio/worker';
import type { Logger } from '../logger';

const pinoLevel: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * What the SDK's workflow bundler logs at info each time a worker starts: webpack's whole report (its
 * asset, then a line per group of modules) and a line for the bundle's size. Nothing in them is for an
 * operator to act on, so they are debug lines here; the bundler's errors stay errors.
 */
const isBundlerReport = (level: LogLevel, message: string) =>
  level === 'INFO' && (message.startsWith('asset workflow-bundle-') || message === 'Workflow bundle created');

/**
 * Routes the Temporal SDK's logs into ours (the bundler's report at debug), and leaves signal handling to main.ts: by default the SDK
 * shuts workers down on SIGINT itself, which would race our ordered shutdown. Call once, before the
 * first connection.
 */
export function installTemporalRuntime(log: Logger, telemetryOptions?: TelemetryOptions): void {
  const sdkLog = log.child({ component: 'temporal-sdk' });
  const forward = (level: LogLevel) => (message: string, meta?: LogMetadata) =>
    sdkLog[pinoLevel[isBundlerReport(level, message) ? 'DEBUG' : level]](meta ?? {}, message);
  Runtime.install({
    shutdownSignals: [],
    telemetryOptions,
    logger: {
      log: (level: LogLevel, message: string, meta?: LogMetadata) => forward(level)(message, meta),
      trace: forward('TRACE'),
      debug: forward('DEBUG'),
      info: forward('INFO'),
      warn: forward('WARN'),
      error: forward('ERROR'),
    },
  });
}
