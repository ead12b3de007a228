import { z } from 'zod';
import { ToolSchema } from './responses';

/** One tool the tool search found, with how well it matched. */
export const ToolSearchResultSchema = z
  .object({ tool: ToolSchema, combined_score: z.number() })
  .meta({ id: 'ToolSearchResult' });
