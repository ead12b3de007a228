/** Identities, and the agents and blocks they are attached to. */
import type { Queryable } from './database';
import { deleteIdentityMcpOauth } from './mcp-oauth';
import { json, pageOf, updateById, whereClause, type Page } from './sql';

export interface IdentityRow {
  id: string;
  identifier_key: string;
  name: string;
  identity_type: string;
  project_id: string | null;
  properties: unknown[];
  created_at: Date;
  updated_at: Date;
  agent_ids: string[];
  block_ids: string[];
}

export type IdentityFields = Pick<
  IdentityRow,
  'identifier_key' | 'name' | 'identity_type' | 'project_id' | 'properties'
>;

const WITH_LINKS = `SELECT i.*,
  coalesce((SELECT array_agg(agent_id ORDER BY agent_id) FROM identities_agents WHERE identity_id = i.id), '{}') AS agent_ids,
  coalesce((SELECT array_agg(block_id ORDER BY block_id) FROM identities_blocks WHERE identity_id = i.id), '{}') AS block_ids
  FROM identities i`;

export async function insertIdentity(db: Queryable, id: string, fields: IdentityFields): Promise<void> {
  await db.query(
    `INSERT INTO identities (id, identifier_key, name, identity_type, project_id, properties)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [
      id,
      fields.identifier_key,
      fields.name,
      fields.identity_type,
      fields.project_id,
      json(fields.properties),
    ],
  );
}

export async function updateIdentity(
  db: Queryable,
  id: string,
  fields: Partial<IdentityFields>,
): Promise<void> {
  await updateById(db, 'identities', id, fields, ['properties']);
}

export async function getIdentity(db: Queryable, id: string): Promise<IdentityRow | undefined> {
  const [row] = await db.query<IdentityRow>(`${WITH_LINKS} WHERE i.id = $1`, [id]);
  return row;
}

export async function identityByKey(db: Queryable, key: string): Promise<IdentityRow | undefined> {
  const [row] = await db.query<IdentityRow>(`${WITH_LINKS} WHERE i.identifier_key = $1`, [key]);
  return row;
}

export function listIdentities(
  db: Queryable,
  filters: { name?: string; identifierKey?: string; identityType?: string; projectId?: string },
  page: Page,
): Promise<IdentityRow[]> {
  const where = whereClause();
  if (filters.name) where.add('strpos(lower(name), lower(?)) > 0', filters.name);
  if (filters.identifierKey) where.add('identifier_key = ?', filters.identifierKey);
  if (filters.identityType) where.add('identity_type = ?', filters.identityType);
  if (filters.projectId) where.add('project_id = ?', filters.projectId);
  return pageOf<IdentityRow>(db, `(${WITH_LINKS}) AS identities`, where, page);
}

export async function deleteIdentity(db: Queryable, id: string): Promise<boolean> {
  await deleteIdentityMcpOauth(db, id);
  return (await db.query('DELETE FROM identities WHERE id = $1 RETURNING id', [id])).length > 0;
}

/** Replaces the agents (or blocks) attached to an identity. */
export async function setIdentityLinks(db: Queryable, id: string, kind: 'agent' | 'block', ids: string[]) {
  const table = kind === 'agent' ? 'identities_agents' : 'identities_blocks';
  await db.query(`DELETE FROM ${table} WHERE identity_id = $1`, [id]);
  for (const other of ids)
    await db.query(`INSERT INTO ${table} (identity_id, ${kind}_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [
      id,
      other,
    ]);
}

export async function linkAgent(db: Queryable, identityId: string, agentId: string, attach: boolean) {
  await db.query(
    attach
      ? 'INSERT INTO identities_agents (identity_id, agent_id) VALUES ($1, $2) ON CONFLICT DO NOTHING'
      : 'DELETE FROM identities_agents WHERE identity_id = $1 AND agent_id = $2',
    [identityId, agentId],
  );
}

/** The identities an agent is attached to. */
export async function identitiesOfAgent(db: Queryable, agentId: string): Promise<IdentityRow[]> {
  return db.query<IdentityRow>(
    `${WITH_LINKS} WHERE i.id IN (SELECT identity_id FROM identities_agents WHERE agent_id = $1) ORDER BY i.created_at`,
    [agentId],
  );
}
