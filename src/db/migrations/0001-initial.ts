import type { Migration } from './migration';

/** Facts about this installation, kept with its data (the id shows in logs and the health answer). */
export const initial: Migration = {
  version: 1,
  name: 'server metadata',
  sql: `
    CREATE TABLE server_metadata (
      key text PRIMARY KEY,
      value jsonb NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    INSERT INTO server_metadata (key, value) VALUES ('instance_id', to_jsonb(gen_random_uuid()::text));
  `,
};
