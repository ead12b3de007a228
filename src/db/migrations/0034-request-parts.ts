import type { Migration } from './migration';

/**
 * Large parts of requests stored once, by the SHA-256 of their JSON text (src/db/request-parts.ts): a
 * request's client tool schemas, an agent's tools and rules as a turn works with them. Runs and
 * workflow payloads name them by their digest. The text is kept as it was sent (jsonb would sort a
 * schema's properties, the order the model sees its parameters in).
 */
export const requestParts: Migration = {
  version: 34,
  name: 'request parts',
  sql: `CREATE TABLE request_parts (
    digest text PRIMARY KEY,
    body text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  );`,
};
