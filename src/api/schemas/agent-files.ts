/** Letta's agent file routes: the export's query and body, and the import's form fields. */
import { z } from 'zod';
import { queryBoolean } from './common';

/** A form or query boolean as FastAPI reads one. */
const formBoolean = z.preprocess((v) => {
  if (typeof v !== 'string') return v;
  const text = v.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(text)) return true;
  if (['false', '0', 'no', 'off'].includes(text)) return false;
  return v;
}, z.boolean().optional());

/** An optional form text: empty counts as not given. */
const formText = z.preprocess((v) => (v === '' ? undefined : v), z.string().max(10_000).optional());

/** `GET /v1/agents/{agent_id}/export` (`max_steps` is deprecated and ignored, as in Letta). */
export const ExportAgentQuery = z.object({
  use_legacy_format: queryBoolean,
  conversation_id: z.string().optional(),
  scrub_messages: queryBoolean,
  max_steps: z.string().optional(),
});

/** `POST /v1/agents/{agent_id}/export` (Letta's ExportAgentRequest). */
export const ExportAgentBody = z.object({
  skills: z.array(z.record(z.string(), z.unknown())).nullish(),
  conversation_id: z.string().nullish(),
  scrub_messages: z.boolean().nullish(),
});

/**
 * The form fields of `POST /v1/agents/import` besides the file. `project_id` is accepted and ignored
 * (there are no projects here).
 */
export const ImportAgentForm = z.object({
  append_copy_suffix: formBoolean,
  override_existing_tools: formBoolean,
  strip_messages: formBoolean,
  name: formText,
  override_name: formText,
  model: formText,
  override_model_handle: formText,
  embedding: formText,
  override_embedding_handle: formText,
  secrets: z.string().max(1_000_000).optional(),
  env_vars_json: z.string().max(1_000_000).optional(),
  project_id: formText,
});

/** The multipart form of `POST /v1/agents/import`: the agent file and the fields above. */
export const ImportAgentUpload = ImportAgentForm.extend({
  file: z.any().meta({ type: 'string', format: 'binary', description: 'The agent file (.af)' }),
});

/** What an import answers: the ids of the agents it made. */
export const ImportedAgentsResponseSchema = z
  .object({ agent_ids: z.array(z.string()) })
  .meta({ id: 'ImportedAgentsResponse' });
export type ImportedAgentsResponse = z.infer<typeof ImportedAgentsResponseSchema>;
