import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChatRequest } from './helpers/openai-stub';
import { useAgentServer } from './helpers/agent-server';
import { eventually } from './helpers/eventually';
import { connectTemporalClient, turnWorkflowId, finishedTurnHistory } from './helpers/temporal';

const READ_LOCAL_FILE = {
  name: 'read_local_file',
  description: 'Reads a file on the user machine and returns its text.',
  parameters: {
    type: 'object',
    properties: { path: { type: 'string', description: 'Absolute path of the file' } },
    required: ['path'],
  },
};

/** The returns the model was shown last, by tool call id: what it knows of the tools' results. */
const toolReturnsSeen = (request: ChatRequest) =>
  Object.fromEntries(
    request.messages
      .filter((m) => m.role === 'tool')
      .map((m) => [m.tool_call_id, JSON.parse(m.content as string) as { status: string; message: string }]),
  );

/** The approval request a paused response ends with. */
interface ApprovalRequest {
  id: string;
  run_id: string;
  message_type: string;
  tool_call: { tool_call_id: string; name: string; arguments: string };
  tool_calls: { tool_call_id: string; name: string; arguments: string }[];
}
const approvalRequestOf = (response: { messages: unknown[] }) => response.messages.at(-1) as ApprovalRequest;

describe('client-side tools and approvals: durable pauses answered by a signal', () => {
  const h = useAgentServer('openai');
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'letta-approvals-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const createAgent = (extra: Record<string, unknown> = {}) =>
    h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
      ...extra,
    });

  it('pauses on a client tool, takes the client’s tool return, and goes on (the seed scenario)', async () => {
    const file = path.join(dir, 'notes.txt');
    writeFileSync(file, 'The launch code is PELICAN-42.');
    const agent = await createAgent();
    h.stub.enqueue({
      text: 'Let me read it.',
      toolCalls: [{ name: 'read_local_file', arguments: { path: file } }],
    });

    const first = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: `What does ${file} say?` }],
      client_tools: [READ_LOCAL_FILE],
    });
    expect(first.stop_reason.stop_reason).toBe('requires_approval');
    const request = approvalRequestOf(first);
    expect(request.message_type).toBe('approval_request_message');
    expect(first.messages.map((m) => m.message_type)).toEqual([
      'assistant_message',
      'approval_request_message',
    ]);
    const run = await h.client.runs.retrieve(request.run_id);
    expect(run).toMatchObject({ status: 'completed', stop_reason: 'requires_approval' });

    // The client runs its tool itself, on its own machine, and answers with the result.
    const text = readFileSync(JSON.parse(request.tool_call.arguments).path, 'utf8');
    h.stub.enqueue((req) => ({
      text: `It says: ${toolReturnsSeen(req)[request.tool_call.tool_call_id].message}`,
    }));
    const second = await h.client.agents.messages.create(agent.id, {
      messages: [
        {
          type: 'approval',
          approvals: [
            {
              type: 'tool',
              tool_call_id: request.tool_call.tool_call_id,
              tool_return: text,
              status: 'success',
            },
          ],
        },
      ],
      client_tools: [READ_LOCAL_FILE],
    });
    expect(second.stop_reason.stop_reason).toBe('end_turn');
    expect(second.messages[0]).toMatchObject({
      message_type: 'tool_return_message',
      tool_return: 'The launch code is PELICAN-42.',
      status: 'success',
    });
    expect(second.messages.at(-1)).toMatchObject({
      message_type: 'assistant_message',
      content: 'It says: The launch code is PELICAN-42.',
    });
    expect(second.messages[0].run_id).not.toBe(request.run_id);

    const history = (await h.client.agents.messages.list(agent.id, { order: 'asc' })).getPaginatedItems();
    expect(history.map((m) => m.message_type)).toEqual([
      'system_message',
      'user_message',
      'assistant_message',
      'approval_request_message',
      'approval_response_message',
      'tool_return_message',
      'assistant_message',
    ]);
  });

  it('lets a client tool override a server tool of the same name, offered even where rules restrict', async () => {
    const agent = await createAgent({ tool_rules: [{ type: 'run_first', tool_name: 'memory_insert' }] });
    const clientSearch = { name: 'conversation_search', description: 'Search on the client' };
    h.stub.enqueue({ toolCalls: [{ name: 'conversation_search', arguments: { query: 'x' } }] });
    const before = h.stub.requests.length;
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Search' }],
      client_tools: [clientSearch],
    });
    const offered = h.stub.requests[before].tools!.map((t) => t.function);
    expect(offered.map((t) => t.name)).toEqual(['memory_insert', 'conversation_search']);
    expect(offered[1]).toMatchObject({
      description: 'Search on the client',
      parameters: { type: 'object', properties: {} },
    });
    expect(response.stop_reason.stop_reason).toBe('requires_approval');
  });

  it('refuses answers that do not fit, and a new message while a call waits', async () => {
    const agent = await createAgent();
    h.stub.enqueue({ toolCalls: [{ name: 'read_local_file', arguments: { path: '/etc/hostname' } }] });
    const first = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Read my hostname' }],
      client_tools: [READ_LOCAL_FILE],
    });
    const request = approvalRequestOf(first);
    const callId = request.tool_call.tool_call_id;

    const wrong = h.client.agents.messages.create(agent.id, {
      messages: [
        {
          type: 'approval',
          approvals: [{ type: 'tool', tool_call_id: 'call_nope', tool_return: 'x', status: 'success' }],
        },
      ],
    });
    await expect(wrong).rejects.toMatchObject({
      status: 400,
      error: { detail: `Invalid tool call IDs. Expected '['${callId}']', but received '['call_nope']'.` },
    });

    const busy = await fetch(`${h.server.url}/v1/agents/${agent.id}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Hello?' }] }),
    });
    expect(busy.status).toBe(409);
    expect(busy.headers.get('x-should-retry')).toBe('false');
    expect(await busy.json()).toEqual({
      detail: {
        code: 'PENDING_APPROVAL',
        message:
          'Cannot send a new message: The agent is waiting for approval on a tool call. Please approve or deny the pending request before continuing.',
        pending_request_id: request.id,
      },
    });

    const answer = {
      messages: [
        {
          type: 'approval' as const,
          approvals: [
            {
              type: 'tool' as const,
              tool_call_id: callId,
              tool_return: 'host-1',
              status: 'success' as const,
            },
          ],
        },
      ],
    };
    h.stub.enqueue({ text: 'Your host is host-1.' });
    const answered = await h.client.agents.messages.create(agent.id, answer);
    expect(answered.stop_reason.stop_reason).toBe('end_turn');

    // A client retrying the same answer gets the same continuation; nothing runs or is stored twice.
    const before = h.stub.requests.length;
    const again = await h.client.agents.messages.create(agent.id, answer);
    expect(again.messages.map((m) => m.id)).toEqual(answered.messages.map((m) => m.id));
    expect(h.stub.requests.length).toBe(before);
    const history = (await h.client.agents.messages.list(agent.id, { order: 'asc' })).getPaginatedItems();
    expect(history.filter((m) => m.message_type === 'approval_response_message')).toHaveLength(1);
    expect(history.filter((m) => m.message_type === 'tool_return_message')).toHaveLength(1);

    // A different answer to the call already answered conflicts with the first: 409, nothing stored.
    const conflicting = h.client.agents.messages.create(agent.id, {
      messages: [
        {
          type: 'approval',
          approvals: [{ type: 'tool', tool_call_id: callId, tool_return: 'host-2', status: 'success' }],
        },
      ],
    });
    await expect(conflicting).rejects.toMatchObject({
      status: 409,
      error: {
        detail:
          'Cannot process approval response: The tool call was already answered differently. Send the same answer again, or a regular message to go on.',
      },
    });
    expect(h.stub.requests.length).toBe(before);
    expect(
      (await h.client.agents.messages.list(agent.id, { order: 'asc' })).getPaginatedItems(),
    ).toHaveLength(history.length);

    // With nothing pending, any other approval is refused.
    await expect(
      h.client.agents.messages.create(agent.id, {
        messages: [
          { type: 'approval', approvals: [{ type: 'approval', tool_call_id: 'call_other', approve: true }] },
        ],
      }),
    ).rejects.toMatchObject({
      status: 400,
      error: {
        detail:
          'Cannot process approval response: No tool call is currently awaiting approval. Please send a regular message to interact with the agent.',
      },
    });
  });

  const insertTea = { name: 'memory_insert', arguments: { label: 'human', new_str: 'Likes tea' } };
  const humanBlock = async (agentId: string) =>
    (await h.client.agents.blocks.retrieve('human', { agent_id: agentId })).value;

  it('takes a client return and an approval for one reply in one answer, and both reach the model', async () => {
    const agent = await createAgent({ parallel_tool_calls: true });
    await h.client.agents.tools.updateApproval('memory_insert', {
      agent_id: agent.id,
      body_requires_approval: true,
    });
    expect((await h.client.agents.retrieve(agent.id)).tool_rules).toEqual([
      { type: 'requires_approval', tool_name: 'memory_insert' },
    ]);
    h.stub.enqueue({
      toolCalls: [{ name: 'read_local_file', arguments: { path: '/tmp/x' } }, insertTea],
    });
    const first = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Read /tmp/x, and remember I like tea' }],
      client_tools: [READ_LOCAL_FILE],
    });
    const request = approvalRequestOf(first);
    expect(request.tool_calls.map((c) => c.name)).toEqual(['read_local_file', 'memory_insert']);
    const [readCall, insertCall] = request.tool_calls.map((c) => c.tool_call_id);

    let seen: Record<string, { status: string; message: string }> = {};
    h.stub.enqueue((req) => ((seen = toolReturnsSeen(req)), { text: 'Done both.' }));
    const second = await h.client.agents.messages.create(agent.id, {
      messages: [
        {
          type: 'approval',
          approvals: [
            { type: 'tool', tool_call_id: readCall, tool_return: 'file text', status: 'success' },
            { type: 'approval', tool_call_id: insertCall, approve: true },
          ],
        },
      ],
      client_tools: [READ_LOCAL_FILE],
    });
    expect(second.stop_reason.stop_reason).toBe('end_turn');
    const returns = (
      second.messages[0] as unknown as { tool_returns: { tool_call_id: string; status: string }[] }
    ).tool_returns;
    expect(returns.map((r) => [r.tool_call_id, r.status])).toEqual([
      [readCall, 'success'],
      [insertCall, 'success'],
    ]);
    expect(seen[readCall].message).toBe('file text');
    expect(seen[insertCall].message).toBe('Name: Alice\nLikes tea');
    expect(await humanBlock(agent.id)).toBe('Name: Alice\nLikes tea');
  });

  it('runs the calls of a reply that need no approval when the others are answered', async () => {
    const agent = await createAgent({
      parallel_tool_calls: true,
      tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
    });
    h.stub.enqueue({
      toolCalls: [{ name: 'conversation_search', arguments: { query: 'tea' } }, insertTea],
    });
    const first = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Search, then remember tea' }],
    });
    expect(first.messages.map((m) => m.message_type)).toEqual([
      'tool_call_message',
      'approval_request_message',
    ]);
    const insertCall = approvalRequestOf(first).tool_call.tool_call_id;
    h.stub.enqueue({ text: 'ok' });
    const second = await h.client.agents.messages.create(agent.id, {
      messages: [{ type: 'approval', approval_request_id: insertCall, approve: true }],
    });
    const returns = (second.messages[0] as unknown as { tool_returns: { status: string }[] }).tool_returns;
    expect(returns.map((r) => r.status)).toEqual(['success', 'success']);
    expect(await humanBlock(agent.id)).toBe('Name: Alice\nLikes tea');
  });

  it("accepts Letta's legacy answer forms: tool_return messages, and the request's message id", async () => {
    const agent = await createAgent();
    h.stub.enqueue({ toolCalls: [{ name: 'read_local_file', arguments: { path: '/a' } }] }, { text: 'ok' });
    const first = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Read /a' }],
      client_tools: [READ_LOCAL_FILE],
    });
    const call = approvalRequestOf(first).tool_call.tool_call_id;
    const second = await h.client.agents.messages.create(agent.id, {
      messages: [
        {
          type: 'tool_return',
          tool_returns: [{ type: 'tool', tool_call_id: call, tool_return: 'legacy text', status: 'success' }],
        },
      ],
    } as unknown as { messages: { role: 'user'; content: string }[] });
    expect(second.messages[0]).toMatchObject({ tool_return: 'legacy text' });

    const third = await createAgent({
      tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
    });
    h.stub.enqueue({ toolCalls: [insertTea] }, { text: 'ok' });
    const paused = await h.client.agents.messages.create(third.id, {
      messages: [{ role: 'user', content: 'Remember tea' }],
    });
    const request = approvalRequestOf(paused);
    const answered = await h.client.agents.messages.create(third.id, {
      messages: [{ type: 'approval', approve: true, approval_request_id: request.id }],
    });
    expect(answered.messages[0]).toMatchObject({ message_type: 'tool_return_message', status: 'success' });
    expect(await humanBlock(third.id)).toBe('Name: Alice\nLikes tea');
  });

  it('sets approval per tool from the body, the TS client’s body field, or the query', async () => {
    const agent = await createAgent();
    const patch = (query: string, body?: unknown) =>
      fetch(`${h.server.url}/v1/agents/${agent.id}/tools/approval/memory_insert${query}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const rules = async () => (await h.client.agents.retrieve(agent.id)).tool_rules;
    expect((await patch('', { requires_approval: true })).status).toBe(200);
    expect(await rules()).toEqual([{ type: 'requires_approval', tool_name: 'memory_insert' }]);
    expect((await patch('?requires_approval=false')).status).toBe(200);
    expect(await rules()).toEqual([]);
    expect((await patch('', {})).status).toBe(422);
    expect((await patch('', { requires_approval: true, extra: 1 })).status).toBe(422);
    const unknown = await fetch(`${h.server.url}/v1/agents/${agent.id}/tools/approval/no_such_tool`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ requires_approval: true }),
    });
    expect(unknown.status).toBe(404);
  });

  it('turns a denial into an error return with the reason, and the turn goes on', async () => {
    const agent = await createAgent({
      tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
    });
    h.stub.enqueue({ toolCalls: [insertTea] });
    const first = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Remember tea' }],
    });
    const call = approvalRequestOf(first).tool_call.tool_call_id;
    h.stub.enqueue({ text: 'Understood, I will not.' });
    const second = await h.client.agents.messages.create(agent.id, {
      messages: [
        {
          type: 'approval',
          approvals: [{ type: 'approval', tool_call_id: call, approve: false, reason: 'not now' }],
        },
        { role: 'user', content: 'Sorry, maybe later.' },
      ],
    });
    expect(second.messages[0]).toMatchObject({
      message_type: 'tool_return_message',
      status: 'error',
      tool_return: 'Error: request to call tool denied. User reason: not now',
    });
    expect(await humanBlock(agent.id)).toBe('Name: Alice');
    // The follow-up message reaches the model after the returns.
    const last = h.stub.requests.at(-1)!;
    expect(last.messages.slice(-2).map((m) => m.role)).toEqual(['tool', 'user']);
    expect(last.messages.at(-1)?.content).toBe('Sorry, maybe later.');
  });

  it('streams the continuation after an answer', async () => {
    const agent = await createAgent({
      tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
    });
    h.stub.enqueue({ toolCalls: [insertTea] });
    const stream = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Remember tea' }],
      streaming: true,
    });
    const chunks: { message_type: string; tool_call?: { tool_call_id: string } }[] = [];
    for await (const chunk of stream) chunks.push(chunk as (typeof chunks)[number]);
    expect(chunks.map((c) => c.message_type)).toEqual([
      'ping',
      'approval_request_message',
      'stop_reason',
      'usage_statistics',
    ]);
    const call = chunks[1].tool_call!.tool_call_id;
    h.stub.enqueue({ text: 'Saved.' });
    const continuation = await h.client.agents.messages.create(agent.id, {
      messages: [{ type: 'approval', approvals: [{ type: 'approval', tool_call_id: call, approve: true }] }],
      streaming: true,
    });
    const types: string[] = [];
    for await (const chunk of continuation) types.push(String(chunk.message_type));
    expect(types).toEqual([
      'ping',
      'tool_return_message',
      'assistant_message',
      'stop_reason',
      'usage_statistics',
    ]);
  });

  it('shows what a paused turn waits for: agent, run, and the Temporal UI', async () => {
    const agent = await createAgent({
      tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
    });
    h.stub.enqueue({ toolCalls: [insertTea] });
    const first = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Remember tea' }],
      approval_timeout_seconds: 3600,
    } as { messages: { role: 'user'; content: string }[] });
    const request = approvalRequestOf(first);
    const call = request.tool_call.tool_call_id;

    const state = await h.client.agents.retrieve(agent.id, { include: ['agent.pending_approval'] });
    const pending = state.pending_approval as unknown as ApprovalRequest & {
      requested_at: string;
      expires_at: string;
    };
    expect(pending).toMatchObject({ id: request.id, message_type: 'approval_request_message' });
    expect(Date.parse(pending.expires_at) - Date.parse(pending.requested_at)).toBe(3_600_000);
    const run = (await (await fetch(`${h.server.url}/v1/runs/${request.run_id}`)).json()) as {
      pending_approval: { tool_calls: { tool_call_id: string }[]; expires_at: string };
    };
    expect(run.pending_approval.tool_calls.map((c) => c.tool_call_id)).toEqual([call]);

    const temporal = await connectTemporalClient();
    try {
      const handle = temporal.client.workflow.getHandle(await turnWorkflowId(h.server.db, request.run_id));
      const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      expect(metadata.currentDetails).toBe(`Waiting for approval of memory_insert (${call})`);

      h.stub.enqueue({ text: 'Saved.' });
      await h.client.agents.messages.create(agent.id, {
        messages: [
          { type: 'approval', approvals: [{ type: 'approval', tool_call_id: call, approve: true }] },
        ],
      });
      const events = await finishedTurnHistory(temporal.client, handle.workflowId);
      const signals = events.filter((e) => e.workflowExecutionSignaledEventAttributes);
      expect(signals.map((e) => e.workflowExecutionSignaledEventAttributes!.signalName)).toEqual([
        'approvalAnswered',
      ]);
      const payload = Buffer.from(
        signals[0].workflowExecutionSignaledEventAttributes!.input!.payloads![0].data!,
      ).toString();
      expect(JSON.parse(payload)).toMatchObject({ toolCallIds: [call], requestMessageId: request.id });
      expect(
        (await h.client.agents.retrieve(agent.id, { include: ['agent.pending_approval'] })).pending_approval,
      ).toBeNull();
    } finally {
      await temporal.close();
    }
  });

  it('denies every pending call with Letta’s cancel text when a paused turn is cancelled', async () => {
    const agent = await createAgent({
      tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
    });
    h.stub.enqueue({ toolCalls: [insertTea] });
    const first = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Remember tea' }],
    });
    const request = approvalRequestOf(first);
    expect(await h.client.agents.messages.cancel(agent.id)).toEqual({ [request.run_id]: 'cancelled' });
    const run = await eventually(
      () => h.client.runs.retrieve(request.run_id),
      (r) => r.status === 'cancelled',
    );
    expect(run.stop_reason).toBe('cancelled');
    const history = (await h.client.agents.messages.list(agent.id, { order: 'asc' })).getPaginatedItems();
    expect(history.at(-1)).toMatchObject({
      message_type: 'tool_return_message',
      status: 'error',
      tool_return:
        'Error: request to call tool denied. User reason: The user cancelled the request, so the tool call was denied.',
    });
    // Nothing waits any more: a new message starts a new turn.
    h.stub.enqueue({ text: 'Fresh start.' });
    const next = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(next.stop_reason.stop_reason).toBe('end_turn');
  });

  it('denies the pending calls when the approval timeout passes, and the turn goes on by itself', async () => {
    const agent = await createAgent({
      approval_timeout_seconds: 1,
      tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
    } as Record<string, unknown>);
    h.stub.enqueue({ toolCalls: [insertTea] }, { text: 'Nobody answered, so I did not save it.' });
    const first = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Remember tea' }],
    });
    expect(first.stop_reason.stop_reason).toBe('requires_approval');
    const timeoutRun = await eventually(
      async () =>
        (await h.client.runs.list({ agent_id: agent.id }))
          .getPaginatedItems()
          .find((r) => (r.metadata as { run_type?: string } | null)?.run_type === 'approval_timeout'),
      (r) => r?.status === 'completed',
    );
    expect(timeoutRun?.stop_reason).toBe('end_turn');
    const messages = (await h.client.runs.messages.list(timeoutRun!.id)).getPaginatedItems();
    expect(messages.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
      status: 'error',
      tool_return: expect.stringMatching(
        /^Error: request to call tool denied\. User reason: No answer came within the approval timeout of 1 seconds/,
      ),
    });
    expect(await humanBlock(agent.id)).toBe('Name: Alice');
  });
});
