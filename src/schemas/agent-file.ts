/**
 * Letta's agent file (`.af`, letta/schemas/agent_file.py AgentFileSchema): agents, their blocks, tools,
 * messages and the rest, under file-local ids (`agent-0`, `block-0`, `tool-0`, `message-0`, …). What an
 * import reads is lenient as pydantic is (unknown fields are ignored, most fields may be null or left
 * out); what an export writes is the same shape, every field filled in as Letta fills it.
 */
import { z } from 'zod';
import { ToolRuleSchema } from './tool-rules';
import { LlmConfigSchema } from './agents';

const JsonObject = z.record(z.string(), z.unknown());
/** A file-local id (`<prefix>-<n>` in Letta's files; any non-empty string is taken). */
const FileId = z.string().min(1).max(200);

/** Letta's content parts; only text and reasoning carry over, the others are kept out. */
const ContentPartSchema = z
  .object({
    type: z.string(),
    text: z.string().nullish(),
    reasoning: z.string().nullish(),
  })
  .loose();

/** A tool return as Letta stores it on a message (letta/schemas/message.py ToolReturn). */
export const FileToolReturnSchema = z
  .object({
    tool_call_id: z.string().nullish(),
    status: z.enum(['success', 'error']).nullish(),
    func_response: z.unknown().optional(),
    stdout: z.array(z.string()).nullish(),
    stderr: z.array(z.string()).nullish(),
  })
  .loose();

/** An OpenAI tool call (the shape Letta stores on assistant messages). */
const FileToolCallSchema = z
  .object({
    id: z.string().min(1),
    type: z.string().nullish(),
    function: z.object({ name: z.string().min(1), arguments: z.string() }).loose(),
  })
  .loose();

/** One answer in an approval message: a decision (`approve`), or a client tool's return. */
const FileApprovalSchema = z
  .object({
    type: z.string().nullish(),
    tool_call_id: z.string().min(1),
    approve: z.boolean().nullish(),
    reason: z.string().nullish(),
    status: z.enum(['success', 'error']).nullish(),
    func_response: z.unknown().optional(),
    tool_return: z.unknown().optional(),
    stdout: z.array(z.string()).nullish(),
    stderr: z.array(z.string()).nullish(),
  })
  .loose();

/** Letta's MessageSchema. */
export const FileMessageSchema = z
  .object({
    id: FileId,
    role: z.enum(['system', 'user', 'assistant', 'tool', 'function', 'approval']),
    content: z.union([z.string(), z.array(ContentPartSchema)]).nullish(),
    name: z.string().nullish(),
    otid: z.string().nullish(),
    sender_id: z.string().nullish(),
    model: z.string().nullish(),
    agent_id: z.string().nullish(),
    tool_calls: z.array(FileToolCallSchema).nullish(),
    tool_call_id: z.string().nullish(),
    tool_returns: z.array(FileToolReturnSchema).nullish(),
    created_at: z
      .string()
      .refine((text) => !Number.isNaN(Date.parse(text)), 'expected a date and time')
      .nullish(),
    approve: z.boolean().nullish(),
    approval_request_id: z.string().nullish(),
    denial_reason: z.string().nullish(),
    approvals: z.array(FileApprovalSchema).nullish(),
  })
  .loose();
export type FileMessage = z.infer<typeof FileMessageSchema>;

/** Letta's BlockSchema (a CreateBlock with a file id). */
export const FileBlockSchema = z
  .object({
    id: FileId,
    label: z.string().min(1),
    value: z.string(),
    limit: z.number().int().positive().nullish(),
    description: z.string().nullish(),
    read_only: z.boolean().nullish(),
    hidden: z.boolean().nullish(),
    metadata: JsonObject.nullish(),
    tags: z.array(z.string()).nullish(),
  })
  .loose();
export type FileBlock = z.infer<typeof FileBlockSchema>;

/** Letta's ToolSchema (a Tool with a file id). */
export const FileToolSchema = z
  .object({
    id: FileId,
    name: z.string().min(1),
    tool_type: z.string().nullish(),
    description: z.string().nullish(),
    source_type: z.string().nullish(),
    source_code: z.string().nullish(),
    json_schema: JsonObject.nullish(),
    args_json_schema: JsonObject.nullish(),
    tags: z.array(z.string()).nullish(),
    return_char_limit: z.number().int().nullish(),
    pip_requirements: z.array(z.unknown()).nullish(),
    npm_requirements: z.array(z.unknown()).nullish(),
    default_requires_approval: z.boolean().nullish(),
    enable_parallel_execution: z.boolean().nullish(),
    metadata_: JsonObject.nullish(),
  })
  .loose();
export type FileTool = z.infer<typeof FileToolSchema>;

/** Letta's AgentSchema: a CreateAgent with a file id, its messages and which of them are in context. */
export const FileAgentSchema = z
  .object({
    id: FileId,
    name: z.string().nullish(),
    agent_type: z.string().nullish(),
    description: z.string().nullish(),
    system: z.string().nullish(),
    tool_ids: z.array(FileId).nullish(),
    block_ids: z.array(FileId).nullish(),
    tool_rules: z.array(ToolRuleSchema).nullish(),
    tags: z.array(z.string()).nullish(),
    metadata: JsonObject.nullish(),
    llm_config: LlmConfigSchema.nullish(),
    embedding_config: JsonObject.nullish(),
    model: z.string().nullish(),
    embedding: z.string().nullish(),
    secrets: z.record(z.string(), z.string().nullable()).nullish(),
    tool_exec_environment_variables: z.record(z.string(), z.string().nullable()).nullish(),
    timezone: z.string().nullish(),
    max_files_open: z.number().int().nullish(),
    per_file_view_window_char_limit: z.number().int().nullish(),
    in_context_message_ids: z.array(FileId).default([]),
    messages: z.array(FileMessageSchema).default([]),
  })
  .loose();
export type FileAgent = z.infer<typeof FileAgentSchema>;

/** Letta's AgentFileSchema. Groups, files, sources, MCP servers and skills are read but not imported. */
export const AgentFileSchema = z
  .object({
    agents: z.array(FileAgentSchema),
    groups: z.array(JsonObject).default([]),
    blocks: z.array(FileBlockSchema).default([]),
    files: z.array(JsonObject).default([]),
    sources: z.array(JsonObject).default([]),
    tools: z.array(FileToolSchema).default([]),
    mcp_servers: z.array(JsonObject).default([]),
    skills: z.array(JsonObject).default([]),
    metadata: z.record(z.string(), z.unknown()).nullish(),
    created_at: z.string().nullish(),
  })
  .loose();
export type AgentFile = z.infer<typeof AgentFileSchema>;

/** Letta's import options (the form fields of `POST /v1/agents/import`, newest names first). */
export interface ImportOptions {
  /** Appends `_copy` to each agent's name (Letta's default: true). */
  appendCopySuffix: boolean;
  /** Replaces the agents' names. */
  name?: string;
  /** Custom tools of the file replace stored ones of their names (Letta's default: true). */
  overrideExistingTools: boolean;
  /** Leaves the messages out. */
  stripMessages: boolean;
  /** Values of the agents' secrets (the file has their keys only). */
  secrets?: Record<string, string>;
  /** A model handle replacing the agents' llm_config. */
  model?: string;
  /** An embedding handle replacing the agents' embedding_config. */
  embedding?: string;
}
