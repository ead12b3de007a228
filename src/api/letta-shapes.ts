/** Stored rows → Letta's wire shapes (AgentState, Block, Tool, LettaMessage, Run, SandboxConfig, MCP server). */
import { maskSecret } from '../masking';
import type { ShownElicitation } from '../db/mcp-elicitations';
import type { TypedSandboxConfig } from '../schemas/sandbox-config';
import { schemaHealth } from '../schemas/schema-health';
import type {
  AgentFolderRow,
  AgentRecord,
  BlockRow,
  ConversationRow,
  FileAgentRow,
  MessageRow,
  RunRow,
  SandboxConfigRow,
  SandboxEnvVarRow,
  ToolRow,
} from '../db/rows';
import type { McpServerRow } from '../db/mcp-servers';
import { maskedConfig } from '../mcp/server-config';
import type { ToolRunResult } from '../sandbox';
import { contentText } from '../memory/context';
import { fileBlock, fileLimits } from '../memory/file-views';
import { lettaDate } from '../time';
import { cappedReturn, pythonStr, unpackageFunctionResponse } from '../returns/tool-returns';
import type { ArchiveRow, PassageRow } from '../db/archives';
import type { IdentityRow } from '../db/identities';
import type {
  AgentState,
  Archive,
  Passage,
  Block,
  Conversation,
  Identity,
  LettaMessage,
  Run,
  SandboxConfig,
  SandboxEnvVar,
  Step,
  Tool,
  ToolExecutionResult,
  ToolReturnMessage,
  UsageStatistics,
} from './schemas/responses';

const iso = (date: Date | null) => (date ? new Date(date).toISOString() : null);

export function blockShape(block: BlockRow): Block {
  return {
    id: block.id,
    label: block.label,
    value: block.value,
    limit: block.char_limit,
    description: block.description,
    read_only: block.read_only,
    hidden: block.hidden,
    metadata: block.metadata ?? {},
    tags: block.tags,
    is_template: false,
    created_at: iso(block.created_at),
    updated_at: iso(block.updated_at),
  };
}

export function toolShape(tool: ToolRow): Tool {
  return {
    id: tool.id,
    tool_type: tool.tool_type,
    name: tool.name,
    description: tool.description,
    source_type: tool.source_type,
    source_code: tool.source_code,
    json_schema: tool.json_schema,
    args_json_schema: tool.args_json_schema,
    tags: tool.tags,
    return_char_limit: tool.return_char_limit,
    pip_requirements: tool.pip_requirements,
    npm_requirements: tool.npm_requirements,
    default_requires_approval: tool.default_requires_approval,
    enable_parallel_execution: tool.enable_parallel_execution,
    metadata_: tool.metadata ?? {},
    version: tool.version,
    health: schemaHealth((tool.json_schema as { parameters?: unknown }).parameters),
    created_at: iso(tool.created_at),
    updated_at: iso(tool.updated_at),
  };
}

/** Letta's ToolExecutionResult: how a tool run outside an agent turn ended, its return cut at `returnCharLimit`. */
export function toolExecutionShape(
  result: Pick<ToolRunResult, 'status' | 'funcReturn' | 'returnChars' | 'stdout' | 'stderr'>,
  returnCharLimit: number,
): ToolExecutionResult {
  return {
    status: result.status,
    func_return: cappedReturn(result.funcReturn, returnCharLimit, result.returnChars),
    stdout: result.stdout,
    stderr: result.stderr,
    agent_state: null,
    sandbox_config_fingerprint: null,
  };
}

/**
 * Letta's answer to `POST /v1/tools/run` (server.py, run_tool_from_source): a ToolReturnMessage of no
 * call, ids "null" as Letta sends them, the return as Python's `str()` shows it. `name` is the function's
 * (Letta's is the request's `name`, null unless given, and its error text then says "function None").
 */
export function toolRunFromSourceShape(
  name: string,
  result: Pick<ToolRunResult, 'status' | 'funcReturn' | 'returnChars' | 'stdout' | 'stderr'>,
  returnCharLimit: number,
): ToolReturnMessage {
  const { status, stdout, stderr } = result;
  const toolReturn = pythonStr(cappedReturn(result.funcReturn, returnCharLimit, result.returnChars));
  const part = { tool_return: toolReturn, status, tool_call_id: 'null', stdout, stderr };
  return {
    id: 'null',
    date: lettaDate(new Date()),
    name,
    otid: null,
    sender_id: null,
    step_id: null,
    is_err: null,
    seq_id: null,
    run_id: null,
    message_type: 'tool_return_message',
    ...part,
    tool_returns: [{ type: 'tool', ...part }],
  };
}

/** Letta's flat MCP server shape: id, name and config fields, its credentials masked unless shown (MCP_SHOW_CREDENTIALS). */
export function mcpServerShape(server: McpServerRow, showCredentials = false) {
  const { status, last_error, last_tried_at } = server.connection;
  return {
    id: server.id,
    server_name: server.server_name,
    ...(showCredentials ? server.config : maskedConfig(server.config)),
    connection: { status, last_error, last_tried_at: iso(last_tried_at) },
  };
}

/** Letta's SandboxConfig; there are no organizations here. */
export function sandboxConfigShape(row: SandboxConfigRow): SandboxConfig {
  const { id, type, config } = row;
  const typed = { type, config } as TypedSandboxConfig;
  return {
    id,
    ...typed,
    organization_id: null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** Letta's SandboxEnvironmentVariable, its value masked (Letta returns it in plaintext). */
export function sandboxEnvVarShape(row: SandboxEnvVarRow): SandboxEnvVar {
  return {
    id: row.id,
    key: row.key,
    value: maskSecret(row.value),
    description: row.description,
    sandbox_config_id: row.sandbox_config_id,
    organization_id: null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** Letta's Source (a folder), as `agents.folders.list` and AgentState's `sources` show it. */
export function folderShape(folder: AgentFolderRow) {
  return {
    id: folder.id,
    name: folder.name,
    description: folder.description,
    instructions: folder.instructions,
    metadata: folder.metadata,
    embedding_config: folder.embedding_config,
    vector_db_provider: 'native',
    created_by_id: null,
    last_updated_by_id: null,
    created_at: iso(folder.created_at),
    updated_at: iso(folder.updated_at),
  };
}

/** Letta's AgentFileAttachment: what an agent sees of one file (`agents.files.list`). */
export function agentFileShape(view: FileAgentRow, folderName: string) {
  return {
    id: view.id,
    file_id: view.file_id,
    file_name: view.file_name,
    folder_id: view.folder_id,
    folder_name: folderName,
    is_open: view.is_open,
    last_accessed_at: iso(view.last_accessed_at),
    visible_content: view.visible_content,
    start_line: view.start_line,
    end_line: view.end_line,
  };
}

/** The relationships `include=` names; without them, AgentState carries empty lists for these fields. */
export const AGENT_RELATIONSHIPS = [
  'agent.blocks',
  'agent.identities',
  'agent.managed_group',
  'agent.pending_approval',
  'agent.secrets',
  'agent.sources',
  'agent.tags',
  'agent.tools',
] as const;
export type AgentRelationship = (typeof AGENT_RELATIONSHIPS)[number];
export const ALL_RELATIONSHIPS: ReadonlySet<AgentRelationship> = new Set(AGENT_RELATIONSHIPS);

/** An agent's embedding handle as Letta shows it: its config's handle, else `provider/model`. */
function embeddingHandle(config: Record<string, unknown> | null): string | null {
  if (!config) return null;
  if (typeof config.handle === 'string') return config.handle;
  const { embedding_endpoint_type: provider, embedding_model: model } = config;
  return typeof provider === 'string' && typeof model === 'string' ? `${provider}/${model}` : null;
}

/**
 * Letta's model_settings of an llm_config (`LLMConfig._to_model_settings`): an OpenAI model's reasoning
 * effort reads "minimal" when unset, and parallel tool calls read true unless the agent set them.
 */
function modelSettings(llm: AgentRecord['llm_config']) {
  const provider = llm.model_endpoint_type;
  return {
    provider_type: provider,
    temperature: llm.temperature ?? null,
    max_output_tokens: llm.max_tokens ?? null,
    parallel_tool_calls: llm.parallel_tool_calls ?? true,
    strict: Boolean(llm.strict),
    reasoning: { reasoning_effort: llm.reasoning_effort ?? (provider === 'openai' ? 'minimal' : null) },
    response_format: null,
  };
}
export function agentStateShape(
  agent: AgentRecord,
  extra: { message_ids?: string[]; pending_approval?: unknown; identities?: IdentityRow[] } = {},
  include: ReadonlySet<AgentRelationship> = ALL_RELATIONSHIPS,
): AgentState {
  const blocks = include.has('agent.blocks') ? agent.blocks.map(blockShape) : [];
  const limits = fileLimits(agent);
  const secrets = include.has('agent.secrets')
    ? agent.secrets.map((s) => ({
        id: s.id,
        agent_id: s.agent_id,
        key: s.key,
        value: maskSecret(s.value),
        description: s.description,
      }))
    : [];
  return {
    id: agent.id,
    name: agent.name,
    agent_type: agent.agent_type,
    description: agent.description,
    system: agent.system,
    model: agent.model,
    llm_config: { ...agent.llm_config, parallel_tool_calls: agent.llm_config.parallel_tool_calls ?? false },
    model_settings: modelSettings(agent.llm_config),
    embedding: embeddingHandle(agent.embedding_config),
    embedding_config: agent.embedding_config,
    blocks,
    memory: {
      agent_type: agent.agent_type,
      blocks,
      file_blocks: include.has('agent.blocks')
        ? (agent.directories?.files ?? []).map((view) => ({
            ...fileBlock(view, limits.charLimit),
            last_accessed_at: iso(view.last_accessed_at),
          }))
        : [],
      prompt_template: null,
    },
    tools: include.has('agent.tools') ? agent.tools.map(toolShape) : [],
    tool_rules: agent.tool_rules,
    sources: include.has('agent.sources') ? (agent.directories?.folders ?? []).map(folderShape) : [],
    tags: include.has('agent.tags') ? agent.tags : [],
    metadata: agent.metadata,
    secrets,
    tool_exec_environment_variables: secrets,
    identities: include.has('agent.identities') ? (extra.identities ?? []).map(identityShape) : [],
    identity_ids: (extra.identities ?? []).map((i) => i.id),
    timezone: agent.timezone,
    last_stop_reason: agent.last_stop_reason,
    approval_timeout_seconds: agent.approval_timeout_seconds,
    max_files_open: limits.maxFilesOpen,
    per_file_view_window_char_limit: limits.charLimit,
    message_ids: extra.message_ids ?? [],
    pending_approval: include.has('agent.pending_approval') ? (extra.pending_approval ?? null) : null,
    created_at: iso(agent.created_at),
    updated_at: iso(agent.updated_at),
  };
}

/** Letta's `generate_otid_from_id`: the message's uuid with its last 7 bits replaced by the part index. */
export function otidFor(messageId: string, index: number): string {
  const uuid = messageId.slice(messageId.indexOf('-') + 1);
  const last = parseInt(uuid.slice(-2), 16);
  return uuid.slice(0, -2) + ((last & 0x80) | (index & 0x7f)).toString(16).padStart(2, '0');
}

/** What every Letta message of a stored message carries; `index` is the part's place in the message. */
type CommonFields = (index: number) => ReturnType<typeof commonFields>;

function commonFields(row: MessageRow, index: number) {
  return {
    id: row.id,
    date: lettaDate(row.created_at),
    name: row.name,
    otid: row.otid ?? otidFor(row.id, index),
    sender_id: row.sender_id,
    step_id: row.step_id,
    is_err: null,
    seq_id: null,
    run_id: row.run_id,
  };
}

/** One stored message → its Letta messages (an assistant reply may be reasoning, text and tool calls). */
export function lettaMessages(row: MessageRow): LettaMessage[] {
  const common: CommonFields = (index) => commonFields(row, index);
  switch (row.role) {
    case 'system':
      return [{ ...common(0), message_type: 'system_message', content: contentText(row.content) }];
    case 'user':
      return [{ ...common(0), message_type: 'user_message', content: contentText(row.content) }];
    case 'assistant':
      return assistantMessages(row, common);
    case 'approval':
      return [approvalResponseMessage(row, common)];
    case 'tool':
      return toolReturnMessages(row, common);
    default:
      return [];
  }
}

/** An assistant reply: its reasoning, its text, the calls it runs and those that wait for approval. */
function assistantMessages(row: MessageRow, common: CommonFields): LettaMessage[] {
  const parts: LettaMessage[] = [];
  if (row.reasoning) {
    parts.push({
      ...common(parts.length),
      message_type: 'reasoning_message',
      reasoning: row.reasoning,
      source: 'reasoner_model',
      signature: null,
    });
  }
  const text = contentText(row.content);
  if (text) parts.push({ ...common(parts.length), message_type: 'assistant_message', content: text });
  const calls = (row.tool_calls ?? []).map((c) => ({
    name: c.name,
    arguments: c.arguments,
    tool_call_id: c.id,
  }));
  // Calls that waited for approval are Letta's approval request; its otid is the message id.
  const asked = row.metadata?.approval_request as
    { tool_call_ids: string[]; elicitations?: string } | undefined;
  const waiting = asked?.tool_call_ids;
  const running = calls.filter((c) => !waiting?.includes(c.tool_call_id));
  const requested = calls.filter((c) => waiting?.includes(c.tool_call_id));
  if (running.length) {
    parts.push({
      ...common(parts.length),
      message_type: 'tool_call_message',
      tool_call: running[0],
      tool_calls: running,
    });
  }
  if (requested.length) {
    parts.push({
      ...common(parts.length),
      otid: row.id,
      message_type: 'approval_request_message',
      tool_call: requested[0],
      tool_calls: requested,
      // Kept as JSON text: the requested schemas' fields in the servers' order (activities/approvals.ts).
      ...(asked?.elicitations ? { elicitations: JSON.parse(asked.elicitations) as ShownElicitation[] } : {}),
    });
  }
  return parts;
}

function approvalResponseMessage(row: MessageRow, common: CommonFields): LettaMessage {
  const approvals = (row.approvals ?? []) as {
    type: string;
    tool_call_id: string;
    approve?: boolean;
    reason?: string | null;
  }[];
  const decision = approvals.find((a) => a.type === 'approval');
  return {
    ...common(0),
    message_type: 'approval_response_message',
    approvals,
    approve: decision?.approve ?? null,
    approval_request_id: decision?.tool_call_id ?? null,
    reason: decision?.reason ?? null,
  };
}

function toolReturnMessages(row: MessageRow, common: CommonFields): LettaMessage[] {
  const returns = (row.tool_returns ?? []).map((r) => ({
    type: 'tool' as const,
    // Letta's return parts where the return holds an image; the deprecated top-level field is text.
    tool_return: r.parts ?? unpackageFunctionResponse(r.func_response),
    status: r.status,
    tool_call_id: r.tool_call_id,
    stdout: r.stdout,
    stderr: r.stderr,
  }));
  if (returns.length === 0) return [];
  const { type: _type, ...first } = returns[0];
  const text = unpackageFunctionResponse(row.tool_returns![0].func_response);
  return [
    {
      ...common(0),
      message_type: 'tool_return_message',
      ...first,
      tool_return: text,
      tool_returns: returns,
    },
  ];
}

export function runShape(run: RunRow): Run {
  return {
    id: run.id,
    agent_id: run.agent_id,
    conversation_id: run.conversation_id,
    status: run.status,
    stop_reason: run.stop_reason,
    background: run.background,
    metadata: run.metadata ?? {},
    request_config: run.request_config,
    callback_url: run.callback_url,
    callback_sent_at: iso(run.callback_sent_at),
    callback_status_code: run.callback_status_code,
    callback_error: run.callback_error,
    created_at: iso(run.created_at),
    completed_at: iso(run.completed_at),
    total_duration_ns: run.completed_at
      ? (new Date(run.completed_at).getTime() - new Date(run.created_at).getTime()) * 1e6
      : null,
  };
}

export function usageShape(usage: Record<string, number> | null | undefined): UsageStatistics {
  return {
    message_type: 'usage_statistics',
    completion_tokens: usage?.completion_tokens ?? 0,
    prompt_tokens: usage?.prompt_tokens ?? 0,
    total_tokens: usage?.total_tokens ?? 0,
    step_count: usage?.step_count ?? 0,
    run_ids: null,
    cached_input_tokens: usage?.cached_input_tokens ?? 0,
    cache_write_tokens: null,
    reasoning_tokens: usage?.reasoning_tokens ?? 0,
  };
}

/** Letta's Conversation; `in_context_message_ids` only where Letta fills them in (retrieve). */
export function conversationShape(row: ConversationRow, messageIds: string[] = []): Conversation {
  return {
    id: row.id,
    agent_id: row.agent_id,
    summary: row.summary,
    in_context_message_ids: messageIds,
    isolated_block_ids: [],
    model: row.model,
    model_settings: row.model_settings,
    last_message_at: iso(row.last_message_at),
    created_by_id: null,
    last_updated_by_id: null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function passageShape(row: PassageRow): Passage {
  return {
    id: row.id,
    text: row.text,
    embedding: row.embedding,
    embedding_config: row.embedding_config,
    archive_id: row.archive_id,
    tags: row.tags,
    metadata: row.metadata ?? {},
    file_id: null,
    file_name: null,
    source_id: null,
    is_deleted: false,
    created_by_id: null,
    last_updated_by_id: null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function archiveShape(row: ArchiveRow): Archive {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    embedding_config: row.embedding_config,
    vector_db_provider: 'native',
    metadata: row.metadata ?? {},
    created_by_id: null,
    last_updated_by_id: null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** A step (one model call), from the reply that holds it (src/db/steps.ts). */
export function stepShape(row: MessageRow): Step {
  const meta = row.metadata ?? {};
  const usage = (meta.usage ?? {}) as Partial<Record<string, number>>;
  const handle = typeof meta.model === 'string' ? meta.model : null;
  const [provider, ...model] = handle?.split('/') ?? [];
  const prompt = usage.promptTokens ?? 0;
  const completion = usage.completionTokens ?? 0;
  const stopReason = meta.approval_request
    ? 'requires_approval'
    : meta.finish_reason === 'length'
      ? 'max_tokens_exceeded'
      : meta.finish_reason === 'stop'
        ? 'end_turn'
        : null;
  return {
    id: row.step_id!,
    agent_id: row.agent_id,
    run_id: row.run_id,
    model: model.length ? model.join('/') : null,
    model_handle: handle,
    provider_name: provider ?? null,
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    cached_input_tokens: usage.cachedInputTokens ?? 0,
    reasoning_tokens: usage.reasoningTokens ?? 0,
    stop_reason: stopReason,
    status: 'success',
    feedback: (meta.feedback as 'positive' | 'negative' | undefined) ?? null,
    tags: Array.isArray(meta.tags) ? (meta.tags as string[]) : [],
    error_type: null,
    error_data: null,
    created_at: iso(row.created_at),
  };
}

const SEARCHED_TYPES = new Set(['system_message', 'user_message', 'reasoning_message', 'assistant_message']);

/** A stored message as Letta's message search lists it: its text parts, with where they belong. */
export function messageSearchResults(row: MessageRow) {
  return lettaMessages(row)
    .filter((m) => SEARCHED_TYPES.has(m.message_type))
    .map((m) => ({
      message_id: row.id,
      message_type: m.message_type,
      ...('content' in m ? { content: m.content } : {}),
      ...('reasoning' in m ? { reasoning: m.reasoning } : {}),
      created_at: iso(row.created_at),
      agent_id: row.agent_id,
      conversation_id: row.conversation_id,
    }));
}

export function identityShape(row: IdentityRow): Identity {
  return {
    id: row.id,
    identifier_key: row.identifier_key,
    name: row.name,
    identity_type: row.identity_type as Identity['identity_type'],
    project_id: row.project_id,
    agent_ids: row.agent_ids,
    block_ids: row.block_ids,
    organization_id: null,
    properties: row.properties as Identity['properties'],
  };
}
