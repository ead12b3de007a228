import type Letta from '@letta-ai/letta-client';
import { useAgentServer } from './helpers/agent-server';
import { eventually } from './helpers/eventually';
import { startNoticeReceiver } from './helpers/notice-receiver';

/** A receiver of approval notices: each body, parsed, with when it came. */
const PAY_SOURCE =
  'def pay(amount: int) -> str:\n    """Pays an amount.\n\n    Args:\n        amount: how much\n    """\n    return f"paid {amount}"\n';
const READ_DATA_SOURCE =
  'def read_data(path: str) -> str:\n    """Reads a file.\n\n    Args:\n        path: which file\n    """\n    return f"read {path}"\n';

const startNotices = () => startNoticeReceiver<{ event: string; approval_request_id: string }>();

/** The approval request a paused response ends with. */
interface ApprovalRequest {
  id: string;
  tool_call: { tool_call_id: string; name: string; arguments: string };
  tool_calls: { tool_call_id: string; name: string; arguments: string }[];
}

/** updateApproval's parameters with this server's policy fields (beyond Letta's). */
type PolicyParams = Letta.Agents.ToolUpdateApprovalParams & Record<string, unknown>;

describe('approval policies: always, never, or when the arguments match a rule', () => {
  const receiver: { current?: Awaited<ReturnType<typeof startNotices>> } = {};
  const env: Record<string, string> = { OUTBOUND_ALLOW_PRIVATE: '127.0.0.1' };
  beforeAll(async () => {
    receiver.current = await startNotices();
    env.APPROVAL_WEBHOOK_URL = receiver.current.url;
  });
  afterAll(() => receiver.current?.close());
  const h = useAgentServer('openai', env);
  const notices = (requestId: string) =>
    receiver.current!.notices.filter((n) => n.approval_request_id === requestId);

  let toolIds: string[];
  beforeAll(async () => {
    const tools = await Promise.all(
      [PAY_SOURCE, READ_DATA_SOURCE].map((source) => h.client.tools.create({ source_code: source })),
    );
    toolIds = tools.map((t) => t.id);
  });

  const createAgent = (extra: Record<string, unknown> = {}) =>
    h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: toolIds, ...extra });
  const setPolicy = (agentId: string, toolName: string, policy: Record<string, unknown>) =>
    h.client.agents.tools.updateApproval(toolName, {
      agent_id: agentId,
      body_requires_approval: true,
      ...policy,
    } as PolicyParams);
  const send = (agentId: string, content: string) =>
    h.client.agents.messages.create(agentId, { messages: [{ role: 'user', content }] });
  const approvalRequestOf = (response: { messages: unknown[] }) =>
    response.messages.find(
      (m) => (m as { message_type: string }).message_type === 'approval_request_message',
    ) as ApprovalRequest | undefined;

  it('lets a harmless call through without a pause and stops a risky one', async () => {
    const agent = await createAgent();
    await setPolicy(agent.id, 'pay', { when: [{ argument: 'amount', op: 'gt', value: 100 }] });
    await setPolicy(agent.id, 'read_data', {
      when: [{ argument: 'path', op: 'outside_folder', value: '/data' }],
    });
    expect((await h.client.agents.retrieve(agent.id)).tool_rules).toEqual(
      expect.arrayContaining([
        {
          type: 'requires_approval',
          tool_name: 'pay',
          when: [{ argument: 'amount', op: 'gt', value: 100 }],
        },
      ]),
    );

    h.stub.enqueue({ toolCalls: [{ name: 'pay', arguments: { amount: 5 } }] }, { text: 'Paid 5.' });
    const harmless = await send(agent.id, 'Pay 5');
    expect(harmless.stop_reason.stop_reason).toBe('end_turn');
    expect(harmless.messages).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          message_type: 'tool_return_message',
          tool_return: 'paid 5',
          status: 'success',
        }),
      ]),
    );

    h.stub.enqueue({ toolCalls: [{ name: 'pay', arguments: { amount: 500 } }] });
    const risky = await send(agent.id, 'Pay 500');
    expect(risky.stop_reason.stop_reason).toBe('requires_approval');
    expect(approvalRequestOf(risky)?.tool_call).toMatchObject({ name: 'pay', arguments: '{"amount":500}' });
    const denied = await h.client.agents.messages.create(agent.id, {
      messages: [
        {
          type: 'approval',
          approvals: [
            {
              type: 'approval',
              tool_call_id: approvalRequestOf(risky)!.tool_call.tool_call_id,
              approve: false,
              reason: 'too much',
            },
          ],
        },
      ],
    });
    expect(denied.messages[0]).toMatchObject({ message_type: 'tool_return_message', status: 'error' });

    h.stub.enqueue(
      { toolCalls: [{ name: 'read_data', arguments: { path: '/data/x.txt' } }] },
      { text: 'Read.' },
    );
    const inside = await send(agent.id, 'Read /data/x.txt');
    expect(inside.stop_reason.stop_reason).toBe('end_turn');
    expect(inside.messages).toEqual(
      expect.arrayContaining([expect.objectContaining({ tool_return: 'read /data/x.txt' })]),
    );

    h.stub.enqueue({ toolCalls: [{ name: 'read_data', arguments: { path: '/data/../etc/passwd' } }] });
    const escaping = await send(agent.id, 'Read /data/../etc/passwd');
    expect(escaping.stop_reason.stop_reason).toBe('requires_approval');
    expect(approvalRequestOf(escaping)?.tool_call.name).toBe('read_data');
  });

  it('pauses only the risky calls of a reply; the others run once it is answered', async () => {
    const agent = await createAgent({
      parallel_tool_calls: true,
      tool_rules: [
        { type: 'requires_approval', tool_name: 'pay', when: [{ argument: 'amount', op: 'gt', value: 100 }] },
      ],
    });
    h.stub.enqueue({
      toolCalls: [
        { name: 'pay', arguments: { amount: 5 } },
        { name: 'pay', arguments: { amount: 500 } },
      ],
    });
    const paused = await send(agent.id, 'Pay 5 and 500');
    expect(paused.messages.map((m) => m.message_type)).toEqual([
      'tool_call_message',
      'approval_request_message',
    ]);
    const request = approvalRequestOf(paused)!;
    expect(request.tool_calls).toEqual([expect.objectContaining({ arguments: '{"amount":500}' })]);

    h.stub.enqueue({ text: 'Both paid.' });
    const answered = await h.client.agents.messages.create(agent.id, {
      messages: [{ type: 'approval', approval_request_id: request.tool_call.tool_call_id, approve: true }],
    });
    const returns = (answered.messages[0] as unknown as { tool_returns: { tool_return: string }[] })
      .tool_returns;
    expect(returns.map((r) => r.tool_return)).toEqual(['paid 5', 'paid 500']);
  });

  it('streams a call whose policy reads its arguments whole, as what it turned out to be', async () => {
    const agent = await createAgent({
      tool_rules: [
        { type: 'requires_approval', tool_name: 'pay', when: [{ argument: 'amount', op: 'gt', value: 100 }] },
      ],
    });
    /** The call and approval chunks of a streamed turn whose model calls pay(amount), then says `then`. */
    const streamedCalls = async (amount: number, ...then: { text: string }[]) => {
      h.stub.enqueue({ toolCalls: [{ name: 'pay', arguments: { amount } }] }, ...then);
      const stream = await h.client.agents.messages.create(agent.id, {
        messages: [{ role: 'user', content: `Pay ${amount}` }],
        streaming: true,
        stream_tokens: true,
      });
      const chunks: { message_type: string; tool_call?: { arguments: string } }[] = [];
      for await (const chunk of stream) chunks.push(chunk as (typeof chunks)[number]);
      return chunks
        .filter((c) => ['tool_call_message', 'approval_request_message'].includes(c.message_type))
        .map((c) => [c.message_type, c.tool_call?.arguments]);
    };
    expect(await streamedCalls(5, { text: 'Paid.' })).toEqual([['tool_call_message', '{"amount":5}']]);
    expect(await streamedCalls(500)).toEqual([['approval_request_message', '{"amount":500}']]);
  });

  it('expires at the tool’s own timeout, though the agent’s is longer', async () => {
    const agent = await createAgent({ approval_timeout_seconds: 3600 });
    await setPolicy(agent.id, 'pay', { approval_timeout_seconds: 2 });
    h.stub.enqueue({ toolCalls: [{ name: 'pay', arguments: { amount: 5 } }] }, { text: 'Nobody answered.' });
    const paused = await send(agent.id, 'Pay 5');
    const request = approvalRequestOf(paused)!;
    const [expired] = await eventually(
      async () => notices(request.id).filter((n) => n.event === 'approval_expired'),
      (found) => found.length > 0,
    );
    const requested = notices(request.id).find((n) => n.event === 'approval_requested')!;
    expect(expired.receivedAt - requested.receivedAt).toBeGreaterThanOrEqual(1_500);
    const history = await eventually(
      async () => (await h.client.agents.messages.list(agent.id, { order: 'asc' })).getPaginatedItems(),
      (messages) => messages.some((m) => m.message_type === 'tool_return_message'),
    );
    expect(history.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
      status: 'error',
      tool_return: expect.stringContaining('within the approval timeout of 2 seconds'),
    });
  });

  it('reminds after the tool’s reminder delay, then expires at its timeout', async () => {
    const agent = await createAgent();
    await setPolicy(agent.id, 'pay', { reminder_after_seconds: 1, approval_timeout_seconds: 3 });
    h.stub.enqueue({ toolCalls: [{ name: 'pay', arguments: { amount: 5 } }] }, { text: 'Nobody answered.' });
    const request = approvalRequestOf(await send(agent.id, 'Pay 5'))!;
    const sent = await eventually(
      async () => notices(request.id),
      (found) => found.some((n) => n.event === 'approval_expired'),
      15_000,
    );
    expect(sent.map((n) => n.event)).toEqual(['approval_requested', 'approval_reminder', 'approval_expired']);
    const [requested, reminder, expired] = sent;
    expect(reminder).toMatchObject({ pending: true, tool_calls: [expect.objectContaining({ name: 'pay' })] });
    expect(reminder.receivedAt - requested.receivedAt).toBeGreaterThanOrEqual(500);
    expect(expired.receivedAt - requested.receivedAt).toBeGreaterThanOrEqual(2_500);
  });

  it('refuses conditions it cannot read: a clear 422, at the route and on the agent', async () => {
    const agent = await createAgent();
    const patch = (body: unknown) =>
      fetch(`${h.server.url}/v1/agents/${agent.id}/tools/approval/pay`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    for (const when of [
      [{ argument: 'amount', op: 'greater', value: 100 }],
      [{ argument: 'amount', op: 'gt', value: 'a hundred' }],
      [{ argument: 'to', op: 'matches', value: '(a+)+$' }],
      [{ argument: 'path', op: 'outside_folder', value: 'data' }],
      [],
    ]) {
      const refused = await patch({ requires_approval: true, when });
      expect(refused.status).toBe(422);
      const { detail } = (await refused.json()) as { detail: { loc: string[]; msg: string }[] };
      expect(detail[0].loc.slice(0, 2)).toEqual(['body', 'when']);
    }
    const withoutApproval = await patch({ requires_approval: false, approval_timeout_seconds: 5 });
    expect(withoutApproval.status).toBe(422);
    expect(await withoutApproval.json()).toEqual({
      detail: 'when, approval_timeout_seconds and reminder_after_seconds need requires_approval',
    });
    await expect(
      createAgent({
        tool_rules: [
          { type: 'requires_approval', tool_name: 'pay', when: [{ argument: 'amount', op: 'gt' }] },
        ],
      }),
    ).rejects.toMatchObject({ status: 422 });
    expect((await h.client.agents.retrieve(agent.id)).tool_rules).toEqual([]);
  });
});
