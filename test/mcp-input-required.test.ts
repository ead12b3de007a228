import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import { startOpenAiStub, type ChatRequest, type OpenAiStub } from './helpers/openai-stub';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { testTemporalAddress } from './helpers/env';
import { startInputRequiredServer } from './helpers/mcp-servers';
import type { StartedProcess } from './helpers/process';
import { apiUrl, killProcess, serverProcessEnv, startApiProcess } from './helpers/server-processes';

interface ApprovalRequest {
  message_type: string;
  tool_call: { tool_call_id: string };
  elicitations?: { tool_call_id: string; message: string; requested_schema: Record<string, unknown> }[];
}

/**
 * An MCP server of the 2026-07-28 revision asks the user through an input-required result (SEP-2322):
 * the agent's step pauses as for an elicitation, nothing is held open, and the answer is given by
 * calling the tool again with `inputResponses` and the server's `requestState`, so the pause survives a
 * kill -9 of the server under test (its API and worker in one process) and of the MCP server. The MCP
 * server (test/fixtures/mcp/input-required-server.mjs) speaks only that revision, statelessly.
 */
describe('MCP input-required results (2026-07-28) as a durable pause', () => {
  const secret = crypto.randomBytes(16).toString('hex');
  let dataDir: string;
  let schema: TestSchema;
  let stub: OpenAiStub;
  let env: Record<string, string>;
  let server: StartedProcess;
  let mcp: Awaited<ReturnType<typeof startInputRequiredServer>>;
  let client: Letta;
  let toolId: string;
  let serverId: string;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-input-required-'));
    schema = await createTestSchema();
    stub = await startOpenAiStub();
    mcp = await startInputRequiredServer(secret);
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
      server_name: 'booking-2026',
      config: { mcp_server_type: 'streamable_http', server_url: mcp.url },
    });
    serverId = registered.id!;
    const tools = await client.mcpServers.tools.list(serverId);
    toolId = tools.find((tool) => tool.name === 'book_table')!.id!;
  });
  afterAll(async () => {
    if (server) await killProcess(server, 'SIGKILL');
    if (mcp) await killProcess(mcp.process, 'SIGKILL');
    await stub?.close();
    await schema?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("pauses on the server's question, survives a kill -9 of every process while paused, and the retry carries the answer and the server's state to the model", async () => {
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [toolId] });
    stub.enqueue({ toolCalls: [{ name: 'book_table', arguments: { date: '2026-12-24' } }] });
    const first = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Book me a table on Christmas Eve.' }],
    });
    expect(first.stop_reason.stop_reason).toBe('requires_approval');
    const request = first.messages.at(-1) as unknown as ApprovalRequest;
    const callId = request.tool_call.tool_call_id;
    expect(request.elicitations).toEqual([
      expect.objectContaining({ tool_call_id: callId, message: 'Who is the table on 2026-12-24 for?' }),
    ]);
    const [asked] = await mcp.calls();
    expect(asked).toEqual({ name: 'book_table', arguments: { date: '2026-12-24' }, stateVerified: false });

    await killProcess(server, 'SIGKILL');
    await killProcess(mcp.process, 'SIGKILL');
    mcp = await startInputRequiredServer(secret, mcp.port);
    server = await startApiProcess(env, 'all');

    stub.enqueue((req: ChatRequest) => ({ text: `tool said: ${String(req.messages.at(-1)?.content)}` }));
    const content = { name: 'Ada', guests: 4 };
    const approval = { type: 'approval', tool_call_id: callId, approve: true };
    const body = {
      messages: [{ type: 'approval', approvals: [{ ...approval, elicitation_response: { content } }] }],
    };
    // elicitation_response is an extension the client's types do not know; the client sends it as given.
    const done = await client.agents.messages.create(agent.id, body as { messages: [] });
    expect(done.stop_reason.stop_reason).toBe('end_turn');

    expect(await mcp.calls()).toEqual([
      {
        name: 'book_table',
        arguments: { date: '2026-12-24' },
        inputResponses: { booking: { action: 'accept', content } },
        requestState: expect.any(String),
        stateVerified: true,
      },
    ]);
    const toolReturn = String(stub.requests.at(-1)?.messages.at(-1)?.content);
    expect(toolReturn).toContain(`booked on 2026-12-24: ${JSON.stringify(content).replace(/"/g, '\\"')}`);
  });

  /** An answer to the pause of `callId`, the model (stub) saying what the tool returned if it ends. */
  function answer(agentId: string, callId: string, content?: Record<string, unknown>) {
    stub.enqueue((req: ChatRequest) => ({ text: `tool said: ${String(req.messages.at(-1)?.content)}` }));
    const approval = { type: 'approval', tool_call_id: callId, approve: true };
    const elicitation = content ? { elicitation_response: { content } } : {};
    const body = { messages: [{ type: 'approval', approvals: [{ ...approval, ...elicitation }] }] };
    return client.agents.messages.create(agentId, body as { messages: [] });
  }

  it('a step pauses once per call: a second question is declined, and the tool is called again with both answers', async () => {
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [toolId] });
    stub.enqueue({ toolCalls: [{ name: 'book_table', arguments: { date: '2027-02-14', dinner: true } }] });
    const first = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Book dinner on Valentine’s day.' }],
    });
    const request = first.messages.at(-1) as unknown as ApprovalRequest;
    expect(request.elicitations).toEqual([
      expect.objectContaining({ message: 'Who is the table on 2027-02-14 for?' }),
    ]);
    const called = (await mcp.calls()).length;

    const done = await answer(agent.id, request.tool_call.tool_call_id, { name: 'Cy' });
    expect(done.stop_reason.stop_reason).toBe('end_turn');
    expect((await mcp.calls()).slice(called)).toEqual([
      expect.objectContaining({
        inputResponses: {
          booking: { action: 'accept', content: { name: 'Cy', guests: 2 } },
          diet: { action: 'decline' },
        },
        stateVerified: true,
      }),
    ]);
    expect(String(stub.requests.at(-1)?.messages.at(-1)?.content)).toContain('diet: decline');
  });

  it('a direct run answers the question at once, as its elicitation_response says', async () => {
    const run = await fetch(`${apiUrl(env)}/v1/mcp-servers/${serverId}/tools/${toolId}/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        args: { date: '2027-01-01' },
        elicitation_response: { content: { name: 'Bo' } },
      }),
    });
    expect(run.status).toBe(200);
    expect(await run.json()).toEqual(
      expect.objectContaining({
        status: 'success',
        func_return: 'booked on 2027-01-01: {"name":"Bo","guests":2}',
      }),
    );
  });
});
