/**
 * The building blocks of every area's settings schema (`src/<area>/settings.ts`): how an environment
 * variable's text becomes a port, a duration, a flag or a list, with the messages `loadConfig` repeats.
 * Base level: it imports zod and Node only, so every area may use it.
 */
import path from 'node:path';
import { z } from 'zod';

/** Empty strings count as unset, as docker-compose and shells often pass them. */
export const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

export const port = z.coerce
  .number({ error: 'expected a port number' })
  .int('expected a whole number')
  .min(1, 'expected a port from 1 to 65535')
  .max(65535, 'expected a port from 1 to 65535');

export const milliseconds = z.coerce.number({ error: 'expected milliseconds' }).int().positive();

export const url = z.url({ error: 'expected a URL' });

export const flag = z
  .enum(['true', 'false'], { error: 'expected true or false' })
  .transform((value) => value === 'true');

/** A comma-separated list; blanks dropped. */
export const list = z
  .string()
  .default('')
  .transform((text) =>
    text
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean),
  );

/** Absolute paths separated by ":", as in PATH. */
export const pathList = z.string().transform((text, ctx) => {
  const paths = text.split(':').filter(Boolean);
  for (const relative of paths.filter((entry) => !path.isAbsolute(entry)))
    ctx.addIssue({ code: 'custom', message: `expected absolute paths separated by ":", not ${relative}` });
  return paths.map((entry) => path.resolve(entry));
});

/**
 * A part of an area's settings as docs/configuration.md shows it. `shownDefaults` is the default as the
 * page prints it where the schema's is no value to print (unset, chosen at start-up, or the machine's);
 * every other default is printed as parsed.
 */
export interface SettingsPart {
  /** A subsection's heading; an area of one part has none. */
  title?: string;
  intro?: string;
  schema: z.ZodObject;
  shownDefaults?: Partial<Record<string, string>>;
}

/** An area of the configuration: one section of docs/configuration.md, with a line on what it is about. */
export interface SettingsArea {
  title: string;
  intro: string;
  parts: SettingsPart[];
}
