/** Letta's identity requests (schemas/identity.py). */
import { z } from 'zod';
import { pageQuery } from './common';

export const PropertySchema = z.object({
  key: z.string(),
  value: z.union([z.string(), z.number(), z.boolean(), z.record(z.string(), z.unknown())]),
  type: z.enum(['string', 'number', 'boolean', 'json']),
});
const Links = { agent_ids: z.array(z.string()).nullish(), block_ids: z.array(z.string()).nullish() };

export const IdentityCreateSchema = z.object({
  identifier_key: z.string().min(1),
  name: z.string().min(1),
  identity_type: z.enum(['org', 'user', 'other']),
  project_id: z.string().nullish(),
  properties: z.array(PropertySchema).nullish(),
  ...Links,
});
export const IdentityUpdateSchema = IdentityCreateSchema.omit({ project_id: true }).partial();

export const ListIdentitiesQuery = pageQuery(50, 'desc').extend({
  name: z.string().optional(),
  identifier_key: z.string().optional(),
  identity_type: z.string().optional(),
  project_id: z.string().optional(),
});
