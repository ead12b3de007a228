import type { Migration } from './migration';

/**
 * Scoped access tokens (src/access/access-tokens.ts): Letta's client-side access tokens, which reach
 * only the agents their policy names. The secret is kept as its SHA-256 alone; `id` is the token's
 * public part, shown in lists and used to revoke it.
 */
export const accessTokens: Migration = {
  version: 23,
  name: 'access tokens',
  sql: `
    CREATE TABLE access_tokens (
      id text PRIMARY KEY,
      secret_sha256 bytea NOT NULL,
      hostname text NOT NULL,
      policy jsonb NOT NULL,
      expires_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX access_tokens_expiry ON access_tokens (expires_at);
  `,
};
