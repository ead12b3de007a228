/** Outbound requests' settings: which private addresses a model-chosen URL, a webhook or an OAuth request may reach. */
import { z } from 'zod';
import { parseAllowList } from './private-addresses';

const allowList = z
  .string()
  .default('')
  .transform((text, ctx) => {
    try {
      return parseAllowList(text);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  });

export const netSettings = z
  .object({
    OUTBOUND_ALLOW_PRIVATE: allowList.meta({
      description:
        'host names, IPs and CIDR ranges (comma-separated) a model-chosen URL (`fetch_webpage`) may reach although private, e.g. `10.0.0.0/8,wiki.internal`',
      shownDefault: 'empty',
    }),
  })
  .meta({
    title: 'Outbound requests',
    description:
      'Requests the server sends where a model or a caller chose the address (web tools, webhooks, MCP OAuth): private addresses are refused unless allowed here.',
  });

export type NetSettings = z.infer<typeof netSettings>;
