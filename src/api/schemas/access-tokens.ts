/** Letta's client-side access tokens (`/v1/client-side-access-tokens`), as the official clients send and read them. */
import { z } from 'zod';

const Access = z.enum(['read_messages', 'write_messages', 'read_agent', 'write_agent']);

const AgentGrantSchema = z.object({
  id: z.string().min(1),
  access: z.array(Access).min(1),
  type: z.literal('agent'),
});

/** A web app's origin, with its scheme: a browser request carrying the token must come from it. */
const Hostname = z.url({ protocol: /^https?$/, error: 'the full URL of the app, with http:// or https://' });

export const createAccessTokenSchema = (maxAgents: number) =>
  z.object({
    hostname: Hostname,
    policy: z.array(AgentGrantSchema).min(1).max(maxAgents),
    expires_at: z.iso.datetime({ offset: true }).optional(),
  });

export const ListAccessTokensQuery = z.object({
  agentId: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(100).default(10),
  offset: z.coerce.number().int().min(0).default(0),
});

export const AccessTokenSchema = z
  .object({
    /** The whole token in the answer that makes it; its public id (`lct-…`) in lists. */
    token: z.string(),
    expiresAt: z.string(),
    hostname: z.string(),
    policy: z.object({ data: z.array(AgentGrantSchema), version: z.literal('1') }),
  })
  .meta({ id: 'ClientSideAccessToken' });

export const AccessTokenListSchema = z
  .object({ hasNextPage: z.boolean(), tokens: z.array(AccessTokenSchema) })
  .meta({ id: 'ClientSideAccessTokenList' });
