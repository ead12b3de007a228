import { createAgent } from '../../src/agent/agents';
import { CreateAgentSchema, type CreateAgent } from '../../src/schemas/agents';
import type { Database } from '../../src/db';
import { insertRun } from '../../src/db/runs';
import { newId } from '../../src/ids';
import { testConfig } from './env';

/** An agent made from `body` (a gpt-4o-mini one by default) and a run of it, straight in the database. */
export async function agentWithRun(
  db: Database,
  body: Partial<CreateAgent> = {},
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
    request_config: {},
    workflow_id: `${agent.id}/${runId}`,
  });
  return { agentId: agent.id, runId };
}
