import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { useAgentServer } from './helpers/agent-server';
import { eventually } from './helpers/eventually';
import { SIGNATURE_HEADER, verifySignature } from '../src/agent/webhooks';

const SECRET = 'a-webhook-secret-for-tests';

interface Delivery {
  body: string;
  signature: string;
  answered: number;
}

/** A receiver of callbacks that answers 500 to the first `failures` deliveries, then 200. */
async function startReceiver(failures: number) {
  const deliveries: Delivery[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const answered = deliveries.length < failures ? 500 : 200;
      deliveries.push({ body, signature: String(req.headers[SIGNATURE_HEADER.toLowerCase()]), answered });
      res.writeHead(answered).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/letta`,
    deliveries,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('completion callbacks (callback_url)', () => {
  const h = useAgentServer('openai', {
    // The receiver is on loopback: an operator allows it, as any private address must be.
    OUTBOUND_ALLOW_PRIVATE: '127.0.0.1',
    WEBHOOK_SECRET: SECRET,
    WEBHOOK_RETRY_INITIAL_MS: '100',
    WEBHOOK_RETRY_MAX_MS: '200',
  });
  const createAgent = () =>
    h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Ann' }],
    });

  it('delivers the signed result exactly once to a receiver that fails its first two attempts', async () => {
    const receiver = await startReceiver(2);
    try {
      const agent = await createAgent();
      h.stub.enqueue({ text: 'Done in the background.' });
      const run = await h.client.agents.messages.createAsync(agent.id, {
        messages: [{ role: 'user', content: 'Work on it' }],
        callback_url: receiver.url,
      });
      expect(run.callback_url).toBe(receiver.url);
      const deliveries = await eventually(
        async () => receiver.deliveries,
        (all) => all.some((d) => d.answered === 200),
      );
      await new Promise((resolve) => setTimeout(resolve, 1_000)); // nothing more comes
      expect(deliveries.map((d) => d.answered)).toEqual([500, 500, 200]);
      const last = deliveries[2];
      expect(verifySignature(SECRET, last.signature, last.body)).toBe(true);
      expect(verifySignature('another-secret-entirely', last.signature, last.body)).toBe(false);
      expect(verifySignature(SECRET, last.signature, last.body.replace('Done', 'Undone'))).toBe(false);
      const payload = JSON.parse(last.body);
      expect(payload).toMatchObject({ run_id: run.id, status: 'completed' });
      expect(payload.metadata.result.stop_reason).toMatchObject({ stop_reason: 'end_turn' });
      expect(payload.metadata.result.messages).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ message_type: 'assistant_message', content: 'Done in the background.' }),
        ]),
      );
      const stored = await h.client.runs.retrieve(run.id);
      expect(stored).toMatchObject({ callback_status_code: 200, callback_error: null });
      expect(stored.callback_sent_at).toBeTruthy();
    } finally {
      await receiver.close();
    }
  });

  it('calls back when the run pauses for approval', async () => {
    const receiver = await startReceiver(0);
    try {
      const agent = await createAgent();
      const lookup = { name: 'lookup', parameters: { type: 'object', properties: {} } };
      h.stub.enqueue({ toolCalls: [{ name: 'lookup', arguments: {} }] });
      const run = await h.client.agents.messages.createAsync(agent.id, {
        messages: [{ role: 'user', content: 'Look it up' }],
        client_tools: [lookup],
        callback_url: receiver.url,
      });
      const [delivery] = await eventually(
        async () => receiver.deliveries,
        (all) => all.length > 0,
      );
      expect(JSON.parse(delivery.body).metadata.result.stop_reason).toMatchObject({
        stop_reason: 'requires_approval',
      });
      expect((await h.client.runs.retrieve(run.id)).callback_status_code).toBe(200);
    } finally {
      await receiver.close();
    }
  });

  it('refuses a callback to a private address no operator allowed, or that is not http', async () => {
    const agent = await createAgent();
    for (const url of [
      'http://169.254.169.254/latest/meta-data',
      'http://10.1.2.3/hook',
      'file:///etc/passwd',
    ]) {
      await expect(
        h.client.agents.messages.createAsync(agent.id, {
          messages: [{ role: 'user', content: 'Hi' }],
          callback_url: url,
        }),
      ).rejects.toMatchObject({ status: 400 });
    }
  });
});

describe('approval notices (APPROVAL_WEBHOOK_URL, an agent’s metadata.approval_webhook_url)', () => {
  // The server-wide receiver's URL is known once it listens, before the server starts.
  const env: Record<string, string> = { OUTBOUND_ALLOW_PRIVATE: '127.0.0.1', WEBHOOK_SECRET: SECRET };
  let serverWide: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    serverWide = await startReceiver(0);
    env.APPROVAL_WEBHOOK_URL = serverWide.url;
  });
  afterAll(() => serverWide?.close());
  const h = useAgentServer('openai', env);
  const lookup = {
    name: 'lookup_order',
    parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
  };
  const notices = (receiver: { deliveries: Delivery[] }, event: string) =>
    receiver.deliveries.map((d) => JSON.parse(d.body)).filter((body) => body.event === event);

  it('tells the agent’s own webhook of a pause, with its calls and the answer to send, signed', async () => {
    const own = await startReceiver(0);
    try {
      const agent = await h.client.agents.create({
        model: 'openai/gpt-4o-mini',
        metadata: { approval_webhook_url: own.url },
      });
      h.stub.enqueue(
        { toolCalls: [{ name: 'lookup_order', arguments: { order: 'A-7' } }] },
        { text: 'Shipped.' },
      );
      const paused = await h.client.agents.messages.create(agent.id, {
        messages: [{ role: 'user', content: 'Where is A-7?' }],
        client_tools: [lookup],
      });
      expect(paused.stop_reason.stop_reason).toBe('requires_approval');
      const [notice] = await eventually(
        async () => notices(own, 'approval_requested'),
        (found) => found.length > 0,
      );
      expect(verifySignature(SECRET, own.deliveries[0].signature, own.deliveries[0].body)).toBe(true);
      expect(notice).toMatchObject({
        agent_id: agent.id,
        pending: true,
        tool_calls: [{ name: 'lookup_order', arguments: '{"order":"A-7"}' }],
        answer: { method: 'POST', path: `/v1/agents/${agent.id}/messages` },
      });
      expect(notices(serverWide, 'approval_requested').filter((n) => n.agent_id === agent.id)).toEqual([]);
      // The answer the notice describes, sent as it is (with the client's return instead of approve).
      const callId = notice.tool_calls[0].tool_call_id;
      const answered = await h.client.agents.messages.create(agent.id, {
        messages: [
          {
            type: 'approval',
            approvals: [{ type: 'tool', tool_call_id: callId, tool_return: 'in transit', status: 'success' }],
          },
        ],
      });
      expect(answered.stop_reason.stop_reason).toBe('end_turn');
    } finally {
      await own.close();
    }
  });

  it('refuses an agent webhook at a private address no operator allowed', async () => {
    await expect(
      h.client.agents.create({
        model: 'openai/gpt-4o-mini',
        metadata: { approval_webhook_url: 'http://169.254.169.254/hook' },
      }),
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining('approval_webhook_url') });
  });

  it('tells the server-wide webhook of a pause, and of its expiry', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    h.stub.enqueue(
      { toolCalls: [{ name: 'lookup_order', arguments: { order: 'B-9' } }] },
      { text: 'Gave up.' },
    );
    await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Where is B-9?' }],
      client_tools: [lookup],
      approval_timeout_seconds: 1, // beyond Letta's request fields
    } as Parameters<typeof h.client.agents.messages.create>[1]);
    const expired = await eventually(
      async () => notices(serverWide, 'approval_expired').filter((n) => n.agent_id === agent.id),
      (found) => found.length > 0,
    );
    const requested = notices(serverWide, 'approval_requested').filter((n) => n.agent_id === agent.id);
    expect(requested).toHaveLength(1);
    expect(expired).toEqual([
      expect.objectContaining({
        approval_request_id: requested[0].approval_request_id,
        tool_calls: [expect.objectContaining({ name: 'lookup_order' })],
      }),
    ]);
  });
});

describe('completion callbacks on the server’s defaults (no WEBHOOK_SECRET, the embedded database)', () => {
  const h = useAgentServer(
    'openai',
    { OUTBOUND_ALLOW_PRIVATE: '127.0.0.1', WEBHOOK_RETRY_INITIAL_MS: '100', WEBHOOK_RETRY_MAX_MS: '200' },
    'pglite',
  );

  it('delivers the callback signed with the secret the deployment made, as docs/operations.md reads it', async () => {
    const receiver = await startReceiver(0);
    try {
      const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
      h.stub.enqueue({ text: 'Done.' });
      const run = await h.client.agents.messages.createAsync(agent.id, {
        messages: [{ role: 'user', content: 'Work on it' }],
        callback_url: receiver.url,
      });
      const deliveries = await eventually(
        async () => receiver.deliveries,
        (all) => all.length > 0,
      );
      expect(deliveries).toHaveLength(1);
      const [delivery] = deliveries;
      const [{ secret }] = await h.server.db.query<{ secret: string }>(
        `SELECT value #>> '{}' AS secret FROM server_metadata WHERE key = 'webhook_secret'`,
      );
      expect(secret).toMatch(/^[0-9a-f]{64}$/);
      expect(verifySignature(secret, delivery.signature, delivery.body)).toBe(true);
      expect(JSON.parse(delivery.body)).toMatchObject({ run_id: run.id, status: 'completed' });
      expect((await h.client.runs.retrieve(run.id)).callback_status_code).toBe(200);
    } finally {
      await receiver.close();
    }
  });
});
