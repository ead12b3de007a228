import pino from 'pino';
import pretty from 'pino-pretty';
import { logFields } from './context-ids';

export type Logger = pino.Logger;

export type LogFormat = 'auto' | 'json' | 'pretty';

/** Whether logs are for a person: `pretty`, or `auto` on a terminal. */
export const logsArePretty = (format: LogFormat) =>
  format === 'pretty' || (format === 'auto' && Boolean(process.stdout.isTTY));

/**
 * JSON lines on stdout (or `destination`); on a terminal (LOG_FORMAT=auto) coloured lines through
 * pino-pretty.
 */
export function createLogger(
  level: string,
  format: LogFormat = 'json',
  destination?: pino.DestinationStream,
): Logger {
  // Every line names the agent, run, step and trace it was written in (src/context-ids.ts).
  const options = { level, base: { service: 'letta-temporal' }, mixin: logFields };
  if (!logsArePretty(format)) return destination ? pino(options, destination) : pino(options);
  return pino(
    options,
    pretty({ translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname,service', singleLine: true, sync: true }),
  );
}
