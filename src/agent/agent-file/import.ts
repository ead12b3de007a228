/**
 * Letta's agent files (`.af`, letta/services/agent_serialization_manager.py): an agent with its blocks,
 * tools, tool rules, model and embedding configs, system prompt and history, under file-local ids
 * (`agent-0`, `block-0`, `tool-0`, `message-0`, …), exported from here and imported here, including
 * files Letta's own server wrote.
 *
 * An import is one transaction: every custom tool's schema is checked first, then the tools, blocks,
 * agents and messages are stored together, or nothing is. The history keeps this server's invariant
 * (src/memory/history-invariant.ts: each assistant message with tool calls is followed by exactly their
 * returns): a file's history that breaks it is repaired as it is read (a return of no waiting call is
 * left out, a call without a return gets an error return, as migration 0010 gave them), never stored
 * broken. Groups, sources, files, MCP servers and skills are not imported; nor are tools this server
 * does not run (Composio's, LangChain's) and `send_message` (NOT_IMPORTED), whose tool rules are left
 * out with them.
 */
import type { TurnSettings } from '../settings';
import type { Database, Queryable } from '../../db';
import { insertMessage, setContextWindow } from '../../db/messages';
import { insertBlock } from '../../db/blocks';
import { getToolByName } from '../../db/tools';
import type { AgentRecord, MessageRole, MessageRow, StoredToolReturn, ToolRow } from '../../db/rows';
import { DomainError, invalid } from '../../errors';
import { newId } from '../../ids';
import type { ToolCall } from '../../llm/types';
import { CreateAgentSchema, type CreateAgent } from '../../schemas/agents';
import type { ToolRule } from '../../schemas/tool-rules';
import { ToolCreateSchema } from '../../schemas/tools';
import type { AgentFile, FileAgent, FileMessage, FileTool, ImportOptions } from '../../schemas/agent-file';
import { prepareTool, storeTool, type PreparedTool } from '../../tools/registry';
import type { PythonSchemaOptions } from '../../tools/python-schema';
import { MCP_TOOL_TYPE } from '../../mcp/tool-sync';
import { insertNewAgent, compiledPrompt } from '../agents';
import { newBlock } from '../blocks';
import { contentText } from '../../memory/context';
import { clientReturn, type ApprovalAnswer } from '../../approvals/answering';
import type { ReturnPart } from '../../returns/return-parts';
import { embeddingConfigForHandle } from '../../memory/embeddings';
import { packageFunctionResponse, stringifyReturn } from '../../returns/tool-returns';

const failed = (reason: string) => invalid(`Import failed: ${reason}`);

/**
 * Letta's built-ins an imported agent does not get: `send_message` is how Letta's older agent types
 * (memgpt_agent, memgpt_v2_agent) speak, and their loop shows its argument as the reply; here every
 * agent runs as a letta_v1_agent, which replies in text, so the tool would only turn replies into calls.
 */
const NOT_IMPORTED = new Set(['send_message']);

export interface ImportResult {
  agentIds: string[];
  /** Tools of the file left out: send_message, MCP and other external tools. */
  skippedTools: string[];
  /** What was repaired in the histories to keep the invariant. */
  repairs: string[];
}

/** A message to store, before it has its agent: `fileIds` are the file's messages it stands for. */
interface Draft {
  fileIds: string[];
  role: MessageRole;
  content?: unknown;
  reasoning?: string | null;
  tool_calls?: ToolCall[] | null;
  tool_returns?: StoredToolReturn[] | null;
  approvals?: ApprovalAnswer[] | null;
  name?: string | null;
  otid?: string | null;
  sender_id?: string | null;
  metadata?: Record<string, unknown> | null;
  created_at?: Date | null;
  /** An approval's request: the index of the draft whose calls it answers. */
  requestIndex?: number;
}

/** A tool return's text as the model reads it: strings as they are, anything else as JSON. */
const returnText = (value: unknown, fallback: string) =>
  value === undefined || value === null ? fallback : stringifyReturn(value);

/** Whether a return is Letta's list of return parts (text and images). */
const isPartList = (value: unknown): value is { type: string; text?: string }[] =>
  Array.isArray(value) &&
  value.every((part) => part && typeof part === 'object' && typeof part.type === 'string');

/** A stored return of a file's: Letta's list of return parts keeps its images, anything else is text. */
function importedReturn(value: unknown, fallback: string): { func_response: string; parts?: ReturnPart[] } {
  if (!isPartList(value)) return { func_response: returnText(value, fallback) };
  const { text, parts } = clientReturn(value);
  return { func_response: text, ...(parts ? { parts } : {}) };
}

function parts(content: FileMessage['content']) {
  const list = typeof content === 'string' ? [{ type: 'text', text: content }] : (content ?? []);
  const texts = list
    .filter((part) => part.type === 'text' && typeof part.text === 'string')
    .map((part) => ({ type: 'text', text: part.text as string }));
  const reasoning = list
    .filter((part) => part.type === 'reasoning' && typeof part.reasoning === 'string')
    .map((part) => part.reasoning as string)
    .join('\n');
  return { texts, reasoning: reasoning || null };
}

const dateOf = (text: string | null | undefined) => (text ? new Date(text) : null);

/** The calls of the last assistant message that still wait for their returns. */
interface PendingCalls {
  calls: ToolCall[];
  returns: Map<string, StoredToolReturn>;
  fromClients: Map<string, StoredToolReturn>;
  fileIds: string[];
  createdAt: Date | null;
  answered: boolean;
}

/** A history being read: the messages to store so far, the repairs made, the calls waiting. */
interface HistoryReading {
  drafts: Draft[];
  repairs: string[];
  pending: PendingCalls | null;
}

/**
 * A file's history as messages to store, in order, keeping the invariant: tool messages answering one
 * assistant message become one message with all its returns; an approval stands between the calls and
 * their returns only; a return of no waiting call is left out, a call left without a return gets an
 * error return (or the client's return its approval carried).
 */
export function historyOf(messages: FileMessage[]): { drafts: Draft[]; repairs: string[] } {
  const reading: HistoryReading = { drafts: [], repairs: [], pending: null };
  for (const message of messages) {
    const createdAt = dateOf(message.created_at);
    if (message.role === 'tool' || message.role === 'function') readToolReturns(reading, message, createdAt);
    else if (message.role === 'approval' && !message.tool_calls?.length)
      readApproval(reading, message, createdAt);
    else readMessage(reading, message, message.role === 'approval' ? 'assistant' : message.role, createdAt);
  }
  flushPending(reading);
  return { drafts: reading.drafts, repairs: reading.repairs };
}

/** The waiting calls' returns as one tool message; a call without one gets its client's, or an error. */
function flushPending(reading: HistoryReading): void {
  const { pending, repairs } = reading;
  if (!pending) return;
  const { calls, returns, fromClients } = pending;
  const missing = calls.filter((call) => !returns.has(call.id));
  for (const call of missing) {
    const fromClient = fromClients.get(call.id);
    if (!fromClient)
      repairs.push(`tool call ${call.id} (${call.name}) had no return: it was given an error return`);
    returns.set(
      call.id,
      fromClient ?? {
        tool_call_id: call.id,
        status: 'error',
        func_response: packageFunctionResponse(
          false,
          `Error executing function ${call.name}: the call did not complete`,
        ),
        stdout: null,
        stderr: null,
      },
    );
  }
  reading.drafts.push({
    fileIds: pending.fileIds,
    role: 'tool',
    name: calls[0].name,
    tool_returns: calls.map((call) => returns.get(call.id)!),
    created_at: pending.createdAt,
  });
  reading.pending = null;
}

/** A tool message: each return of a waiting call is kept, any other left out. */
function readToolReturns(reading: HistoryReading, message: FileMessage, createdAt: Date | null): void {
  const { pending } = reading;
  const given = message.tool_returns?.length
    ? message.tool_returns
    : [{ tool_call_id: message.tool_call_id, status: 'success' as const, func_response: undefined }];
  let used = false;
  for (const ret of given) {
    const id = ret.tool_call_id ?? message.tool_call_id;
    const waiting = pending?.calls.some((call) => call.id === id) && !pending.returns.has(id!);
    if (!id || !pending || !waiting) {
      reading.repairs.push(
        `message ${message.id} returns tool call ${id ?? '(none)'}, which no call waits for: left out`,
      );
      continue;
    }
    used = true;
    pending.returns.set(id, {
      tool_call_id: id,
      status: ret.status ?? 'success',
      ...importedReturn(ret.func_response, contentText(message.content) || 'None'),
      stdout: ret.stdout ?? null,
      stderr: ret.stderr ?? null,
    });
  }
  if (used && pending) {
    pending.fileIds.push(message.id);
    pending.createdAt ??= createdAt;
    if (pending.returns.size === pending.calls.length) flushPending(reading);
  }
}

/** An approval answers the waiting calls before any has returned; any other is left out. */
function readApproval(reading: HistoryReading, message: FileMessage, createdAt: Date | null): void {
  const request = reading.drafts.length - 1;
  const current = reading.pending;
  if (!current || current.answered || current.returns.size > 0) {
    reading.repairs.push(`approval ${message.id} answers no waiting tool call: left out`);
    return;
  }
  const items = message.approvals?.length
    ? message.approvals
    : typeof message.approve === 'boolean'
      ? current.calls.map((call) => ({
          tool_call_id: call.id,
          approve: message.approve,
          reason: message.denial_reason,
        }))
      : [];
  const answers: ApprovalAnswer[] = items
    .filter((item) => current.calls.some((call) => call.id === item.tool_call_id))
    .map((item) => approvalAnswerOf(current, item));
  if (!answers.length) {
    reading.repairs.push(`approval ${message.id} answers none of the waiting tool calls: left out`);
    return;
  }
  current.answered = true;
  reading.drafts.push({
    fileIds: [message.id],
    role: 'approval',
    approvals: answers,
    created_at: createdAt,
    requestIndex: request,
  });
}

type FileApprovalItem =
  | NonNullable<FileMessage['approvals']>[number]
  | { tool_call_id: string; approve?: boolean; reason?: string | null };

/** One item of an approval: a decision, or a client's return (kept for its call as well). */
function approvalAnswerOf(current: PendingCalls, item: FileApprovalItem): ApprovalAnswer {
  if ('approve' in item && typeof item.approve === 'boolean')
    return {
      type: 'approval',
      tool_call_id: item.tool_call_id,
      approve: item.approve,
      reason: item.reason ?? null,
    };
  const given =
    ('tool_return' in item ? item.tool_return : undefined) ??
    ('func_response' in item ? item.func_response : undefined);
  const returned = importedReturn(given, 'None');
  const status = ('status' in item && item.status) || 'success';
  const stdout = ('stdout' in item && item.stdout) || null;
  const stderr = ('stderr' in item && item.stderr) || null;
  current.fromClients.set(item.tool_call_id, {
    tool_call_id: item.tool_call_id,
    status,
    ...returned,
    stdout,
    stderr,
  });
  const tool_return = isPartList(given) ? given : returned.func_response;
  return { type: 'tool', tool_call_id: item.tool_call_id, tool_return, status, stdout, stderr };
}

/** Any other message ends the waiting calls; an assistant's calls wait from it on. */
function readMessage(
  reading: HistoryReading,
  message: FileMessage,
  role: MessageRole,
  createdAt: Date | null,
): void {
  flushPending(reading);
  const { texts, reasoning } = parts(message.content);
  const calls: ToolCall[] = (message.tool_calls ?? []).map((call) => ({
    id: call.id,
    name: call.function.name,
    arguments: call.function.arguments,
  }));
  if (new Set(calls.map((call) => call.id)).size !== calls.length)
    throw failed(`message ${message.id} makes two tool calls of one id`);
  reading.drafts.push({
    fileIds: [message.id],
    role,
    content: role === 'assistant' && !texts.length ? null : texts,
    reasoning: role === 'assistant' ? reasoning : null,
    tool_calls: calls.length ? calls : null,
    name: message.name ?? null,
    otid: message.otid ?? null,
    sender_id: message.sender_id ?? null,
    // A call that waited for approval (Letta's approval request) is listed as one.
    metadata:
      message.role === 'approval' && calls.length
        ? { approval_request: { tool_call_ids: calls.map((call) => call.id) } }
        : null,
    created_at: createdAt,
  });
  if (calls.length && role === 'assistant')
    reading.pending = {
      calls,
      returns: new Map(),
      fromClients: new Map(),
      fileIds: [],
      createdAt: null,
      answered: false,
    };
}

/** The references inside the file must resolve, and no id may be given twice (Letta's checks). */
function checkReferences(file: AgentFile): void {
  const seen = new Set<string>();
  for (const [kind, items] of [
    ['agents', file.agents],
    ['blocks', file.blocks],
    ['tools', file.tools],
  ] as const) {
    for (const item of items) {
      if (seen.has(item.id)) throw failed(`the id ${item.id} is given twice (${kind})`);
      seen.add(item.id);
    }
  }
  const blocks = new Set(file.blocks.map((block) => block.id));
  const tools = new Set(file.tools.map((tool) => tool.id));
  for (const agent of file.agents) {
    for (const id of agent.block_ids ?? [])
      if (!blocks.has(id)) throw failed(`agent ${agent.id} names block ${id}, which the file does not hold`);
    for (const id of agent.tool_ids ?? [])
      if (!tools.has(id)) throw failed(`agent ${agent.id} names tool ${id}, which the file does not hold`);
    const messages = new Set<string>();
    for (const message of agent.messages) {
      if (messages.has(message.id)) throw failed(`the message id ${message.id} is given twice`);
      messages.add(message.id);
    }
    for (const id of agent.in_context_message_ids)
      if (!messages.has(id))
        throw failed(`agent ${agent.id} has message ${id} in context, which the file does not hold`);
  }
}

const isCustom = (tool: FileTool) =>
  (tool.tool_type ?? 'custom') === 'custom' &&
  typeof tool.source_code === 'string' &&
  tool.source_code !== '';

/** A custom tool of the file as this server's ToolCreate, checked as `POST /v1/tools` checks one. */
async function prepareFileTool(tool: FileTool, python: PythonSchemaOptions): Promise<PreparedTool> {
  const body = ToolCreateSchema.safeParse({
    source_code: tool.source_code,
    // Letta writes `json` for a tool whose schema was given: its source is still Python.
    source_type: tool.source_type === 'typescript' ? 'typescript' : 'python',
    description: tool.description,
    tags: tool.tags,
    json_schema: tool.json_schema,
    args_json_schema: tool.json_schema ? null : tool.args_json_schema,
    return_char_limit:
      tool.return_char_limit === null || tool.return_char_limit === undefined
        ? undefined
        : Math.min(Math.max(tool.return_char_limit, 1), 1_000_000),
    pip_requirements: tool.pip_requirements,
    npm_requirements: tool.npm_requirements,
    default_requires_approval: tool.default_requires_approval,
    enable_parallel_execution: tool.enable_parallel_execution ?? undefined,
    metadata_: tool.metadata_,
  });
  if (!body.success)
    throw failed(
      `tool ${tool.id} (${tool.name}): ${body.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  try {
    return await prepareTool(body.data, python);
  } catch (error) {
    if (error instanceof DomainError) throw failed(`tool ${tool.id} (${tool.name}): ${error.message}`);
    throw error;
  }
}

/** The agent's rules without those of tools it does not get. */
function keptRules(rules: ToolRule[], skipped: Set<string>): ToolRule[] {
  return rules
    .filter((rule) => !skipped.has(rule.tool_name))
    .map((rule) =>
      'children' in rule ? { ...rule, children: rule.children.filter((c) => !skipped.has(c)) } : rule,
    );
}

/** What `insertNewAgent` is to make of one agent of the file. */
function agentBody(
  agent: FileAgent,
  index: number,
  options: ImportOptions,
  config: TurnSettings,
  ids: { blocks: string[]; tools: string[] },
  rules: ToolRule[],
): CreateAgent {
  const name =
    options.name ?? (agent.name ? `${agent.name}${options.appendCopySuffix ? '_copy' : ''}` : null);
  const givenSecrets = agent.secrets ?? agent.tool_exec_environment_variables ?? {};
  const secrets = Object.fromEntries(
    Object.entries(givenSecrets).map(([key, value]) => [key, options.secrets?.[key] ?? value ?? '']),
  );
  // The endpoint is this server's for the provider, never the file's.
  const { model_endpoint: _endpoint, ...llmConfig } = agent.llm_config ?? {};
  const body = CreateAgentSchema.safeParse({
    name,
    agent_type: agent.agent_type,
    description: agent.description,
    system: agent.system,
    block_ids: ids.blocks,
    tool_ids: ids.tools,
    include_base_tools: false,
    tool_rules: rules,
    tags: agent.tags,
    metadata: agent.metadata,
    model: options.model ?? (agent.llm_config ? null : agent.model),
    llm_config: options.model || !agent.llm_config ? null : llmConfig,
    embedding_config: options.embedding
      ? embeddingConfigForHandle(options.embedding, config)
      : (agent.embedding_config ?? null),
    embedding: options.embedding || agent.embedding_config ? null : agent.embedding,
    secrets,
    timezone: agent.timezone,
    // Letta's file controls, taken where this server's CreateAgent has them.
    max_files_open: agent.max_files_open,
    per_file_view_window_char_limit: agent.per_file_view_window_char_limit,
  });
  if (!body.success)
    throw failed(
      `agent ${agent.id ?? index}: ${body.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return body.data;
}

/**
 * Imports the agents of a Letta agent file, all or nothing; answers their new ids. `python` reads
 * custom tools' source where their schema must be derived.
 */
export async function importAgentFile(
  db: Database,
  config: TurnSettings,
  file: AgentFile,
  options: ImportOptions,
  python: PythonSchemaOptions,
): Promise<ImportResult> {
  if (!file.agents.length) throw failed('the file holds no agent');
  checkReferences(file);
  const histories = file.agents.map((agent) =>
    options.stripMessages ? { drafts: [], repairs: [] } : historyOf(agent.messages),
  );
  // Schemas are derived (Python may be run) before the transaction opens.
  const prepared = new Map<string, PreparedTool>();
  for (const tool of file.tools.filter(isCustom)) prepared.set(tool.id, await prepareFileTool(tool, python));

  return db.transaction(async (tx) => {
    const tools = new Map<string, ToolRow>();
    const skippedTools: string[] = [];
    for (const tool of file.tools) {
      const ours = prepared.get(tool.id);
      const existing = await getToolByName(tx, ours?.name ?? tool.name);
      if (ours && (!existing || existing.tool_type === 'custom')) {
        tools.set(tool.id, await storeTool(tx, ours, options.overrideExistingTools ? 'replace' : 'keep'));
      } else if (
        existing &&
        existing.tool_type !== 'custom' &&
        existing.tool_type !== MCP_TOOL_TYPE &&
        !NOT_IMPORTED.has(existing.name)
      ) {
        // One of Letta's built-ins that this server has too (or a custom tool named as one: ours wins).
        tools.set(tool.id, existing);
      } else skippedTools.push(tool.name);
    }
    const skipped = new Set(skippedTools);

    const blocks = new Map<string, string>();
    for (const block of file.blocks) {
      const fields = newBlock({
        label: block.label,
        value: block.value,
        limit: block.limit,
        description: block.description,
        read_only: block.read_only,
        hidden: block.hidden,
        metadata: block.metadata,
        tags: block.tags,
      });
      blocks.set(block.id, await insertBlock(tx, fields));
    }

    const agentIds: string[] = [];
    for (const [index, agent] of file.agents.entries()) {
      const { drafts } = histories[index];
      const toolIds = [
        ...new Set((agent.tool_ids ?? []).flatMap((id) => (tools.has(id) ? [tools.get(id)!.id] : []))),
      ];
      const body = agentBody(
        agent,
        index,
        options,
        config,
        { blocks: (agent.block_ids ?? []).map((id) => blocks.get(id)!), tools: toolIds },
        keptRules(agent.tool_rules ?? [], skipped),
      );
      const created = await insertNewAgent(tx, config, body, { systemMessage: drafts.length === 0 });
      await storeHistory(tx, created, drafts, agent.in_context_message_ids);
      agentIds.push(created.id);
    }
    return { agentIds, skippedTools, repairs: histories.flatMap((h) => h.repairs) };
  });
}

/** Stores an agent's imported history, in order, and where its context window starts. */
async function storeHistory(tx: Queryable, agent: AgentRecord, history: Draft[], inContext: string[]) {
  if (!history.length) return;
  // The history starts with a system message, as every agent's does.
  const system: Draft[] =
    history[0].role === 'system'
      ? []
      : [{ fileIds: [], role: 'system', content: [{ type: 'text', text: compiledPrompt(agent) }] }];
  const drafts = [...system, ...history];
  const stored: MessageRow[] = [];
  for (const { fileIds: _fileIds, requestIndex, ...draft } of drafts) {
    const request = requestIndex === undefined ? undefined : stored[requestIndex + system.length];
    stored.push(
      await insertMessage(tx, {
        ...draft,
        id: newId('message'),
        agent_id: agent.id,
        run_id: null,
        metadata: request ? { ...draft.metadata, request_message_id: request.id } : draft.metadata,
      }),
    );
  }
  // Letta's context is the messages it names: here, every message from the first of them on.
  if (!inContext.length) return;
  const named = new Set(inContext);
  const inside = (draft: Draft) => draft.role !== 'system' && draft.fileIds.some((id) => named.has(id));
  const first = drafts.findIndex(inside);
  const start = first >= 0 ? first : drafts.length;
  if (drafts.slice(0, start).some((draft) => draft.role !== 'system')) {
    const startSeq = start < stored.length ? stored[start].seq : stored[stored.length - 1].seq + 1;
    await setContextWindow(tx, { agentId: agent.id, conversationId: null }, startSeq, null);
  }
}
