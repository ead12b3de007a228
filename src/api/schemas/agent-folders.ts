/** What an agent's folder and file routes answer (src/api/routes/agent-folders.ts). */
import { z } from 'zod';

/** Letta's AgentFileAttachment: what an agent sees of one file (agentFileShape). */
export const AgentFileAttachmentSchema = z
  .object({
    id: z.string(),
    file_id: z.string(),
    file_name: z.string(),
    folder_id: z.string(),
    folder_name: z.string(),
    is_open: z.boolean(),
    last_accessed_at: z.string().nullable(),
    visible_content: z.string().nullable(),
    start_line: z.number().int().nullable(),
    end_line: z.number().int().nullable(),
  })
  .meta({ id: 'AgentFileAttachment' });
export type AgentFileAttachment = z.infer<typeof AgentFileAttachmentSchema>;

/** Letta's PaginatedAgentFiles: one page of an agent's files (`agents.files.list`). */
export const PaginatedAgentFilesSchema = z
  .object({
    files: z.array(AgentFileAttachmentSchema),
    /** The id to pass as `after` for the next page; null on the last page. */
    next_cursor: z.string().nullable(),
    has_more: z.boolean(),
  })
  .meta({ id: 'PaginatedAgentFiles' });
export type PaginatedAgentFiles = z.infer<typeof PaginatedAgentFilesSchema>;
