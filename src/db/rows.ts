/** Rows as the repositories return them: the stored shape, before the API turns it into Letta's. */
import type { z } from 'zod';
import type { ReturnPart } from '../returns/return-parts';
import type { LlmConfigSchema } from '../schemas/agents';
import type { ToolRule } from '../schemas/tool-rules';
import type { ToolCall } from '../llm/types';
import type { TypedSandboxConfig } from '../schemas/sandbox-config';

export interface BlockRow {
  id: string;
  label: string;
  value: string;
  char_limit: number;
  description: string | null;
  read_only: boolean;
  hidden: boolean | null;
  metadata: Record<string, unknown> | null;
  tags: string[] | null;
  created_at: Date;
  updated_at: Date;
}

/** What a memory edit, and a sandboxed tool's `agent_state`, read of the agent's blocks. */
export type MemoryBlock = Pick<
  BlockRow,
  'id' | 'label' | 'value' | 'char_limit' | 'description' | 'read_only'
>;

export interface ToolRow {
  id: string;
  name: string;
  tool_type: string;
  description: string | null;
  source_type: string | null;
  source_code: string | null;
  json_schema: Record<string, unknown>;
  args_json_schema: Record<string, unknown> | null;
  tags: string[];
  return_char_limit: number;
  pip_requirements: unknown[] | null;
  npm_requirements: unknown[] | null;
  default_requires_approval: boolean | null;
  enable_parallel_execution: boolean;
  metadata: Record<string, unknown> | null;
  /** Bumped by every change; tool_versions keeps each one. */
  version: number;
  created_at: Date;
  updated_at: Date;
}

export interface SecretRow {
  id: string;
  agent_id: string;
  key: string;
  value: string;
  description: string | null;
}

/** The one sandbox config of its type (Letta's default config of that type). */
export type SandboxConfigRow = TypedSandboxConfig & {
  id: string;
  created_at: Date;
  updated_at: Date;
};

/** A sandbox config's environment variable; `value` is the plaintext (the column holds it encrypted). */
export interface SandboxEnvVarRow {
  id: string;
  sandbox_config_id: string;
  key: string;
  value: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface AgentRow {
  id: string;
  name: string;
  agent_type: string;
  description: string | null;
  system: string;
  model: string | null;
  llm_config: LlmConfig;
  embedding_config: Record<string, unknown> | null;
  tool_rules: ToolRule[];
  tags: string[];
  metadata: Record<string, unknown> | null;
  timezone: string;
  last_stop_reason: string | null;
  pending_approval: PendingApproval | null;
  approval_timeout_seconds: number | null;
  /** Letta's file controls; null: the defaults for the context window (src/memory/file-views.ts). */
  max_files_open: number | null;
  per_file_view_window_char_limit: number | null;
  created_at: Date;
  updated_at: Date;
}

/** What a paused agent turn waits for; set when it pauses, cleared when the answer is accepted. */
export interface PendingApproval {
  run_id: string;
  workflow_id: string;
  /** The assistant message whose tool calls wait (Letta's approval request). */
  message_id: string;
  tool_call_ids: string[];
  requested_at: string;
  /** When the pending calls are denied for want of an answer; null: never. */
  expires_at: string | null;
  /** When a reminder notice goes out (a policy's `reminder_after_seconds`); absent: none. */
  remind_at?: string;
}

export type LlmConfig = z.infer<typeof LlmConfigSchema>;

/** An agent with what it owns. */
export interface AgentRecord extends AgentRow {
  blocks: BlockRow[];
  tools: ToolRow[];
  secrets: SecretRow[];
  /** The folders attached to it and what it sees of their files (none when not loaded). */
  directories?: AgentDirectories;
}

/** A folder attached to an agent, as its context shows it. */
export interface AgentFolderRow {
  id: string;
  name: string;
  description: string | null;
  instructions: string | null;
  embedding_config: Record<string, unknown>;
  metadata: Record<string, unknown> | null;
  archive_id: string;
  created_at: Date;
  updated_at: Date;
}

/** What an agent sees of one file of its folders (`files_agents`). */
export interface FileAgentRow {
  id: string;
  agent_id: string;
  file_id: string;
  folder_id: string;
  file_name: string;
  is_open: boolean;
  visible_content: string | null;
  start_line: number | null;
  end_line: number | null;
  last_accessed_at: Date;
  created_at: Date;
  updated_at: Date;
}

export interface AgentDirectories {
  folders: AgentFolderRow[];
  files: FileAgentRow[];
}

export type MessageRole = 'system' | 'user' | 'assistant' | 'tool' | 'approval';

export interface StoredToolReturn {
  tool_call_id: string;
  status: 'success' | 'error';
  /** The return as the model sees it: Letta's packaged JSON `{"status","message","time"}`. */
  func_response: string;
  /** The return as Letta's return parts, when it holds an image: `func_response` is its text form. */
  parts?: ReturnPart[];
  stdout: string[] | null;
  stderr: string[] | null;
}

export interface MessageRow {
  seq: number;
  id: string;
  agent_id: string;
  run_id: string | null;
  /** Set from its run as it is stored; null: the agent's own history. */
  conversation_id: string | null;
  step_id: string | null;
  role: MessageRole;
  content: unknown;
  reasoning: string | null;
  tool_calls: ToolCall[] | null;
  tool_returns: StoredToolReturn[] | null;
  approvals: unknown[] | null;
  name: string | null;
  otid: string | null;
  sender_id: string | null;
  metadata: Record<string, unknown> | null;
  created_at: Date;
}

/**
 * A message as the model's context reads it (src/memory/context.ts): a model call reads the messages of
 * its window that way, those the model sees and the fields it reads, however long the conversation.
 */
export type TranscriptRow = Pick<MessageRow, 'role' | 'content' | 'tool_calls' | 'tool_returns'>;

export type RunStatus = 'created' | 'running' | 'completed' | 'failed' | 'cancelled';

export interface RunRow {
  id: string;
  agent_id: string;
  status: RunStatus;
  stop_reason: string | null;
  background: boolean;
  metadata: Record<string, unknown> | null;
  request_config: Record<string, unknown> | null;
  workflow_id: string;
  usage: Record<string, number> | null;
  /** The request's messages, stored in the transcript with the turn's first reply. */
  input: InputMessage[] | null;
  /** Null: the agent's default conversation. */
  conversation_id: string | null;
  /** Where the run is POSTed once it ends (migration 0018), and how the last attempt went. */
  callback_url: string | null;
  callback_sent_at: Date | null;
  callback_status_code: number | null;
  callback_error: string | null;
  created_at: Date;
  completed_at: Date | null;
}

/** A message of a request, as it waits with its run. */
export interface InputMessage {
  role: 'user' | 'system' | 'assistant';
  text: string;
  name?: string | null;
  otid?: string | null;
}

export interface ConversationRow {
  id: string;
  agent_id: string;
  summary: string | null;
  model: string | null;
  model_settings: Record<string, unknown> | null;
  last_message_at: Date | null;
  pending_approval: PendingApproval | null;
  /** Left out of listings. */
  hidden: boolean;
  created_at: Date;
  updated_at: Date;
}
