/**
 * What a custom tool's run needs from the agent and gives back: the sandbox job (arguments, the
 * environment it may see, a snapshot of the agent for tools that take `agent_state`) and the write-back
 * of the block values such a tool changed.
 */
import type { Queryable } from '../db';
import { agentBlocks } from '../db/agents';
import { updateBlock } from '../db/blocks';
import type { AgentRecord, BlockRow, ToolRow } from '../db/rows';
import type { AgentStateSnapshot, PipRequirement, ToolJob, ToolRunResult } from '../sandbox';
import { runtimeFields } from '../sandbox/node-runtime';
import { toolEnvironment, type SandboxEnvironment } from '../sandbox/environment';
import { ToolError } from './tool-error';
import { toolTimeoutMs } from './tool-timeout';

/** What a tool's run sees of its agent. */
type ToolAgent = Pick<AgentRecord, 'id' | 'name' | 'blocks' | 'secrets'>;

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

/**
 * A custom tool's job. It sees only its sandbox config's variables, overlaid by the agent's secrets,
 * then LETTA_AGENT_ID and LETTA_TOOL_ID (Letta's precedence, without the server's own environment),
 * and the network only when its local sandbox config allows it.
 */
export function customToolJob(
  sandbox: SandboxEnvironment,
  agent: ToolAgent,
  tool: ToolRow,
  args: Record<string, unknown>,
  defaultTimeoutMs: number,
): ToolJob {
  const env = toolEnvironment({
    sandboxVars: sandbox.env,
    agentSecrets: Object.fromEntries(agent.secrets.map((s) => [s.key, s.value])),
    agentId: agent.id,
    toolId: tool.id,
  });
  return {
    name: tool.name,
    ...runtimeFields(tool),
    source: tool.source_code ?? '',
    args,
    env,
    timeoutMs: toolTimeoutMs(tool) ?? defaultTimeoutMs,
    returnCharLimit: tool.return_char_limit,
    network: sandbox.config?.type === 'local' && sandbox.config.config.allow_network,
    // The local sandbox config's requirements first, then the tool's own (Letta installs both).
    pipRequirements: [
      ...(sandbox.config?.type === 'local' ? sandbox.config.config.pip_requirements : []),
      ...((tool.pip_requirements ?? []) as PipRequirement[]),
    ],
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
  const blocks = new Map<string, BlockRow>((await agentBlocks(tx, agentId)).map((b) => [b.label, b]));
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
