import type { Queryable } from './database';
import type { SandboxConfigRow, SandboxEnvVarRow } from './rows';
import type { SandboxType, TypedSandboxConfig } from '../schemas/sandbox-config';
import { newId } from '../ids';
import { decryptSecret, encryptSecret } from '../secrets';
import { json, pageOf, updateById, whereClause, type Page } from './sql';

// One config per type (UNIQUE (type)), as Letta keeps one per type and organization.

/** Creates the config of its type, or replaces the fields of the one there is (Letta's create-or-update). */
export async function upsertSandboxConfig(
  db: Queryable,
  typed: TypedSandboxConfig,
): Promise<SandboxConfigRow> {
  const [row] = await db.query<SandboxConfigRow>(
    `INSERT INTO sandbox_configs (id, type, config) VALUES ($1, $2, $3)
     ON CONFLICT (type) DO UPDATE SET config = EXCLUDED.config, updated_at = now() RETURNING *`,
    [newId('sandbox'), typed.type, json(typed.config)],
  );
  return row;
}

/** The config of its type, created with these fields if there is none. */
export async function ensureSandboxConfig(
  db: Queryable,
  typed: TypedSandboxConfig,
): Promise<SandboxConfigRow> {
  await db.query(
    'INSERT INTO sandbox_configs (id, type, config) VALUES ($1, $2, $3) ON CONFLICT (type) DO NOTHING',
    [newId('sandbox'), typed.type, json(typed.config)],
  );
  return (await getSandboxConfigByType(db, typed.type))!;
}

export async function getSandboxConfig(db: Queryable, id: string): Promise<SandboxConfigRow | undefined> {
  const [row] = await db.query<SandboxConfigRow>('SELECT * FROM sandbox_configs WHERE id = $1', [id]);
  return row;
}

export async function getSandboxConfigByType(
  db: Queryable,
  type: SandboxType,
): Promise<SandboxConfigRow | undefined> {
  const [row] = await db.query<SandboxConfigRow>('SELECT * FROM sandbox_configs WHERE type = $1', [type]);
  return row;
}

export async function updateSandboxConfig(
  db: Queryable,
  id: string,
  config: TypedSandboxConfig['config'],
): Promise<SandboxConfigRow> {
  await updateById(db, 'sandbox_configs', id, { config }, ['config']);
  return (await getSandboxConfig(db, id))!;
}

/** Deletes a config and its environment variables. */
export async function deleteSandboxConfig(db: Queryable, id: string): Promise<boolean> {
  return (await db.query('DELETE FROM sandbox_configs WHERE id = $1 RETURNING id', [id])).length > 0;
}

export function listSandboxConfigs(
  db: Queryable,
  filters: { type?: SandboxType },
  page: Page,
): Promise<SandboxConfigRow[]> {
  const where = whereClause();
  if (filters.type) where.add('type = ?', filters.type);
  return pageOf<SandboxConfigRow>(db, 'sandbox_configs', where, page);
}

const decrypted = (row: SandboxEnvVarRow): SandboxEnvVarRow => ({ ...row, value: decryptSecret(row.value) });

export interface EnvVarFields {
  key: string;
  value: string;
  description?: string | null;
}

/**
 * Sets a variable of a config, stored encrypted: a key the config already has gets the new value (and
 * the new description, if one is given), as Letta's create does.
 */
export async function upsertSandboxEnvVar(
  db: Queryable,
  sandboxConfigId: string,
  fields: EnvVarFields,
): Promise<SandboxEnvVarRow> {
  const [row] = await db.query<SandboxEnvVarRow>(
    `INSERT INTO sandbox_env_vars (id, sandbox_config_id, key, value, description) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (sandbox_config_id, key) DO UPDATE SET value = EXCLUDED.value,
       description = COALESCE(EXCLUDED.description, sandbox_env_vars.description), updated_at = now()
     RETURNING *`,
    [
      newId('sandbox-env'),
      sandboxConfigId,
      fields.key,
      encryptSecret(fields.value),
      fields.description ?? null,
    ],
  );
  return decrypted(row);
}

export async function getSandboxEnvVar(db: Queryable, id: string): Promise<SandboxEnvVarRow | undefined> {
  const [row] = await db.query<SandboxEnvVarRow>('SELECT * FROM sandbox_env_vars WHERE id = $1', [id]);
  return row && decrypted(row);
}

/** Changes the given fields; a key another variable of the config has is a unique violation. */
export async function updateSandboxEnvVar(
  db: Queryable,
  id: string,
  fields: Partial<EnvVarFields>,
): Promise<SandboxEnvVarRow> {
  const value = fields.value === undefined ? undefined : encryptSecret(fields.value);
  await updateById(db, 'sandbox_env_vars', id, { ...fields, value });
  return (await getSandboxEnvVar(db, id))!;
}

export async function deleteSandboxEnvVar(db: Queryable, id: string): Promise<boolean> {
  return (await db.query('DELETE FROM sandbox_env_vars WHERE id = $1 RETURNING id', [id])).length > 0;
}

/** A config's variables, decrypted, oldest first: a page of them, or all. */
export async function listSandboxEnvVars(
  db: Queryable,
  sandboxConfigId: string,
  page?: Page,
): Promise<SandboxEnvVarRow[]> {
  const where = whereClause();
  where.add('sandbox_config_id = ?', sandboxConfigId);
  const rows = page
    ? await pageOf<SandboxEnvVarRow>(db, 'sandbox_env_vars', where, page)
    : await db.query<SandboxEnvVarRow>(
        `SELECT * FROM sandbox_env_vars ${where} ORDER BY created_at, id`,
        where.params,
      );
  return rows.map(decrypted);
}
