/**
 * Exports an agent as Letta's agent file (`.af`, letta/services/agent_serialization_manager.py): the agent
 * with its blocks, tools, tool rules, model and embedding configs, system prompt and history, under
 * file-local ids (`agent-0`, `block-0`, `tool-0`, `message-0`, …), as Letta's own server writes it.
 */
import { fileLimits } from '../../memory/file-views';
import type { Queryable } from '../../db';
import { getConversation, type ConversationRef } from '../../db/conversations';
import { conversationContext, conversationMessages } from '../../db/messages';
import type { AgentRecord, MessageRow, ToolRow } from '../../db/rows';
import { notFound } from '../../errors';
import { summaryText } from '../../memory/context';
import type { ApprovalAnswer } from '../../approvals/answering';

export interface ExportOptions {
  /** Exports this conversation's history instead of the agent's own. */
  conversationId?: string | null;
  /** Leaves every message out. */
  scrubMessages?: boolean;
  /** Letta's skills, passed through (POST /v1/agents/{id}/export). */
  skills?: Record<string, unknown>[];
}

/** Letta's file-local ids: `<prefix>-<n>`, counted per prefix in the order things are met. */
function fileIds() {
  const counters = new Map<string, number>();
  const ids = new Map<string, string>();
  return (prefix: string, dbId: string): string => {
    let id = ids.get(dbId);
    if (!id) {
      const n = counters.get(prefix) ?? 0;
      counters.set(prefix, n + 1);
      ids.set(dbId, (id = `${prefix}-${n}`));
    }
    return id;
  };
}

const iso = (date: Date) => new Date(date).toISOString();

const textParts = (content: unknown) => {
  if (typeof content === 'string') return content ? [{ type: 'text', text: content, signature: null }] : [];
  if (!Array.isArray(content)) return [];
  return content
    .filter((part) => part && typeof part === 'object' && typeof part.text === 'string')
    .map((part) => ({ type: 'text', text: String(part.text), signature: null }));
};

/** The bare model name of a handle (`openai/gpt-4o-mini` → `gpt-4o-mini`), as Letta's `model` field. */
const modelName = (row: MessageRow) => {
  const handle = row.metadata?.model;
  return typeof handle === 'string' ? handle.slice(handle.indexOf('/') + 1) : null;
};

/** An approval's answer as Letta keeps it: a decision, or a client's tool return. */
const approvalSchema = (answer: ApprovalAnswer) =>
  answer.type === 'approval'
    ? {
        type: 'approval',
        tool_call_id: answer.tool_call_id,
        approve: answer.approve,
        reason: answer.reason ?? null,
      }
    : {
        type: 'tool',
        tool_call_id: answer.tool_call_id,
        status: answer.status,
        stdout: answer.stdout ?? null,
        stderr: answer.stderr ?? null,
        func_response: answer.tool_return,
      };

/** One stored message as Letta's MessageSchema. */
function messageSchema(row: MessageRow, id: string, agentFileId: string, fileIdOf: (dbId: string) => string) {
  const base = {
    type: 'message',
    role: row.role as string,
    content: textParts(row.content) as Record<string, unknown>[],
    name: row.name,
    otid: row.otid,
    sender_id: row.sender_id,
    batch_item_id: null,
    group_id: null,
    id,
    model: modelName(row),
    agent_id: agentFileId,
    tool_calls: null as unknown[] | null,
    tool_call_id: null as string | null,
    tool_returns: [] as unknown[],
    created_at: iso(row.created_at),
    approve: null as boolean | null,
    approval_request_id: null as string | null,
    denial_reason: null as string | null,
    approvals: null as unknown[] | null,
  };
  switch (row.role) {
    case 'assistant': {
      // Letta keeps a call that waited for approval on a message of the role `approval`.
      if (row.metadata?.approval_request) base.role = 'approval';
      if (row.reasoning)
        base.content.unshift({
          type: 'reasoning',
          is_native: true,
          reasoning: row.reasoning,
          signature: null,
        });
      if (row.tool_calls?.length)
        base.tool_calls = row.tool_calls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
        }));
      return base;
    }
    case 'tool': {
      const returns = row.tool_returns ?? [];
      base.content = returns.length
        ? [{ type: 'text', text: returns[0].func_response, signature: null }]
        : [];
      base.tool_call_id = returns[0]?.tool_call_id ?? null;
      base.tool_returns = returns.map((r) => ({
        tool_call_id: r.tool_call_id,
        status: r.status,
        stdout: r.stdout,
        stderr: r.stderr,
        // Letta's list of return parts where the return holds an image.
        func_response: r.parts ?? r.func_response,
      }));
      return base;
    }
    case 'approval': {
      base.approvals = ((row.approvals ?? []) as ApprovalAnswer[]).map(approvalSchema);
      const request = row.metadata?.request_message_id;
      if (typeof request === 'string') base.approval_request_id = fileIdOf(request);
      return base;
    }
    default:
      return base;
  }
}

/** Letta's ToolSchema of a stored tool. */
const toolSchema = (tool: ToolRow, id: string) => ({
  id,
  tool_type: tool.tool_type,
  description: tool.description,
  source_type: tool.source_type,
  name: tool.name,
  tags: tool.tags,
  source_code: tool.source_code,
  json_schema: tool.json_schema,
  args_json_schema: tool.args_json_schema,
  return_char_limit: tool.return_char_limit,
  pip_requirements: tool.pip_requirements,
  npm_requirements: tool.npm_requirements,
  default_requires_approval: tool.default_requires_approval,
  enable_parallel_execution: tool.enable_parallel_execution,
  created_by_id: null,
  last_updated_by_id: null,
  metadata_: tool.metadata ?? {},
});

/** The agent as Letta's agent file: the agent, its blocks, tools and (unless scrubbed) history. */
export async function exportAgentFile(db: Queryable, agent: AgentRecord, options: ExportOptions = {}) {
  const conversationId = options.conversationId ?? null;
  if (conversationId) {
    const conversation = await getConversation(db, conversationId);
    if (!conversation || conversation.agent_id !== agent.id) throw notFound(`Conversation ${conversationId}`);
  }
  const ref = { agentId: agent.id, conversationId };
  const idOf = fileIds();
  const ids: AgentFileIds = {
    agent: idOf('agent', agent.id),
    tools: agent.tools.map((tool) => idOf('tool', tool.id)),
    blocks: agent.blocks.map((block) => idOf('block', block.id)),
  };
  const history = options.scrubMessages
    ? { messages: [], inContext: [] }
    : await fileHistory(db, ref, ids.agent, idOf);
  const blocks = agent.blocks
    .map((block) => blockSchema(block, idOf('block', block.id)))
    .sort((a, b) => a.label.localeCompare(b.label));
  const tools = [...agent.tools]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((tool) => toolSchema(tool, idOf('tool', tool.id)));
  return {
    agents: [agentSchema(agent, ids, history)],
    groups: [],
    blocks,
    files: [],
    sources: [],
    tools,
    mcp_servers: [],
    skills: options.skills ?? [],
    metadata: { revision_id: 'letta-temporal' },
    created_at: new Date().toISOString(),
  };
}

type FileIds = ReturnType<typeof fileIds>;

/** The agent's ids in the file: its own, its tools' and its blocks', given before its messages'. */
interface AgentFileIds {
  agent: string;
  tools: string[];
  blocks: string[];
}

/** A history as the file holds it: its messages, and the ids of those in context. */
interface FileHistory {
  messages: ReturnType<typeof messageSchema>[];
  inContext: string[];
}

/** The conversation's history under the file's ids, a compaction's summary where it stands in context. */
async function fileHistory(
  db: Queryable,
  ref: ConversationRef,
  agentFileId: string,
  idOf: FileIds,
): Promise<FileHistory> {
  const messages: ReturnType<typeof messageSchema>[] = [];
  const inContext: string[] = [];
  const rows = await conversationMessages(db, ref);
  // A conversation's history has no system message of its own: the agent's is its first.
  if (!rows.some((row) => row.role === 'system')) {
    const [system] = (await conversationMessages(db, { agentId: ref.agentId, conversationId: null })).filter(
      (row) => row.role === 'system',
    );
    if (system) rows.unshift(system);
  }
  const { summary, transcript } = await conversationContext(db, ref);
  const contextIds = new Set(transcript.map((row) => row.id));
  const firstInContext = rows.findIndex((row) => row.role !== 'system' && contextIds.has(row.id));
  for (const [i, row] of rows.entries()) {
    // What a compaction took out of the context is summarized there: Letta keeps such a summary as a
    // user message in context, before the rest.
    if (summary && i === firstInContext) {
      const id = idOf('message', `summary:${ref.agentId}`);
      messages.push({
        ...messageSchema({ ...row, role: 'user', content: summaryText(summary) }, id, agentFileId, (dbId) =>
          idOf('message', dbId),
        ),
        name: null,
        model: null,
        otid: null,
        sender_id: null,
      });
      inContext.push(id);
    }
    const id = idOf('message', row.id);
    messages.push(messageSchema(row, id, agentFileId, (dbId) => idOf('message', dbId)));
    const system = row.role === 'system' && i === 0;
    if (system || (firstInContext >= 0 && i >= firstInContext)) inContext.push(id);
  }
  return { messages, inContext };
}

/** Letta's AgentSchema of the agent, under the file's ids. */
function agentSchema(agent: AgentRecord, ids: AgentFileIds, history: FileHistory) {
  // Secrets travel by name only: their values stay here (Letta exports them empty).
  const secretKeys = Object.fromEntries(agent.secrets.map((secret) => [secret.key, '']));
  return {
    name: agent.name,
    memory_blocks: [],
    tools: [],
    tool_ids: ids.tools,
    source_ids: [],
    block_ids: ids.blocks,
    tool_rules: agent.tool_rules,
    tags: agent.tags,
    system: agent.system,
    agent_type: agent.agent_type,
    llm_config: agent.llm_config,
    embedding_config: agent.embedding_config,
    initial_message_sequence: null,
    include_base_tools: false,
    include_multi_agent_tools: false,
    include_base_tool_rules: false,
    include_default_source: false,
    description: agent.description,
    metadata: agent.metadata,
    model: null,
    embedding: null,
    context_window_limit: null,
    embedding_chunk_size: null,
    max_tokens: null,
    max_reasoning_tokens: null,
    enable_reasoner: false,
    reasoning: null,
    from_template: null,
    template: false,
    project: null,
    tool_exec_environment_variables: secretKeys,
    secrets: agent.secrets.length ? secretKeys : null,
    memory_variables: null,
    project_id: null,
    template_id: null,
    base_template_id: null,
    identity_ids: null,
    message_buffer_autoclear: false,
    enable_sleeptime: false,
    response_format: null,
    timezone: agent.timezone,
    max_files_open: fileLimits(agent).maxFilesOpen,
    per_file_view_window_char_limit: fileLimits(agent).charLimit,
    hidden: null,
    id: ids.agent,
    in_context_message_ids: history.inContext,
    messages: history.messages,
    files_agents: [],
    group_ids: [],
  };
}

/** Letta's BlockSchema of a block. */
const blockSchema = (block: AgentRecord['blocks'][number], id: string) => ({
  value: block.value,
  limit: block.char_limit,
  project_id: null,
  template_name: null,
  is_template: false,
  template_id: null,
  base_template_id: null,
  deployment_id: null,
  entity_id: null,
  preserve_on_migration: false,
  label: block.label,
  read_only: block.read_only,
  description: block.description,
  metadata: block.metadata ?? {},
  hidden: block.hidden,
  id,
});
