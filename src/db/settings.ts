/** The database's settings: which PostgreSQL (or the embedded PGlite), its pool, and the key of secrets. */
import { z } from 'zod';
import { parseSecretsKey } from '../secrets';
import { optional, url, wholeNumber } from '../settings-fields';

const secretsKey = z.string().transform((text, ctx) => {
  const key = parseSecretsKey(text);
  if (key) return key;
  ctx.addIssue({
    code: 'custom',
    message: 'expected 32 bytes as base64 or hex, e.g. the output of `openssl rand -base64 32`',
  });
  return z.NEVER;
});

export const databaseSettings = z
  .object({
    DATABASE_URL: optional(url).meta({
      description: 'PostgreSQL connection string, e.g. `postgres://user:pass@host:5432/db`',
      shownDefault: 'unset: PGlite',
    }),
    DATABASE_POOL_SIZE: wholeNumber
      .min(1)
      .default(20)
      .describe(
        'connections to PostgreSQL per process (API and workers each hold a pool); an activity holds one at a time, a memory edit that creates a block for its whole transaction',
      ),
    SECRETS_KEY: optional(secretsKey).meta({
      description:
        '32 bytes, base64 or hex, encrypting agent secrets and sandbox env vars at rest; unset: a key made once in `<DATA_DIR>/secrets.key` (see [Sandbox configs and secrets](operations.md#sandbox-configs-and-secrets))',
      shownDefault: 'unset: generated',
    }),
  })
  .meta({
    title: 'Database and secrets',
    description:
      'The PostgreSQL server (or the embedded PGlite in `DATA_DIR`) and the key that encrypts secrets at rest.',
  });

export type DatabaseSettings = z.infer<typeof databaseSettings>;
