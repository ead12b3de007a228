/** Creating and changing agents: Letta's defaults and checks, then the repositories. */
import { checkApprovalWebhook } from './webhooks';
import { chosenEmbedding } from '../memory/embeddings';
import type { TurnSettings } from './settings';
import type { Database, Queryable } from '../db';
import * as repo from '../db/agents';
import * as blocks from '../db/blocks';
import { toolsWhere } from '../db/tools';
import { insertMessage, resetHistory } from '../db/messages';
import { listRuns } from '../db/runs';
import type { ConversationRef } from '../db/conversations';
import type { AgentRecord, LlmConfig, ToolRow } from '../db/rows';
import { conflict, DomainError, invalid } from '../errors';
import type { CreateAgent, ModelSettings, UpdateAgent } from '../schemas/agents';
import { newId } from '../ids';
import { unmaskValues } from '../masking';
import { parseHandle, providerEndpoint, providerProblem } from '../llm';
import type { ToolRule } from '../schemas/tool-rules';
import { uniqueRules } from '../../contracts/tool-rules';
import { BASE_TOOLS, MULTI_AGENT_TOOLS } from '../tools/builtin';
import {
  DEFAULT_AGENT_TYPE,
  DEFAULT_TEMPERATURE,
  defaultMaxOutputTokens,
  defaultContextWindow,
  LETTA_V1_SYSTEM_PROMPT,
} from './defaults';
import { compileSystemPrompt } from './system-prompt';
import { fileLimits, renderDirectories } from '../memory/file-views';
import { newBlock } from './blocks';

/** `model` handle or `llm_config` → the stored llm_config; a provider we cannot reach is a 400. */
function resolveLlmConfig(
  body: Pick<
    CreateAgent,
    'model' | 'llm_config' | 'context_window_limit' | 'parallel_tool_calls' | 'model_settings'
  >,
  config: TurnSettings,
): { handle: string; llmConfig: LlmConfig } {
  if (!body.model && !body.llm_config) throw invalid('Must specify either model or llm_config');
  const handle =
    body.model ??
    body.llm_config!.handle ??
    `${body.llm_config!.model_endpoint_type}/${body.llm_config!.model}`;
  const parsed = parseHandle(handle);
  if (!parsed)
    throw invalid(`Invalid model handle '${handle}': expected provider/model, e.g. openai/gpt-4o-mini`);
  const problem = providerProblem(parsed.provider, config);
  if (problem) throw invalid(problem);
  const given = body.llm_config ?? undefined;
  const llmConfig: LlmConfig = {
    model: parsed.model,
    model_endpoint_type: parsed.provider,
    model_endpoint: providerEndpoint(parsed.provider, config),
    context_window: body.context_window_limit ?? defaultContextWindow(parsed.provider, parsed.model),
    handle,
    temperature: DEFAULT_TEMPERATURE,
    max_tokens: defaultMaxOutputTokens(handle),
    // Unset unless given: it reads false in llm_config and true in model_settings, as on Letta.
    ...(body.parallel_tool_calls != null ? { parallel_tool_calls: body.parallel_tool_calls } : {}),
    strict: false,
    put_inner_thoughts_in_kwargs: false,
    enable_reasoner: false,
    ...given,
    ...(given && body.parallel_tool_calls !== undefined && body.parallel_tool_calls !== null
      ? { parallel_tool_calls: body.parallel_tool_calls }
      : {}),
  };
  return { handle, llmConfig: withModelSettings(llmConfig, body.model_settings) };
}

/** The llm_config with Letta's model_settings applied: they are what is sent to the model. */
export function withModelSettings(
  llmConfig: LlmConfig,
  settings: ModelSettings | null | undefined,
): LlmConfig {
  if (!settings) return llmConfig;
  const given = <T>(value: T | null | undefined, fallback: T) =>
    value === undefined || value === null ? fallback : value;
  return {
    ...llmConfig,
    temperature: given(settings.temperature, llmConfig.temperature),
    max_tokens: given(settings.max_output_tokens, llmConfig.max_tokens),
    parallel_tool_calls: given(settings.parallel_tool_calls, llmConfig.parallel_tool_calls),
    strict: given(settings.strict, llmConfig.strict),
    reasoning_effort: given(settings.reasoning?.reasoning_effort, llmConfig.reasoning_effort),
  };
}

/** Python's repr of a set of strings, as Letta's errors print the names they miss (sorted here). */
const pythonSet = (items: string[]) =>
  `{${[...new Set(items)]
    .sort()
    .map((item) => `'${item}'`)
    .join(', ')}}`;

/**
 * Tools named on an agent, which must all exist: Letta's 400 texts, which clients such as letta-code
 * match on ("tools not found by name", then `POST /v1/tools/add-base-tools` and a retry).
 */
async function resolveTools(db: Queryable, names: string[], ids: string[]): Promise<ToolRow[]> {
  const byName = names.length ? await toolsWhere(db, 'name', names) : [];
  const missingNames = names.filter((n) => !byName.some((t) => t.name === n));
  if (missingNames.length) throw invalid(`Tools not found by name: ${pythonSet(missingNames)}`);
  const byId = ids.length ? await toolsWhere(db, 'id', ids) : [];
  const missingIds = ids.filter((id) => !byId.some((t) => t.id === id));
  if (missingIds.length) throw invalid(`Tools not found by id:   ${pythonSet(missingIds)}`);
  const all = [...byName, ...byId];
  return all.filter((tool, i) => all.findIndex((t) => t.id === tool.id) === i);
}

/** Blocks shared by id must exist (Letta: 404), checked before the foreign key would refuse them. */
/**
 * The blocks an agent is to have: those of `ids` must exist (404), and no label may appear twice among
 * them and the `labels` of its new blocks (400: an agent's memory is addressed by label).
 */
async function checkBlocks(db: Queryable, ids: string[], labels: string[] = []): Promise<void> {
  const found = ids.length ? await blocks.blockLabels(db, ids) : [];
  const missing = ids.filter((id) => !found.some((block) => block.id === id));
  if (missing.length) throw new DomainError('not_found', `Block(s) not found: ${missing.join(', ')}`);
  const all = [...labels, ...found.map((block) => block.label)];
  const repeated = [...new Set(all.filter((label, i) => all.indexOf(label) !== i))];
  if (repeated.length)
    throw invalid(`Duplicate block labels: ${repeated.join(', ')}: each label may appear once`);
}

/** Letta adds a requires_approval rule for every attached tool that asks for one by default. */
function withApprovalRules(rules: ToolRule[], tools: ToolRow[]): ToolRule[] {
  const extra = tools
    .filter(
      (t) =>
        t.default_requires_approval &&
        !rules.some((r) => r.type === 'requires_approval' && r.tool_name === t.name),
    )
    .map((t): ToolRule => ({ type: 'requires_approval', tool_name: t.name }));
  return [...rules, ...extra];
}

export async function createAgent(
  db: Database,
  config: TurnSettings,
  body: CreateAgent,
): Promise<AgentRecord> {
  return db.transaction((tx) => insertNewAgent(tx, config, body));
}

/**
 * Creates an agent within the caller's transaction (an agent file's import makes several things at
 * once). `systemMessage: false` leaves its history empty, for a caller that brings a history of its own.
 */
export async function insertNewAgent(
  tx: Queryable,
  config: TurnSettings,
  body: CreateAgent,
  { systemMessage = true }: { systemMessage?: boolean } = {},
): Promise<AgentRecord> {
  const { handle, llmConfig } = resolveLlmConfig(body, config);
  checkApprovalWebhook(body.metadata, config);
  const agentId = newId('agent');
  await checkBlocks(
    tx,
    body.block_ids ?? [],
    (body.memory_blocks ?? []).map((block) => block.label),
  );
  const toolNames = [
    ...(body.include_base_tools === false ? [] : BASE_TOOLS),
    ...(body.include_multi_agent_tools ? MULTI_AGENT_TOOLS : []),
    ...(body.tools ?? []),
  ];
  const tools = await resolveTools(tx, [...new Set(toolNames)], body.tool_ids ?? []);
  let rules: ToolRule[] = uniqueRules(body.tool_rules ?? []);
  if (body.include_base_tool_rules === true) {
    const base = BASE_TOOLS.filter((name) => tools.some((t) => t.name === name));
    rules = [...rules, ...base.map((name): ToolRule => ({ type: 'continue_loop', tool_name: name }))];
  }
  await repo.insertAgent(tx, {
    id: agentId,
    name: body.name ?? `agent-${agentId.slice(6, 14)}`,
    agent_type: body.agent_type ?? DEFAULT_AGENT_TYPE,
    description: body.description ?? null,
    system: body.system ?? LETTA_V1_SYSTEM_PROMPT,
    model: handle,
    llm_config: llmConfig,
    embedding_config: chosenEmbedding(body, config),
    tool_rules: withApprovalRules(rules, tools),
    tags: body.tags ?? [],
    metadata: body.metadata ?? null,
    timezone: body.timezone ?? 'UTC',
    approval_timeout_seconds: body.approval_timeout_seconds ?? null,
    max_files_open: body.max_files_open ?? config.FILES_MAX_OPEN ?? null,
    per_file_view_window_char_limit:
      body.per_file_view_window_char_limit ?? config.FILE_VIEW_WINDOW_CHARS ?? null,
  });
  const blockIds: string[] = [];
  for (const block of body.memory_blocks ?? []) blockIds.push(await blocks.insertBlock(tx, newBlock(block)));
  await repo.attachBlocks(tx, agentId, [...blockIds, ...(body.block_ids ?? [])]);
  await repo.attachTools(
    tx,
    agentId,
    tools.map((t) => t.id),
  );
  await repo.replaceSecrets(tx, agentId, body.secrets ?? body.tool_exec_environment_variables ?? {});
  // Read one query at a time: a transaction's connection takes no concurrent queries.
  const agent: AgentRecord = {
    ...(await repo.getAgentRow(tx, agentId))!,
    blocks: await repo.agentBlocks(tx, agentId),
    tools: await repo.agentTools(tx, agentId),
    secrets: await repo.agentSecrets(tx, agentId),
  };
  if (systemMessage) {
    await insertMessage(tx, {
      id: newId('message'),
      agent_id: agentId,
      run_id: null,
      role: 'system',
      content: [{ type: 'text', text: compiledPrompt(agent) }],
    });
  }
  return agent;
}

/** What of an agent its system prompt is compiled from. */
type PromptSource = Pick<
  AgentRecord,
  | 'id'
  | 'system'
  | 'blocks'
  | 'tool_rules'
  | 'timezone'
  | 'created_at'
  | 'directories'
  | 'max_files_open'
  | 'per_file_view_window_char_limit'
  | 'llm_config'
>;

/** The agent's system prompt as the model gets it in a conversation (null: the default one). */
export function compiledPrompt(agent: PromptSource, conversationId: string | null = null): string {
  return compileSystemPrompt({
    conversationId,
    agentId: agent.id,
    system: agent.system,
    blocks: agent.blocks,
    toolRules: agent.tool_rules,
    timezone: agent.timezone,
    previousMessageCount: 0,
    agentCreatedAt: agent.created_at,
    directories: renderDirectories(agent.directories, fileLimits(agent)),
  });
}

export async function updateAgent(
  db: Database,
  config: TurnSettings,
  agent: AgentRecord,
  body: UpdateAgent,
): Promise<AgentRecord> {
  checkApprovalWebhook(body.metadata, config);
  // A new model handle keeps the agent's parallel_tool_calls; a new llm_config says its own, as its
  // other settings do (the top-level parallel_tool_calls still wins over both, as in Letta).
  const modelChange = body.llm_config
    ? resolveLlmConfig(body, config)
    : body.model
      ? resolveLlmConfig(
          { ...body, parallel_tool_calls: body.parallel_tool_calls ?? agent.llm_config.parallel_tool_calls },
          config,
        )
      : undefined;
  const toolRules = body.tool_rules ? uniqueRules(body.tool_rules) : undefined;
  await db.transaction(async (tx) => {
    const llmConfig =
      modelChange?.llmConfig ??
      (body.model_settings || (body.parallel_tool_calls !== undefined && body.parallel_tool_calls !== null)
        ? withModelSettings(
            {
              ...agent.llm_config,
              parallel_tool_calls: body.parallel_tool_calls ?? agent.llm_config.parallel_tool_calls,
            },
            body.model_settings,
          )
        : undefined);
    await repo.updateAgentRow(tx, agent.id, {
      name: body.name ?? undefined,
      description: body.description ?? undefined,
      system: body.system ?? undefined,
      model: modelChange?.handle,
      llm_config: llmConfig,
      tool_rules: toolRules,
      tags: body.tags ?? undefined,
      metadata: body.metadata ?? undefined,
      timezone: body.timezone ?? undefined,
      approval_timeout_seconds: body.approval_timeout_seconds,
      max_files_open: body.max_files_open ?? undefined,
      per_file_view_window_char_limit: body.per_file_view_window_char_limit ?? undefined,
    });
    if (body.tool_ids || body.tools) {
      const tools = await resolveTools(tx, body.tools ?? [], body.tool_ids ?? []);
      await repo.detachTools(tx, agent.id);
      await repo.attachTools(
        tx,
        agent.id,
        tools.map((t) => t.id),
      );
      // A newly attached tool brings its default_requires_approval along, as in Letta.
      const added = tools.filter((t) => !agent.tools.some((old) => old.id === t.id));
      const rules = withApprovalRules(toolRules ?? agent.tool_rules, added);
      await repo.updateAgentRow(tx, agent.id, { tool_rules: rules });
    }
    if (body.block_ids) {
      await checkBlocks(tx, body.block_ids);
      await repo.detachAllBlocks(tx, agent.id);
      await repo.attachBlocks(tx, agent.id, body.block_ids);
    }
    const secrets = body.secrets ?? body.tool_exec_environment_variables;
    const stored = Object.fromEntries(agent.secrets.map((s) => [s.key, s.value]));
    if (secrets) await repo.replaceSecrets(tx, agent.id, unmaskValues(secrets, stored));
  });
  return (await repo.getAgent(db, agent.id))!;
}

/** Attaches a tool; its default_requires_approval becomes a rule, as in Letta. */
export async function attachTool(db: Database, agent: AgentRecord, tool: ToolRow): Promise<void> {
  await db.transaction(async (tx) => {
    await repo.attachTools(tx, agent.id, [tool.id]);
    await repo.updateAgentRow(tx, agent.id, { tool_rules: withApprovalRules(agent.tool_rules, [tool]) });
  });
}

export async function detachTool(db: Database, agentId: string, toolId: string): Promise<void> {
  await repo.detachTools(db, agentId, [toolId]);
}

/** Empties a conversation's history but its system message; refused (409) while a run of it is active. */
export async function resetMessages(db: Database, ref: ConversationRef): Promise<void> {
  const active = await listRuns(db, { ...ref, active: true }, { limit: 1, order: 'desc' });
  if (active.length) throw conflict('Cannot reset the messages while a run of the conversation is active');
  await resetHistory(db, ref);
}
