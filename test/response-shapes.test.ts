import type { z } from 'zod';
import {
  AgentStateSchema,
  ArchivalSearchResponseSchema,
  ArchiveSchema,
  PassageSchema,
  PassageSearchResultSchema,
  BlockSchema,
  ConversationSchema,
  LettaMessageSchema,
  LettaResponseSchema,
  RunSchema,
  SandboxConfigSchema,
  SandboxEnvVarSchema,
  ToolReturnMessageSchema,
  ToolSchema,
  UsageStatisticsSchema,
} from '../src/api/schemas/responses';
import { useAgentServer } from './helpers/agent-server';
import { jsonRequest } from './helpers/http';

/**
 * The response schemas (src/api/schemas/responses.ts) are the one source of the response types: what
 * the server sends must be exactly what they say, no field missing, none of another type, none extra.
 */
describe('responses match their schemas', () => {
  const h = useAgentServer('openai');

  const call = async (method: string, path: string, body?: unknown) => {
    const { status, json } = await jsonRequest(h.server.url, method, path, body);
    if (status !== 200) throw new Error(`${method} ${path}: ${status} ${JSON.stringify(json)}`);
    return json;
  };
  /** Parsing drops fields a schema does not name: equal only when there were none. */
  const expectShape = (schema: z.ZodType, value: unknown) => expect(schema.parse(value)).toEqual(value);

  it('agents, blocks, tools, messages, runs, usage and conversations', async () => {
    const tool = await call('POST', '/v1/tools', {
      source_code:
        'def shout(text: str) -> str:\n    """Shouts.\n\n    Args:\n        text: what\n    """\n    return text.upper()\n',
    });
    expectShape(ToolSchema, tool);
    const agent = await call('POST', '/v1/agents', {
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Alice' }],
      tool_ids: [tool.id],
      tool_rules: [{ type: 'requires_approval', tool_name: 'shout' }],
      secrets: { TOKEN: 'secret-value' },
    });
    expectShape(AgentStateSchema, agent);
    for (const block of await call('GET', `/v1/agents/${agent.id}/core-memory/blocks`)) {
      expectShape(BlockSchema, block);
    }

    h.stub.enqueue(
      {
        text: 'Noting it.',
        toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'Tea' } }],
      },
      { toolCalls: [{ name: 'shout', arguments: { text: 'hi' } }] },
    );
    const paused = await call('POST', `/v1/agents/${agent.id}/messages`, {
      messages: [{ role: 'user', content: 'I like tea' }],
    });
    expectShape(LettaResponseSchema, paused);
    const request = paused.messages.find(
      (m: { message_type: string }) => m.message_type === 'approval_request_message',
    );
    h.stub.enqueue({ text: 'Done.' });
    const answered = await call('POST', `/v1/agents/${agent.id}/messages`, {
      messages: [{ type: 'approval', approve: true, approval_request_id: request.tool_call.tool_call_id }],
    });
    expectShape(LettaResponseSchema, answered);

    const messages = await call('GET', `/v1/agents/${agent.id}/messages?limit=50`);
    expect(new Set(messages.map((m: { message_type: string }) => m.message_type))).toEqual(
      new Set([
        'system_message',
        'user_message',
        'assistant_message',
        'tool_call_message',
        'tool_return_message',
        'approval_request_message',
        'approval_response_message',
      ]),
    );
    for (const message of messages) expectShape(LettaMessageSchema, message);

    const runs = await call('GET', `/v1/runs?agent_id=${agent.id}`);
    expect(runs.length).toBe(2);
    for (const run of runs) expectShape(RunSchema, run);
    expectShape(UsageStatisticsSchema, await call('GET', `/v1/runs/${runs[0].id}/usage`));
    const conversation = await call('POST', `/v1/conversations?agent_id=${agent.id}`, {});
    expectShape(ConversationSchema, conversation);
    expectShape(ConversationSchema, await call('POST', `/v1/conversations/${conversation.id}/fork`));
    expectShape(
      ToolReturnMessageSchema,
      await call('POST', '/v1/tools/run', { source_code: tool.source_code, args: { text: 'x' } }),
    );
  });

  it('archives, passages and archival search', async () => {
    const archive = await call('POST', '/v1/archives', {
      name: 'notes',
      embedding: 'openai/text-embedding-3-small',
    });
    expectShape(ArchiveSchema, archive);
    expectShape(
      PassageSchema,
      await call('POST', `/v1/archives/${archive.id}/passages`, { text: 'tea', tags: ['x'] }),
    );
    const agent = await call('POST', '/v1/agents', {
      model: 'openai/gpt-4o-mini',
      embedding: 'openai/text-embedding-3-small',
    });
    const [passage] = await call('POST', `/v1/agents/${agent.id}/archival-memory`, { text: 'coffee' });
    expectShape(PassageSchema, passage);
    for (const listed of await call('GET', `/v1/agents/${agent.id}/archival-memory`))
      expectShape(PassageSchema, listed);
    expectShape(
      ArchivalSearchResponseSchema,
      await call('GET', `/v1/agents/${agent.id}/archival-memory/search?query=coffee`),
    );
    const found = await call('POST', '/v1/passages/search', { query: 'tea' });
    expect(found.length).toBe(2);
    for (const result of found) expectShape(PassageSearchResultSchema, result);
  });

  it('sandbox configs and their variables', async () => {
    const config = await call('POST', '/v1/sandbox-config/local/default');
    expectShape(SandboxConfigSchema, config);
    expectShape(
      SandboxEnvVarSchema,
      await call('POST', `/v1/sandbox-config/${config.id}/environment-variable`, { key: 'K', value: 'v' }),
    );
  });
});
