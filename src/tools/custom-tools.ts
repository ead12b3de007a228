/**
 * What a custom tool's run needs from the agent and gives back: the sandbox job (arguments, the
 * environment it may see, a snapshot of the agent for tools that take `agent_state`) and the write-back
 * of the block values such a tool changed.
 */
import type { Queryable } from '../db';
import { agentBlocks } from '../db/agents';
import { updateBlock } from '../db/blocks';
import type { MemoryBlock, SecretRow, ToolRow } from '../db/rows';
import type { SandboxContext } from '../db/tool-calls';
import {
  runInFirstAvailable,
  type AgentStateSnapshot,
  type PipRequirement,
  type SandboxChoice,
  type ToolJob,
  type ToolRunResult,
} from '../sandbox';
import { runtimeFields } from '../sandbox/node-runtime';
import { sandboxEnvironment, toolEnvironment, type SandboxEnvironment } from '../sandbox/environment';
import type { NpmRequirement } from '../sandbox/types';
import { ToolError } from '../returns/tool-error';
import type { ToolApiAccess } from '../access/tool-api-access';
import { toolTimeoutMs } from './tool-timeout';

/** What a tool's run sees of its agent. */
interface ToolAgent {
  id: string;
  name: string;
  blocks: Omit<MemoryBlock, 'id'>[];
  secrets: Pick<SecretRow, 'key' | 'value'>[];
}

function snapshot(agent: ToolAgent): AgentStateSnapshot {
  return {
    id: agent.id,
    name: agent.name,
    memory: {
      blocks: agent.blocks.map((b) => ({
        label: b.label,
        value: b.value,
        limit: b.char_limit,
        description: b.description,
        read_only: b.read_only,
      })),
    },
  };
}

/** A call of a custom tool, before it is known where it runs. */
export interface CustomToolCall {
  agent: ToolAgent;
  tool: ToolRow;
  args: Record<string, unknown>;
  defaultTimeoutMs: number;
  /** The run of the turn that makes the call; none for a call the API makes outside a turn. */
  runId?: string;
  /** The call's id (LETTA_TOOL_CALL_ID); none for a call the API makes outside a turn. */
  toolCallId?: string;
}

/** The sandbox configs (and their variables) of the places a tool may run, in `choices`' order. */
export const sandboxEnvironments = (db: Queryable, choices: SandboxChoice[]): Promise<SandboxEnvironment[]> =>
  Promise.all(choices.map((choice) => sandboxEnvironment(db, choice.configType)));

/** The same, from the sandbox context a sandboxed call read with itself (readToolCall). */
export const environmentsOf = (context: SandboxContext, choices: SandboxChoice[]): SandboxEnvironment[] =>
  choices.map(
    (choice) =>
      context.configs.find(({ config }) => config.type === choice.configType) ?? { config: null, env: {} },
  );

/**
 * Runs the call where its tool runs (Modal's fallbacks included), each place with the job its own
 * sandbox config (`environments`, as sandboxEnvironments reads them) makes.
 */
export async function runCustomTool(
  choices: SandboxChoice[],
  environments: SandboxEnvironment[],
  call: CustomToolCall,
  signal?: AbortSignal,
  api?: ToolApiAccess,
): Promise<{ job: ToolJob; run: ToolRunResult }> {
  const { agent, runId } = call;
  let granted: ReturnType<ToolApiAccess['grant']> | undefined;
  const jobFor = async (choice: SandboxChoice) => {
    const job = customToolJob(environments[choices.indexOf(choice)], call);
    const route = await api?.routeFor(choice.configType, Boolean(job.network));
    // A key the sandbox config or the agent's secrets set is the operator's choice, and kept.
    if (!api || !route || job.env.LETTA_API_KEY) return job;
    granted ??= api.grant({ agentId: agent.id, runId }, job.timeoutMs + TOKEN_MARGIN_MS);
    const { token } = await granted;
    const env = { ...job.env, LETTA_BASE_URL: route.url, LETTA_API_KEY: token };
    return { ...job, env, apiSocket: route.socket };
  };
  try {
    const { job, run } = await runInFirstAvailable(choices, jobFor, signal);
    const token = (await granted)?.token;
    return { job, run: token ? withoutSecret(run, token) : run };
  } finally {
    await (await granted?.catch(() => undefined))?.revoke();
  }
}

/**
 * The call's result with its token blotted out wherever the tool put it (its return, its output, its
 * edited blocks), so that the token never reaches a message, a log or a workflow history.
 */
function withoutSecret(run: ToolRunResult, secret: string): ToolRunResult {
  const text = JSON.stringify(run);
  return text.includes(secret) ? (JSON.parse(text.replaceAll(secret, '[token]')) as ToolRunResult) : run;
}

/** How long a call's token outlives the call's own timeout, should its revocation not happen. */
const TOKEN_MARGIN_MS = 10_000;

/** A Modal config's requirements are pip's or npm's own spellings (`name==1.0`, `name@1`). */
const asRequirements = (specs: string[] | null | undefined): PipRequirement[] =>
  (specs ?? []).map((name) => ({ name }));

/** The requirements a tool's sandbox config adds to its own, which Letta installs too. */
function configRequirements(sandbox: SandboxEnvironment): { pip: PipRequirement[]; npm: NpmRequirement[] } {
  const config = sandbox.config;
  if (config?.type === 'local') return { pip: config.config.pip_requirements, npm: [] };
  if (config?.type === 'modal')
    return {
      pip: asRequirements(config.config.pip_requirements),
      npm: asRequirements(config.config.npm_requirements),
    };
  return { pip: [], npm: [] };
}

/** A Modal config's timeout is the time limit of its tools that set none themselves. */
const configTimeoutMs = (sandbox: SandboxEnvironment) =>
  sandbox.config?.type === 'modal' ? sandbox.config.config.timeout * 1000 : undefined;

/**
 * A custom tool's job. It sees only its sandbox config's variables, overlaid by the agent's secrets,
 * then LETTA_AGENT_ID and LETTA_TOOL_ID (Letta's precedence, without the server's own environment)
 * and, in a turn, LETTA_TOOL_CALL_ID,
 * and the network only when its local sandbox config allows it. Where its sandbox reaches the API,
 * runCustomTool adds LETTA_BASE_URL and LETTA_API_KEY, a token for this call, unless they set a key.
 */
export function customToolJob(
  sandbox: SandboxEnvironment,
  { agent, tool, args, defaultTimeoutMs, toolCallId }: CustomToolCall,
): ToolJob {
  const env = toolEnvironment({
    sandboxVars: sandbox.env,
    agentSecrets: Object.fromEntries(agent.secrets.map((s) => [s.key, s.value])),
    agentId: agent.id,
    toolId: tool.id,
    toolCallId,
  });
  const runtime = runtimeFields(tool);
  const requirements = configRequirements(sandbox);
  return {
    name: tool.name,
    ...runtime,
    ...(runtime.npmRequirements && { npmRequirements: [...requirements.npm, ...runtime.npmRequirements] }),
    source: tool.source_code ?? '',
    args,
    env,
    timeoutMs: toolTimeoutMs(tool) ?? configTimeoutMs(sandbox) ?? defaultTimeoutMs,
    returnCharLimit: tool.return_char_limit,
    network: sandbox.config?.type === 'local' && sandbox.config.config.allow_network,
    // The sandbox config's requirements first, then the tool's own (Letta installs both).
    pipRequirements: [...requirements.pip, ...((tool.pip_requirements ?? []) as PipRequirement[])],
    agentState: snapshot(agent),
    agentId: agent.id,
  };
}

/** Blocks whose value the tool changed from the snapshot it was given. */
export function changedBlocks(job: ToolJob, result: ToolRunResult): { label: string; value: string }[] {
  const before = new Map(job.agentState?.memory.blocks.map((b) => [b.label, b.value]));
  return (result.agentState?.memory.blocks ?? []).filter(
    (b) => before.has(b.label) && before.get(b.label) !== b.value,
  );
}

/**
 * Writes back what the tool changed in `agent_state.memory` (the caller holds the agent's memory lock,
 * so this commits with the call's record). A value past its block's limit refuses the whole write-back.
 */
export async function writeBackMemory(tx: Queryable, agentId: string, job: ToolJob, result: ToolRunResult) {
  const changed = changedBlocks(job, result);
  if (!changed.length) return;
  const blocks = new Map((await agentBlocks(tx, agentId)).map((b) => [b.label, b]));
  for (const { label, value } of changed) {
    const limit = blocks.get(label)?.char_limit ?? Infinity;
    if (value.length > limit)
      throw new ToolError(
        `Error executing function ${job.name}: ValueError: Edit failed: Exceeds ${limit} character limit (requested ${value.length})`,
      );
  }
  for (const { label, value } of changed) {
    const block = blocks.get(label);
    if (block) await updateBlock(tx, block.id, { value });
  }
}
