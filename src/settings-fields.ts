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

/** A whole number, as the text of a count or a size in bytes. */
export const wholeNumber = z.coerce.number().int();

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
 * An area as docs/configuration.md shows it (scripts/config-doc.ts): a section headed by its schema's
 * `.meta({ title, description })`, the description its one-line intro, then a subsection for each part
 * (a schema the area's extends, with its own title and intro). A variable's `.describe()` is its line;
 * where its default is no value to print (unset, chosen at start-up, the machine's), it says what the
 * page shows instead: `.meta({ description, shownDefault })`.
 */
export interface SettingsArea {
  schema: z.ZodObject;
  parts?: z.ZodObject[];
}
