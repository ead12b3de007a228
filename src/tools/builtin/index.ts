/**
 * Letta's built-in tools, trusted code of ours run in-process: the core-memory tools,
 * conversation_search and the file tools (files.ts) against the database, fetch_webpage over HTTP.
 * Their schemas are Letta 0.16.8's, as its schema generator makes them (schemas.json, written by
 * scripts/letta-builtin-schemas.py).
 */
import schemas from './schemas.json';
import type { Database, Queryable } from '../../db';
import { agentLockOnly, agentSecrets, attachBlocks, lockAgentBlocks } from '../../db/agents';
import { detachBlock, insertBlock, updateBlock } from '../../db/blocks';
import type { BlockValueWrite } from '../../db/tool-executions';
import { toolsWhere, upsertBuiltinTool } from '../../db/tools';
import type { AgentRow, MemoryBlock } from '../../db/rows';
import { insertArchival, searchArchival, type Providers } from '../../memory/archival';
import { DomainError, invalid } from '../../errors';
import { ModelApiError } from '../../llm/types';
import { conversationSearch } from './conversation-search';
import { fetchWebpageOrContents } from './fetch-webpage';
import { exaClient, type ExaSettings } from './exa';
import { webSearch } from './web-search';
import { DEFAULT_FILE_TOOL_SETTINGS, FILE_TOOL_FUNCTIONS, type FileToolSettings } from './files';
import type { OutboundPolicy } from '../../net/safe-fetch';
import {
  coreMemoryAppend,
  coreMemoryReplace,
  memoryInsert,
  memoryReplace,
  memoryRethink,
  rethinkUserMemory,
  type EditableBlock,
  type MemoryEdit,
} from './memory-edits';
import { memoryApplyPatch, memoryCommand, type BlockToolOutcome, type PlannedBlock } from './memory-blocks';

import { ToolError } from '../../returns/tool-error';

export { ToolError };

export type BuiltinToolName = keyof typeof schemas;

interface BuiltinTool {
  toolType:
    | 'letta_core'
    | 'letta_sleeptime_core'
    | 'letta_voice_sleeptime_core'
    | 'letta_memory_core'
    | 'letta_builtin'
    | 'letta_multi_agent_core'
    | 'letta_files_core';
  /** Letta's LETTA_PARALLEL_SAFE_TOOLS. */
  parallel: boolean;
  /** Works on the database alone, in milliseconds: the turn runs it as a local activity. */
  local: boolean;
  /**
   * Running it again has no further effect (a read): a call whose earlier attempt was interrupted
   * before it recorded its result runs again, where any other is answered that it may have run
   * (activities/tool-call.ts). The memory tools take no claim: their record is their whole effect.
   */
  idempotent?: true;
  /**
   * The execution mode that runs it when not this process's (`builtin`): `code` for model-written code
   * (in a sandbox), `agent` for messages to other agents (their own turns).
   */
  mode?: 'code' | 'agent';
  /** Why this server cannot run it: its call is answered with this error. */
  unavailable?: string;
}

const MULTI_AGENT: BuiltinTool = {
  toolType: 'letta_multi_agent_core',
  parallel: false,
  local: false,
  mode: 'agent',
};

/** A tool of Letta's voice agents, which run their own loop with the voice chat's transcript. */
const VOICE_AGENT_ONLY = (name: string): BuiltinTool => ({
  toolType: 'letta_voice_sleeptime_core',
  parallel: false,
  local: true,
  idempotent: true,
  unavailable: `${name} works on the transcript of Letta's voice agents (voice_convo_agent, voice_sleeptime_agent), which this server does not run`,
});

const BUILTIN_TOOLS: Record<BuiltinToolName, BuiltinTool> = {
  send_message: { toolType: 'letta_core', parallel: false, local: true, idempotent: true },
  conversation_search: { toolType: 'letta_core', parallel: true, local: true, idempotent: true },
  memory_insert: { toolType: 'letta_sleeptime_core', parallel: false, local: true },
  memory_replace: { toolType: 'letta_sleeptime_core', parallel: false, local: true },
  memory_rethink: { toolType: 'letta_sleeptime_core', parallel: false, local: true },
  memory_finish_edits: { toolType: 'letta_sleeptime_core', parallel: false, local: true, idempotent: true },
  memory: { toolType: 'letta_memory_core', parallel: false, local: true },
  memory_apply_patch: { toolType: 'letta_memory_core', parallel: false, local: true },
  core_memory_append: { toolType: 'letta_memory_core', parallel: false, local: true },
  core_memory_replace: { toolType: 'letta_memory_core', parallel: false, local: true },
  fetch_webpage: { toolType: 'letta_builtin', parallel: true, local: false, idempotent: true },
  web_search: { toolType: 'letta_builtin', parallel: true, local: false, idempotent: true },
  run_code: { toolType: 'letta_builtin', parallel: true, local: false, mode: 'code' },
  run_code_with_tools: {
    toolType: 'letta_builtin',
    parallel: false,
    local: true,
    idempotent: true,
    unavailable:
      "run_code_with_tools runs the model's code with a client that calls each of the agent's tools through POST /v1/agents/{agent_id}/tools/{tool_name}/run, which the scoped token of sandboxed code may not use on this server (it would run the agent's tools with its secrets, and could call itself without end): use run_code, or a custom tool",
  },
  archival_memory_insert: { toolType: 'letta_core', parallel: false, local: false },
  archival_memory_search: { toolType: 'letta_core', parallel: true, local: false, idempotent: true },
  open_files: { toolType: 'letta_files_core', parallel: false, local: true, idempotent: true },
  grep_files: { toolType: 'letta_files_core', parallel: true, local: true, idempotent: true },
  semantic_search_files: { toolType: 'letta_files_core', parallel: true, local: false, idempotent: true },
  send_message_to_agent_and_wait_for_reply: { ...MULTI_AGENT },
  send_message_to_agents_matching_tags: { ...MULTI_AGENT },
  send_message_to_agent_async: { ...MULTI_AGENT },
  rethink_user_memory: { toolType: 'letta_voice_sleeptime_core', parallel: false, local: true },
  finish_rethinking_memory: {
    toolType: 'letta_voice_sleeptime_core',
    parallel: false,
    local: true,
    idempotent: true,
  },
  store_memories: VOICE_AGENT_ONLY('store_memories'),
  search_memory: VOICE_AGENT_ONLY('search_memory'),
};

/** The tools a `letta_v1_agent` gets unless `include_base_tools` is false. */
export const BASE_TOOLS: BuiltinToolName[] = ['memory_replace', 'memory_insert', 'conversation_search'];

export const builtinToolNames = () => Object.keys(BUILTIN_TOOLS) as BuiltinToolName[];

export const isBuiltinTool = (name: string): name is BuiltinToolName => name in BUILTIN_TOOLS;

export const runsLocally = (name: string) => isBuiltinTool(name) && BUILTIN_TOOLS[name].local;

/** Whether a built-in tool's call may run again after an interrupted attempt (src/tools/retry-policy.ts). */
export const builtinIdempotent = (name: string) =>
  isBuiltinTool(name) && BUILTIN_TOOLS[name].idempotent === true;

/** The execution mode of a built-in tool (src/agent/turn-context.ts). */
export const builtinMode = (name: string) => (isBuiltinTool(name) && BUILTIN_TOOLS[name].mode) || 'builtin';

/** The tools `include_multi_agent_tools` attaches. */
export const MULTI_AGENT_TOOLS = builtinToolNames().filter((name) => BUILTIN_TOOLS[name].mode === 'agent');

/** Makes the built-in tools exist in the tools table, as they are in this version of the server. */
export async function ensureBuiltinTools(db: Database): Promise<void> {
  for (const [name, tool] of Object.entries(BUILTIN_TOOLS) as [BuiltinToolName, BuiltinTool][]) {
    const schema = schemas[name];
    await upsertBuiltinTool(db, {
      name,
      tool_type: tool.toolType,
      description: schema.description,
      json_schema: schema,
      enable_parallel_execution: tool.parallel,
    });
  }
}

/**
 * Puts back the built-in tools someone deleted, as Letta's tool listing does (tool_manager.py:
 * list_tools_async upserts its base tools when one is missing); a read when none is.
 */
export async function restoreBuiltinTools(db: Database): Promise<void> {
  const names = builtinToolNames();
  if ((await toolsWhere(db, 'name', names)).length < names.length) await ensureBuiltinTools(db);
}

type Args = Record<string, unknown>;

/**
 * A string argument; `legacy` is the name older Letta versions gave it, taken when the argument is
 * absent under its own (a model prompted with an older schema, an agent's history of such calls).
 */
function requireString(args: Args, name: string, legacy?: string): string {
  const value = args[name] ?? (legacy === undefined ? undefined : args[legacy]);
  if (typeof value !== 'string')
    throw new ToolError(`missing or invalid argument '${name}' (expected a string)`);
  return value;
}

function optionalInteger(args: Args, name: string): number | undefined {
  const value = args[name];
  if (value === undefined || value === null) return undefined;
  const n = typeof value === 'string' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n))
    throw new ToolError(`invalid argument '${name}' (expected an integer)`);
  return n;
}

const EDITS: Record<string, (blocks: EditableBlock[], args: Args) => MemoryEdit> = {
  memory_replace: (blocks, a) =>
    memoryReplace(blocks, {
      label: requireString(a, 'label'),
      old_string: requireString(a, 'old_string', 'old_str'),
      new_string: requireString(a, 'new_string', 'new_str'),
    }),
  memory_insert: (blocks, a) =>
    memoryInsert(blocks, {
      label: requireString(a, 'label'),
      new_string: requireString(a, 'new_string', 'new_str'),
      insert_line: optionalInteger(a, 'insert_line'),
    }),
  memory_rethink: (blocks, a) =>
    memoryRethink(blocks, { label: requireString(a, 'label'), new_memory: requireString(a, 'new_memory') }),
  core_memory_append: (blocks, a) =>
    coreMemoryAppend(blocks, { label: requireString(a, 'label'), content: requireString(a, 'content') }),
  core_memory_replace: (blocks, a) =>
    coreMemoryReplace(blocks, {
      label: requireString(a, 'label'),
      old_content: requireString(a, 'old_content'),
      new_content: requireString(a, 'new_content'),
    }),
  rethink_user_memory: (blocks, a) =>
    rethinkUserMemory(blocks, { new_memory: requireString(a, 'new_memory') }),
};

/** Tools that may create, delete, rename or edit several blocks in one call. */
const BLOCK_TOOLS: Record<string, (blocks: PlannedBlock[], args: Args) => BlockToolOutcome> = {
  memory: memoryCommand,
  memory_apply_patch: (blocks, a) =>
    memoryApplyPatch(blocks, { label: requireString(a, 'label'), patch: requireString(a, 'patch') }),
};

/** A memory edit's result, and the block value it writes unless it wrote already (a new block). */
export interface PlannedMemoryEdit {
  result: string;
  write?: BlockValueWrite;
}

/**
 * Plans a memory edit of a block the agent has, from the blocks as they were read (with the call, no
 * lock held): what it returns and the write, which the call's record applies only if the block still
 * holds what was read. Undefined when the edit creates a block: planMemoryEdit, under the lock.
 */
export function planBlockEdit(
  name: string,
  args: Args,
  blocks: MemoryBlock[],
): PlannedMemoryEdit | undefined {
  if (!(name in EDITS)) return undefined;
  return writeOf(EDITS[name](blocks, args), blocks);
}

/** The edit as a write of the block it names, over its value in `blocks`; undefined if it has none. */
function writeOf(edit: MemoryEdit, blocks: MemoryBlock[]): PlannedMemoryEdit | undefined {
  const block = blocks.find((b) => b.label === edit.label);
  if (!block) return undefined;
  checkLimit(edit, block.char_limit);
  return {
    result: edit.result,
    write: { blockId: block.id, label: block.label, previous: block.value, value: edit.value },
  };
}

/**
 * Plans a memory edit from the agent's blocks read and locked in `tx`, so that no other edit races it
 * (a tool call's transaction holds the agent's row locked too, `agentLock`, so that a block it
 * creates is created once); a block it creates is written here.
 */
export async function planMemoryEdit(
  tx: Queryable,
  agentId: string,
  name: string,
  args: Args,
): Promise<PlannedMemoryEdit> {
  const blocks = await lockAgentBlocks(tx, agentId);
  if (name in BLOCK_TOOLS)
    return { result: await writeBlocks(tx, agentId, blocks, BLOCK_TOOLS[name](blocks, args)) };
  const edit = EDITS[name](blocks, args);
  const planned = writeOf(edit, blocks);
  if (planned) return planned;
  checkLimit(edit);
  await createBlock(tx, agentId, edit);
  return { result: edit.result };
}

/** Writes what a block tool changed of the agent's blocks (read and locked in `tx` as `before`). */
async function writeBlocks(tx: Queryable, agentId: string, before: MemoryBlock[], after: BlockToolOutcome) {
  for (const block of after.blocks) {
    const was = before.find((b) => b.id === block.id);
    if (was?.label === block.label && was.value === block.value && was.description === block.description)
      continue;
    if (was?.value !== block.value) checkLimit({ ...block, result: '' }, was?.char_limit);
    if (!was) await createBlock(tx, agentId, block, block.description);
    else
      await updateBlock(tx, was.id, {
        label: block.label,
        value: block.value,
        description: block.description,
      });
  }
  for (const block of before)
    if (!after.blocks.some((b) => b.id === block.id)) await detachBlock(tx, agentId, block.id);
  return after.result;
}

/** Applies a memory edit, its block write included. */
async function editMemory(tx: Queryable, agentId: string, name: string, args: Args) {
  const { result, write } = await planMemoryEdit(tx, agentId, name, args);
  if (write) await updateBlock(tx, write.blockId, { value: write.value });
  return result;
}

/** Tools whose effect is a database write: planned from the blocks read with the call. */
export const editsMemory = (name: string) => name in EDITS || name in BLOCK_TOOLS;

const DEFAULT_CHAR_LIMIT = 100_000;

function checkLimit(edit: MemoryEdit, limit = DEFAULT_CHAR_LIMIT) {
  if (edit.value.length > limit) {
    throw new ToolError(`Edit failed: Exceeds ${limit} character limit (requested ${edit.value.length})`);
  }
}

async function createBlock(
  tx: Queryable,
  agentId: string,
  edit: Pick<MemoryEdit, 'label' | 'value'>,
  description: string | null = null,
) {
  const id = await insertBlock(tx, {
    label: edit.label,
    value: edit.value,
    char_limit: DEFAULT_CHAR_LIMIT,
    description,
    read_only: false,
    hidden: null,
    metadata: null,
    tags: null,
  });
  await attachBlocks(tx, agentId, [id]);
}

/** Where the web tools may go: the page fetch's limits, and Exa. */
export interface WebSettings {
  policy: OutboundPolicy;
  exa: ExaSettings;
}

/** What a built-in tool runs against: for memory edits, a transaction that locks their blocks. */
export interface BuiltinToolContext {
  db: Queryable;
  agent: AgentRow;
  web: WebSettings;
  /** The model providers, whose embeddings archival memory uses. */
  providers: Providers;
  /** The file tools' limits (defaults: Letta's). */
  files?: FileToolSettings;
  signal?: AbortSignal;
}

/** The archival tools: what the agent cannot do (an embedding its provider refuses, a bad date) is the tool's error. */
async function archivalTool({ db, agent, providers, signal }: BuiltinToolContext, name: string, args: Args) {
  try {
    if (name === 'archival_memory_insert') {
      const tags = Array.isArray(args.tags) ? args.tags.map(String) : null;
      await insertArchival(db, providers, agent, { text: requireString(args, 'content'), tags }, signal);
      return null;
    }
    return await searchArchival(
      db,
      providers,
      agent,
      {
        query: requireString(args, 'query'),
        tags: Array.isArray(args.tags) ? args.tags.map(String) : null,
        tag_match_mode: args.tag_match_mode === 'all' ? 'all' : 'any',
        top_k: optionalInteger(args, 'top_k') ?? null,
        start_datetime: typeof args.start_datetime === 'string' ? args.start_datetime : null,
        end_datetime: typeof args.end_datetime === 'string' ? args.end_datetime : null,
      },
      signal,
    );
  } catch (error) {
    if (error instanceof DomainError || (error instanceof ModelApiError && !error.retryable))
      throw new ToolError(error.message);
    throw error;
  }
}

/** Exa with the agent's own key (its secret EXA_API_KEY) or the server's. */
async function agentExa({ db, agent, web }: BuiltinToolContext) {
  const secret = (await agentSecrets(db, agent.id)).find((s) => s.key === 'EXA_API_KEY');
  return exaClient(web.exa, secret?.value);
}

/** Runs a built-in tool; a ToolError is the tool's own failure, anything else an infrastructure fault. */
export async function executeBuiltinTool(
  context: BuiltinToolContext,
  name: BuiltinToolName,
  args: Args,
): Promise<unknown> {
  const { db, agent, web, signal } = context;
  const unavailable = BUILTIN_TOOLS[name].unavailable;
  if (unavailable) throw new ToolError(unavailable);
  switch (name) {
    case 'send_message':
      return 'Sent message successfully.';
    case 'memory_finish_edits':
      return null;
    case 'finish_rethinking_memory':
      return '';
    case 'conversation_search':
      return conversationSearch(db, agent, args);
    case 'web_search':
      return webSearch(await agentExa(context), web.exa, args, signal);
    case 'fetch_webpage':
      return fetchWebpageOrContents(
        args,
        { ...web, exa: await agentExa(context), exaSettings: web.exa },
        signal,
      );
    case 'archival_memory_insert':
    case 'archival_memory_search':
      return archivalTool(context, name, args);
    case 'open_files':
    case 'grep_files':
    case 'semantic_search_files':
      return FILE_TOOL_FUNCTIONS[name](
        {
          db,
          agent,
          providers: context.providers,
          settings: context.files ?? DEFAULT_FILE_TOOL_SETTINGS,
          signal,
        },
        args,
      );
    case 'run_code':
    case 'send_message_to_agent_and_wait_for_reply':
    case 'send_message_to_agents_matching_tags':
    case 'send_message_to_agent_async':
      throw new Error(`${name} runs in the ${builtinMode(name)} execution mode, not in this process`);
    default:
      return editMemory(db, agent.id, name, args);
  }
}

/**
 * Runs a built-in tool outside a turn (`POST /v1/agents/{agent_id}/tools/{tool_name}/run`), as a turn's
 * call of it runs: a memory tool in a transaction holding the agent's lock, its blocks locked, the
 * others with the context a turn's activity gives them. Tools of other execution modes (run_code, the
 * messages to other agents) run in a turn only.
 */
export async function runBuiltinToolNow(
  context: Omit<BuiltinToolContext, 'db'> & { db: Database },
  name: BuiltinToolName,
  args: Args,
): Promise<unknown> {
  if (builtinMode(name) !== 'builtin') throw invalid(`${name} runs only within a turn of its agent`);
  const { db, agent } = context;
  if (!editsMemory(name)) return executeBuiltinTool(context, name, args);
  return db.transaction((tx) => editMemory(tx, agent.id, name, args), agentLockOnly(agent.id));
}
