import { z } from 'zod';
import { PipRequirementSchema as Requirement } from './sandbox-config';
import { DEFAULT_RETURN_CHAR_LIMIT } from '../returns/tool-returns';
import type { ClientTool } from '../../contracts/payloads';

const JsonObject = z.record(z.string(), z.unknown());

const TYPESCRIPT_NEEDS_SCHEMA =
  'TypeScript tools require an explicit json_schema parameter: their schema is not derived from the source';

/** The fields a tool can be given (Letta's ToolCreate / ToolUpdate); there is no name: it is the schema's. */
const ToolFieldsSchema = z.object({
  source_code: z.string(),
  source_type: z.enum(['python', 'typescript']),
  description: z.string().nullish(),
  tags: z.array(z.string()).nullish(),
  json_schema: JsonObject.nullish(),
  args_json_schema: JsonObject.nullish(),
  return_char_limit: z.number().int().min(1).max(1_000_000),
  pip_requirements: z.array(Requirement).nullish(),
  npm_requirements: z.array(Requirement).nullish(),
  default_requires_approval: z.boolean().nullish(),
  enable_parallel_execution: z.boolean(),
  metadata_: JsonObject.nullish(),
});

export const ToolCreateSchema = ToolFieldsSchema.extend({
  source_type: ToolFieldsSchema.shape.source_type.default('python'),
  return_char_limit: ToolFieldsSchema.shape.return_char_limit.default(DEFAULT_RETURN_CHAR_LIMIT),
  enable_parallel_execution: ToolFieldsSchema.shape.enable_parallel_execution.default(false),
}).refine((body) => body.source_type !== 'typescript' || body.json_schema, {
  message: TYPESCRIPT_NEEDS_SCHEMA,
  path: ['json_schema'],
});
export type ToolCreate = z.infer<typeof ToolCreateSchema>;

export const ToolUpdateSchema = ToolFieldsSchema.partial().refine(
  (body) => !(body.json_schema && body.args_json_schema),
  { message: 'Cannot provide both json_schema and args_json_schema', path: ['json_schema'] },
);
export type ToolUpdate = z.infer<typeof ToolUpdateSchema>;

/** Letta's ToolRunFromSource: run source without storing a tool. */
export const ToolRunFromSourceSchema = z.object({
  source_code: z.string(),
  args: JsonObject.default({}),
  env_vars: z.record(z.string(), z.string()).nullish(),
  name: z.string().nullish(),
  source_type: z.enum(['python', 'typescript']).default('python'),
  json_schema: JsonObject.nullish(),
  args_json_schema: JsonObject.nullish(),
  pip_requirements: z.array(Requirement).nullish(),
  npm_requirements: z.array(Requirement).nullish(),
});

export const AgentToolRunSchema = z.object({ args: JsonObject.default({}) });

/** A tool the client runs, sent with a request (Letta's `client_tools`): the turn pauses for its return. */
export const ClientToolSchema = z.object({
  name: z.string().min(1),
  description: z.string().nullish(),
  parameters: JsonObject.nullish(),
}) satisfies z.ZodType<ClientTool>;

/** Letta's ToolSearchRequest; the search is full-text whatever `search_mode` asks. */
export const SearchToolsSchema = z.object({
  query: z.string().nullish(),
  tags: z.array(z.string()).nullish(),
  tool_types: z.array(z.string()).nullish(),
  limit: z.number().int().min(1).max(1000).default(50),
  search_mode: z.enum(['vector', 'fts', 'hybrid']).nullish(),
});
