import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import { startOpenAiStub, type ChatRequest, type OpenAiStub } from './helpers/openai-stub';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { eventually } from './helpers/eventually';
import { testTemporalAddress } from './helpers/env';
import { startElicitServer } from './helpers/mcp-servers';
import type { StartedProcess } from './helpers/process';
import { apiUrl, killProcess, serverProcessEnv, startApiProcess } from './helpers/server-processes';

interface Elicitation {
  tool_call_id: string;
  message: string;
  requested_schema: { properties: Record<string, unknown> };
  server: string;
}
interface ApprovalRequest {
  message_type: string;
  tool_call: { tool_call_id: string };
  elicitations?: Elicitation[];
}

/**
 * An MCP server's elicitation during a tool call pauses the agent's step as an approval does: the
 * official client sees `requires_approval` with the server's question, answers it, and the answer
 * reaches the server on the same call, whose result reaches the model. The server under test runs as
 * its own process (`npm start`'s roles in one), so that a test can kill it with SIGKILL while paused;
 * the MCP server (test/fixtures/mcp/elicit-server.mjs) is a process of its own that outlives it.
 */
describe('MCP elicitation as a durable pause', () => {
  let dataDir: string;
  let schema: TestSchema;
  let stub: OpenAiStub;
  let env: Record<string, string>;
  let server: StartedProcess;
  let elicit: Awaited<ReturnType<typeof startElicitServer>>;
  let client: Letta;
  let toolId: string;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-elicit-'));
    schema = await createTestSchema();
    stub = await startOpenAiStub();
    elicit = await startElicitServer();
    env = await serverProcessEnv({
      dataDir,
      databaseUrl: schema.url,
      temporalAddress: testTemporalAddress(),
      openAiBaseUrl: stub.baseURL,
      extra: { OUTBOUND_ALLOW_PRIVATE: '127.0.0.1' },
    });
    server = await startApiProcess(env, 'all');
    client = new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 0 });
    const registered = await client.mcpServers.create({
      server_name: 'booking',
      config: { mcp_server_type: 'streamable_http', server_url: elicit.url },
    });
    const tools = await client.mcpServers.tools.list(registered.id!);
    toolId = tools.find((tool) => tool.name === 'book_table')!.id!;
  });
  afterAll(async () => {
    if (server) await killProcess(server, 'SIGKILL');
    if (elicit) await killProcess(elicit.process, 'SIGKILL');
    await stub?.close();
    await schema?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** What the MCP server was answered, in order. */
  const answersGot = () => elicit.answers();

  /** An agent whose model calls book_table: its step pauses for the server's question. */
  async function pausedStep(extra: Record<string, unknown> = {}) {
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [toolId] });
    stub.enqueue({ toolCalls: [{ name: 'book_table', arguments: {} }] });
    const first = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Book me a table.' }],
      ...extra,
    });
    expect(first.stop_reason.stop_reason).toBe('requires_approval');
    const request = first.messages.at(-1) as unknown as ApprovalRequest;
    expect(request.message_type).toBe('approval_request_message');
    return { agentId: agent.id, callId: request.tool_call.tool_call_id, request };
  }

  /** Answers the pause; the model (stub) says what the tool returned. */
  async function answer(agentId: string, approval: Record<string, unknown>) {
    stub.enqueue((req: ChatRequest) => ({ text: `tool said: ${String(req.messages.at(-1)?.content)}` }));
    // elicitation_response is an extension the client's types do not know; the client sends it as given.
    const body = { messages: [{ type: 'approval', approvals: [{ type: 'approval', ...approval }] }] };
    return client.agents.messages.create(agentId, body as { messages: [] });
  }

  const toolReturnSeen = () => String(stub.requests.at(-1)?.messages.at(-1)?.content);

  it("pauses on the server's question, survives a kill -9 while paused, and the answer reaches the server and the model", async () => {
    const { agentId, callId, request } = await pausedStep();
    expect(request.elicitations).toEqual([
      expect.objectContaining({ tool_call_id: callId, message: 'Who is the table for?', server: 'booking' }),
    ]);
    expect(Object.keys(request.elicitations![0].requested_schema.properties)).toEqual([
      'name',
      'guests',
      'seating',
      'extras',
    ]);
    const inbox = (await (await fetch(`${apiUrl(env)}/v1/approvals/?agent_id=${agentId}`)).json()) as {
      kind: string;
      elicitation: Elicitation | null;
    }[];
    expect(inbox).toEqual([
      expect.objectContaining({
        kind: 'elicitation',
        elicitation: expect.objectContaining({ tool_call_id: callId }),
      }),
    ]);

    await killProcess(server, 'SIGKILL');
    server = await startApiProcess(env, 'all');

    const before = (await answersGot()).length;
    const content = { name: 'Ada', guests: 4, seating: 'terrace', extras: ['cake'] };
    const done = await answer(agentId, {
      tool_call_id: callId,
      approve: true,
      elicitation_response: { action: 'accept', content },
    });
    expect(done.stop_reason.stop_reason).toBe('end_turn');
    expect((await answersGot()).slice(before)).toEqual([{ action: 'accept', content }]);
    expect(toolReturnSeen()).toContain(`booked: ${JSON.stringify(content).replace(/"/g, '\\"')}`);
  });

  it('accepting with no content accepts every default of the requested schema (SEP-1034)', async () => {
    const { agentId, callId } = await pausedStep();
    const before = (await answersGot()).length;
    const done = await answer(agentId, { tool_call_id: callId, approve: true });
    expect(done.stop_reason.stop_reason).toBe('end_turn');
    expect((await answersGot()).slice(before)).toEqual([
      { action: 'accept', content: { name: 'Guest', guests: 2, seating: 'inside' } },
    ]);
  });

  it('a denial declines, and a cancel action cancels: the tool says what it made of it', async () => {
    for (const [approval, action] of [
      [{ approve: false }, 'decline'],
      [{ approve: false, elicitation_response: { action: 'cancel' } }, 'cancel'],
    ] as const) {
      const { agentId, callId } = await pausedStep();
      const before = (await answersGot()).length;
      const done = await answer(agentId, { tool_call_id: callId, ...approval });
      expect(done.stop_reason.stop_reason).toBe('end_turn');
      expect((await answersGot()).slice(before)).toEqual([{ action }]);
      expect(toolReturnSeen()).toContain(`not booked: ${action}`);
    }
  });

  it('refuses content that does not fit the requested schema with a 400 naming the misfit', async () => {
    const { agentId, callId } = await pausedStep();
    for (const [content, misfit] of [
      [{ guests: 40 }, 'content/guests must be <= 12'],
      [{ seating: 'roof' }, 'content/seating must match exactly one schema in oneOf'],
      [{ extras: ['balloons'] }, 'content/extras/0 must be equal to one of the allowed values'],
    ] as const) {
      const refused = await fetch(`${apiUrl(env)}/v1/agents/${agentId}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          messages: [
            {
              type: 'approval',
              approvals: [
                { type: 'approval', tool_call_id: callId, approve: true, elicitation_response: { content } },
              ],
            },
          ],
        }),
      });
      expect(refused.status).toBe(400);
      expect(await refused.text()).toContain(misfit);
    }
    const done = await answer(agentId, {
      tool_call_id: callId,
      approve: true,
      elicitation_response: { content: { extras: ['wine', 'flowers'], seating: 'terrace' } },
    });
    expect(done.stop_reason.stop_reason).toBe('end_turn');
  });

  it('an unanswered question expires as an approval does: the server is told cancel', async () => {
    const before = (await answersGot()).length;
    await pausedStep({ approval_timeout_seconds: 2 });
    stub.enqueue({ text: 'no booking then' });
    const got = await eventually(
      async () => (await answersGot()).slice(before),
      (a) => a.length > 0,
      30_000,
    );
    expect(got).toEqual([{ action: 'cancel' }]);
  });
});
