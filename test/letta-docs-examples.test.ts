/**
 * Letta's own getting-started examples (docs.letta.com: the TypeScript SDK's hello world, the
 * stateful-agents tutorial, client-side tools), run as written with the official client; only the
 * client's base URL points here and the model is the local OpenAI-compatible stub.
 */
import Letta from '@letta-ai/letta-client';
import { useAgentServer } from './helpers/agent-server';

describe("Letta's getting-started examples, unchanged", () => {
  const h = useAgentServer('openai');
  // "If self-hosting, specify the base URL"
  const letta = () => new Letta({ baseURL: h.server.url, apiKey: 'unused' });

  it('hello world: an agent with memory blocks and tools learns a name and keeps it in memory', async () => {
    const client = letta();
    const agentState = await client.agents.create({
      model: 'openai/gpt-4.1',
      embedding: 'openai/text-embedding-3-small',
      memory_blocks: [
        { label: 'human', value: "The human's name is Chad. They like vibe coding." },
        { label: 'persona', value: 'My name is Sam, a helpful assistant.' },
      ],
      tools: ['web_search', 'run_code'],
    });
    expect(agentState.id).toMatch(/^agent-/);

    // "the agent will think, then edit its memory using a tool"
    h.stub.enqueue(
      {
        reasoning: 'The user says their name is Brad, not Chad.',
        toolCalls: [
          {
            name: 'memory_replace',
            arguments: { label: 'human', old_str: 'name is Chad', new_str: 'name is Brad' },
          },
        ],
      },
      { text: 'Nice to meet you, Brad!' },
    );
    const response = await client.agents.messages.create(agentState.id, {
      input: 'Hey, nice to meet you, my name is Brad.',
    });
    const types = response.messages.map((message) => message.message_type);
    expect(types).toEqual(
      expect.arrayContaining([
        'reasoning_message',
        'tool_call_message',
        'tool_return_message',
        'assistant_message',
      ]),
    );
    expect(response.stop_reason.stop_reason).toBe('end_turn');

    const block = await client.agents.blocks.retrieve('human', { agent_id: agentState.id });
    expect(block.value).toBe("The human's name is Brad. They like vibe coding.");
  });

  it('client-side tools: the run pauses for the tool, the client runs it and sends its return', async () => {
    const client = letta();
    const agent = await client.agents.create({
      model: 'openai/gpt-4.1',
      memory_blocks: [{ label: 'persona', value: 'I am a helpful assistant.' }],
    });
    const clientTools = [
      {
        name: 'get_secret_code',
        description: 'Returns the secret code for the given input.',
        parameters: {
          type: 'object',
          properties: { input_text: { type: 'string', description: 'The text to get a code for' } },
          required: ['input_text'],
        },
      },
    ];
    h.stub.enqueue(
      { toolCalls: [{ name: 'get_secret_code', arguments: { input_text: 'hello' } }] },
      { text: 'The secret code is 42.' },
    );
    let response = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'What is the secret code for hello?' }],
      client_tools: clientTools,
    });
    expect(response.stop_reason.stop_reason).toBe('requires_approval');
    const request = response.messages.find((m) => m.message_type === 'approval_request_message');
    if (request?.message_type !== 'approval_request_message') throw new Error('no approval request');
    expect(request.tool_call).toMatchObject({ name: 'get_secret_code' });

    // The client runs the tool itself and sends the result back.
    const args = JSON.parse((request.tool_call as { arguments: string }).arguments) as { input_text: string };
    const secret = `${args.input_text.length * 8 + 2}`;
    response = await client.agents.messages.create(agent.id, {
      messages: [
        {
          type: 'approval',
          approvals: [
            {
              type: 'tool',
              tool_call_id: (request.tool_call as { tool_call_id: string }).tool_call_id,
              tool_return: secret,
              status: 'success',
            },
          ],
        },
      ],
      client_tools: clientTools,
    });
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    const answer = response.messages.find((m) => m.message_type === 'assistant_message');
    expect(answer).toMatchObject({ content: 'The secret code is 42.' });
    // The model got the client's return as the tool's result.
    const lastRequest = h.stub.requests[h.stub.requests.length - 1];
    const toolMessage = lastRequest.messages.find((m) => m.role === 'tool') as { content: string };
    expect(JSON.parse(toolMessage.content)).toMatchObject({ status: 'OK', message: '42' });
  });
});
