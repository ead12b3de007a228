import { createAgent } from '../../src/agent/agents';
import { CreateAgentSchema, type CreateAgent } from '../../src/schemas/agents';
import type { Database } from '../../src/db';
import { insertRun } from '../../src/db/runs';
import { insertMessage } from '../../src/db/messages';
import { getToolByName } from '../../src/db/tools';
import type { ToolCallInput } from '../../contracts/payloads';
import { newId } from '../../src/ids';
import { testConfig } from './env';

/**
 * An agent made from `body` (a gpt-4o-mini one by default) and a run of it, straight in the database,
 * with the run's `request_config` (the client tools its request sent, say).
 */
export async function agentWithRun(
  db: Database,
  body: Partial<CreateAgent> = {},
  requestConfig: Record<string, unknown> = {},
): Promise<{ agentId: string; runId: string }> {
  const agent = await createAgent(
    db,
    testConfig({ OPENAI_API_KEY: 'k' }),
    CreateAgentSchema.parse({ model: 'openai/gpt-4o-mini', ...body }),
  );
  const runId = newId('run');
  await insertRun(db, {
    id: runId,
    agent_id: agent.id,
    background: false,
    metadata: {},
    request_config: requestConfig,
    workflow_id: `${agent.id}/${runId}`,
  });
  return { agentId: agent.id, runId };
}

/**
 * Calls of the tool `name` with each of `argsList`, in one assistant message of the run, as a turn
 * passes them to its tool activities.
 */
export async function toolCallsOf(
  db: Database,
  { agentId, runId }: { agentId: string; runId: string },
  name: string,
  argsList: Record<string, unknown>[],
): Promise<ToolCallInput[]> {
  const tool = (await getToolByName(db, name))!;
  const messageId = newId('message');
  const toolCalls = argsList.map((args) => ({
    id: `call_${newId('tool').slice(5, 20)}`,
    name,
    arguments: JSON.stringify(args),
  }));
  await insertMessage(db, {
    id: messageId,
    agent_id: agentId,
    run_id: runId,
    step_id: newId('step'),
    role: 'assistant',
    tool_calls: toolCalls,
  });
  return toolCalls.map((call) => ({
    agentId,
    runId,
    stepId: 'step',
    messageId,
    toolCallId: call.id,
    toolName: name,
    toolId: tool.id,
    toolVersion: tool.version,
  }));
}
