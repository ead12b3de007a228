/**
 * The approval inbox (an extension): what waits across agents, answers as people give them (one
 * request for a parallel reply's mixed decisions, edited arguments), the audit trail on the runs API,
 * and what a scoped token sees of it. Through the official client and the real server.
 */
import Letta from '@letta-ai/letta-client';
import type { ChatRequest } from './helpers/openai-stub';
import { useAgentServer } from './helpers/agent-server';
import { eventually } from './helpers/eventually';
import { startNoticeReceiver } from './helpers/notice-receiver';

const PASSWORD = 'inbox-password';

interface Waiting {
  id: string;
  approval_request_id: string;
  tool_call_id: string;
  tool_name: string;
  arguments: string;
  kind: string;
  agent_id: string;
  agent_name: string;
  run_id: string;
  tool_call_ids: string[];
  temporal_url: string | null;
  expires_at: string | null;
}

interface AuditCall {
  tool_call_id: string;
  decision: string | null;
  reason: string | null;
  edited_arguments: string | null;
  arguments: string;
}
interface AuditRecord {
  approval_request_id: string;
  status: string;
  answered_by: { kind: string; name?: string; id?: string } | null;
  answer_run_id: string | null;
  tool_calls: AuditCall[];
}

/** The returns the model was shown last, by tool call id. */
const returnsSeen = (request: ChatRequest) =>
  Object.fromEntries(
    request.messages
      .filter((m) => m.role === 'tool')
      .map((m) => [m.tool_call_id, (JSON.parse(m.content as string) as { message: string }).message]),
  );

describe('the approval inbox', () => {
  const h = useAgentServer('openai', {
    LETTA_SERVER_PASSWORD: PASSWORD,
    AUTH_FAILURE_LIMIT: '1000',
    TEMPORAL_UI_URL: 'http://127.0.0.1:8233/',
  });
  let admin: Letta;
  const api = (path: string, init: RequestInit & { token?: string; approver?: string } = {}) =>
    fetch(`${h.server.url}${path}`, {
      ...init,
      headers: {
        authorization: `Bearer ${init.token ?? PASSWORD}`,
        'content-type': 'application/json',
        ...(init.approver ? { 'x-letta-approver': init.approver } : {}),
      },
    });
  const inbox = async (query = '', token?: string) => {
    const response = await api(`/v1/approvals/${query}`, { token });
    expect(response.status).toBe(200);
    return (await response.json()) as Waiting[];
  };
  const auditOf = async (runId: string) =>
    ((await (await api(`/v1/runs/${runId}`)).json()) as { approvals: AuditRecord[] }).approvals;

  const insertCall = (text: string) => ({
    name: 'memory_insert',
    arguments: { label: 'human', new_string: text, insert_line: -1 },
  });
  const createAgent = (name: string, tags: string[] = []) =>
    admin.agents.create({
      name,
      model: 'openai/gpt-4o-mini',
      tags,
      parallel_tool_calls: true,
      memory_blocks: [{ label: 'human', value: `Human of ${name}` }],
      tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
    });
  const pause = async (agentId: string, calls: ReturnType<typeof insertCall>[]) => {
    h.stub.enqueue({ toolCalls: calls });
    const response = await admin.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'Remember these' }],
    });
    expect(response.stop_reason).toMatchObject({ stop_reason: 'requires_approval' });
  };
  const humanBlock = async (agentId: string) =>
    (await admin.agents.blocks.retrieve('human', { agent_id: agentId })).value;

  let trio: string;
  let solo: string;
  let other: string;
  beforeAll(async () => {
    admin = new Letta({ baseURL: h.server.url, apiKey: PASSWORD, maxRetries: 0 });
    trio = (await createAgent('trio', ['team-a'])).id;
    solo = (await createAgent('solo', ['team-a'])).id;
    other = (await createAgent('other', ['team-b'])).id;
    await pause(trio, [insertCall('one'), insertCall('two'), insertCall('three')]);
    await pause(solo, [insertCall('solo fact')]);
    await pause(other, [insertCall('other fact')]);
  });

  it('lists every waiting call across agents, newest first, filtered and paged', async () => {
    const all = await inbox();
    expect(all.map((w) => w.agent_name)).toEqual(['other', 'solo', 'trio', 'trio', 'trio']);
    const trios = all.filter((w) => w.agent_id === trio);
    expect(new Set(trios.map((w) => w.approval_request_id)).size).toBe(1);
    expect(trios[0].tool_call_ids).toHaveLength(3);
    expect(all[0]).toMatchObject({ tool_name: 'memory_insert', kind: 'approval', expires_at: null });
    expect(JSON.parse(all[0].arguments)).toMatchObject({ new_string: 'other fact' });
    expect(all[0].temporal_url).toMatch(/^http:\/\/127\.0\.0\.1:8233\/namespaces\/[^/]+\/workflows\/.+/);

    expect((await inbox(`?agent_id=${solo}`)).map((w) => w.agent_name)).toEqual(['solo']);
    expect((await inbox('?tag=team-a')).map((w) => w.agent_name)).toEqual(['solo', 'trio', 'trio', 'trio']);
    expect(await inbox('?tool_name=send_message')).toEqual([]);
    expect(await inbox('?newer_than_seconds=3600')).toHaveLength(5);
    expect(await inbox('?older_than_seconds=3600')).toEqual([]);

    // Letta's cursor paging visits each once, both ways.
    const first = await inbox('?limit=2');
    const rest = await inbox(`?limit=10&after=${first[1].id}`);
    expect([...first, ...rest].map((w) => w.id)).toEqual(all.map((w) => w.id));
    expect((await inbox(`?limit=2&before=${all[4].id}`)).map((w) => w.id)).toEqual(
      all.slice(2, 4).map((w) => w.id),
    );
    expect((await api('/v1/approvals/?limit=0')).status).toBe(422);
  });

  it('shows a pause with its context: memory as it was and the last messages', async () => {
    const [waiting] = await inbox(`?agent_id=${solo}`);
    await admin.agents.blocks.update('human', { agent_id: solo, value: 'changed since' });
    const detail = (await (await api(`/v1/approvals/${waiting.approval_request_id}`)).json()) as {
      status: string;
      blocks: { label: string; value: string }[];
      messages: { message_type: string }[];
      tool_calls: { parameters: { properties: Record<string, unknown> } }[];
    };
    expect(detail.status).toBe('pending');
    expect(detail.blocks).toContainEqual({ label: 'human', value: 'Human of solo' });
    expect(detail.messages.map((m) => m.message_type)).toEqual(
      expect.arrayContaining(['user_message', 'approval_request_message']),
    );
    expect(detail.messages.at(-1)?.message_type).toBe('approval_request_message');
    expect(Object.keys(detail.tool_calls[0].parameters.properties)).toContain('new_string');
    expect((await api('/v1/approvals/message-nope')).status).toBe(404);
  });

  it('answers a parallel reply in one request, each call its own way, one of them edited', async () => {
    const waiting = await inbox(`?agent_id=${trio}`);
    const [one, two, three] = waiting[0].tool_call_ids;
    const approvals = [
      { type: 'approval', tool_call_id: one, approve: true },
      { type: 'approval', tool_call_id: two, approve: false, reason: 'not that one' },
      {
        type: 'approval',
        tool_call_id: three,
        approve: true,
        arguments: { label: 'human', new_string: 'THREE (edited)', insert_line: -1 },
      },
    ];
    // Edited arguments are checked against the tool's parameters, and only an approval takes them.
    const misfit = [approvals[0], approvals[1], { ...approvals[2], arguments: { label: 7 } }];
    const refused = await api(`/v1/agents/${trio}/messages`, {
      method: 'POST',
      body: JSON.stringify({ messages: [{ type: 'approval', approvals: misfit }] }),
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { detail: string }).detail).toMatch(/do not fit memory_insert/);
    const onDenial = [approvals[0], { ...approvals[1], arguments: { label: 'human' } }, approvals[2]];
    const denied = await api(`/v1/agents/${trio}/messages`, {
      method: 'POST',
      body: JSON.stringify({ messages: [{ type: 'approval', approvals: onDenial }] }),
    });
    expect(denied.status).toBe(400);
    expect(await inbox(`?agent_id=${trio}`)).toHaveLength(3);

    h.stub.enqueue({ text: 'Done.' });
    const answer = await admin.agents.messages.create(trio, {
      messages: [{ type: 'approval', approvals } as never],
    });
    expect(answer.stop_reason).toMatchObject({ stop_reason: 'end_turn' });
    const seen = returnsSeen(h.stub.requests.at(-1)!);
    expect(seen[two]).toBe('Error: request to call tool denied. User reason: not that one');
    expect(seen[three]).toMatch(
      /^\[The approver changed the arguments before the call ran; it ran with .*THREE \(edited\)/,
    );
    const block = await humanBlock(trio);
    expect(block).toContain('one');
    expect(block).toContain('THREE (edited)');
    expect(block).not.toContain('two');
    expect(await inbox(`?agent_id=${trio}`)).toEqual([]);

    // The same answer again is a retry; another one conflicts.
    const again = await api(`/v1/approvals/${waiting[0].approval_request_id}/answer`, {
      method: 'POST',
      body: JSON.stringify({ approvals }),
    });
    expect(again.status).toBe(200);
    const otherAnswer = approvals.map((a) => ({ ...a, approve: false, arguments: undefined }));
    const conflict = await api(`/v1/approvals/${waiting[0].approval_request_id}/answer`, {
      method: 'POST',
      body: JSON.stringify({ approvals: otherAnswer }),
    });
    expect(conflict.status).toBe(409);

    const [record] = await auditOf(waiting[0].run_id);
    expect(record).toMatchObject({ status: 'answered', answered_by: { kind: 'password' } });
    expect(record.tool_calls.map((c) => [c.decision, c.reason])).toEqual([
      ['approved', null],
      ['denied', 'not that one'],
      ['approved', null],
    ]);
    expect(JSON.parse(record.tool_calls[2].edited_arguments!)).toMatchObject({
      new_string: 'THREE (edited)',
    });
    expect(JSON.parse(record.tool_calls[2].arguments)).toMatchObject({ new_string: 'three' });
    // The answer's run shows it too, and a reset of the messages keeps it.
    expect(await auditOf(record.answer_run_id!)).toEqual([record]);
    await admin.agents.messages.reset(trio, { add_default_initial_messages: false });
    expect(await auditOf(waiting[0].run_id)).toEqual([record]);
  });

  it('answers by the pause’s id, records who said they answered, and streams the changes', async () => {
    const controller = new AbortController();
    const stream = await fetch(`${h.server.url}/v1/approvals/stream`, {
      headers: { authorization: `Bearer ${PASSWORD}` },
      signal: controller.signal,
    });
    expect(stream.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    let events = '';
    const heard = async (text: string) => {
      while (!events.includes(text)) events += (await reader.read()).value ?? '';
    };

    const [waiting] = await inbox(`?agent_id=${solo}`);
    h.stub.enqueue({ text: 'Not remembered.' });
    const answered = await api(`/v1/approvals/${waiting.approval_request_id}/answer`, {
      method: 'POST',
      approver: 'Dana from support',
      body: JSON.stringify({
        approvals: [{ type: 'approval', tool_call_id: waiting.tool_call_id, approve: false, reason: 'no' }],
      }),
    });
    expect(answered.status).toBe(200);
    const { run_id } = (await answered.json()) as { run_id: string };
    await heard(`"approval_request_id":"${waiting.approval_request_id}","change":"answered"`);
    const run = await eventually(
      () => admin.runs.retrieve(run_id),
      (r) => r.status === 'completed',
    );
    expect(run.status).toBe('completed');
    const [record] = await auditOf(run_id);
    expect(record.answered_by).toEqual({ kind: 'password', name: 'Dana from support' });

    await pause(solo, [insertCall('later fact')]);
    const [next] = await inbox(`?agent_id=${solo}`);
    await heard(`"approval_request_id":"${next.approval_request_id}","change":"requested"`);
    controller.abort();
    // A page left open: the server's stop (afterAll) ends its stream rather than waiting for it.
    const leftOpen = await fetch(`${h.server.url}/v1/approvals/stream`, {
      headers: { authorization: `Bearer ${PASSWORD}` },
    });
    expect(leftOpen.status).toBe(200);
  });

  it('records the server’s own answers: an expiry, and a cancel', async () => {
    const brief = await admin.agents.update((await createAgent('brief')).id, {
      approval_timeout_seconds: 1,
    } as never);
    h.stub.enqueue({ toolCalls: [insertCall('too late')] }, { text: 'Denied for want of an answer.' });
    const expiring = await admin.agents.messages.create(brief.id, {
      messages: [{ role: 'user', content: 'Keep this' }],
    });
    const expiringRun = expiring.messages.at(-1)!.run_id!;
    const expired = await eventually(
      () => auditOf(expiringRun),
      ([record]) => record?.status === 'expired',
    );
    expect(expired[0]).toMatchObject({ status: 'expired', answered_by: { kind: 'timeout' } });
    expect(expired[0].tool_calls[0]).toMatchObject({
      decision: 'denied',
      reason: expect.stringMatching(/timeout of 1 seconds/),
    });

    const cancelled = await createAgent('cancelled');
    await pause(cancelled.id, [insertCall('never mind')]);
    const [waiting] = await inbox(`?agent_id=${cancelled.id}`);
    await admin.agents.messages.cancel(cancelled.id);
    const [record] = await auditOf(waiting.run_id);
    expect(record).toMatchObject({ status: 'cancelled', answered_by: { kind: 'cancel' } });
    expect(await inbox(`?agent_id=${cancelled.id}`)).toEqual([]);
  });

  it('shows a scoped token only its agents’ approvals', async () => {
    const { token } = await admin.accessTokens.create({
      hostname: 'https://app.example.com',
      policy: [{ type: 'agent', id: other, access: ['read_messages', 'write_messages'] }],
    });
    const mine = await inbox('', token);
    expect(mine.map((w) => w.agent_name)).toEqual(['other']);
    expect(await inbox(`?agent_id=${solo}`, token)).toEqual([]);
    const [soloWaiting] = await inbox(`?agent_id=${solo}`);
    expect((await api(`/v1/approvals/${soloWaiting.approval_request_id}`, { token })).status).toBe(404);
    const refused = await api(`/v1/approvals/${soloWaiting.approval_request_id}/answer`, {
      method: 'POST',
      token,
      body: JSON.stringify({
        approvals: [{ type: 'approval', tool_call_id: soloWaiting.tool_call_id, approve: true }],
      }),
    });
    expect(refused.status).toBe(404);

    h.stub.enqueue({ text: 'Remembered.' });
    const answered = await api(`/v1/approvals/${mine[0].approval_request_id}/answer`, {
      method: 'POST',
      token,
      body: JSON.stringify({
        approvals: [{ type: 'approval', tool_call_id: mine[0].tool_call_id, approve: true }],
      }),
    });
    expect(answered.status).toBe(200);
    expect(
      await eventually(
        () => humanBlock(other),
        (value) => value.includes('other fact'),
      ),
    ).toContain('other fact');
    const [record] = await auditOf(mine[0].run_id);
    expect(record.answered_by).toMatchObject({ kind: 'token', id: token.split('-').slice(0, 2).join('-') });
  });
});

describe('signed links in approval notices', () => {
  interface Links {
    approve: string;
    deny: string;
    expires_at: string;
  }
  let receiver: Awaited<
    ReturnType<typeof startNoticeReceiver<{ approval_request_id: string; links: Links | null }>>
  >;
  beforeAll(async () => {
    receiver = await startNoticeReceiver();
  });
  afterAll(() => receiver.close());

  const h = useAgentServer('openai', {
    LETTA_SERVER_PASSWORD: PASSWORD,
    OUTBOUND_ALLOW_PRIVATE: '127.0.0.1',
    WEBHOOK_SECRET: 'a-webhook-secret-for-link-tests',
  });
  const admin = () => new Letta({ baseURL: h.server.url, apiKey: PASSWORD, maxRetries: 0 });

  /** An agent paused on one memory_insert call, and the links its notice carried. */
  const pausedWithLinks = async (text: string) => {
    const agent = await admin().agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Human' }],
      tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
      metadata: { approval_webhook_url: receiver.url },
    });
    h.stub.enqueue({
      toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_string: text } }],
    });
    const paused = await admin().agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: `Remember ${text}` }],
    });
    const request = paused.messages.at(-1)!.id;
    const notice = await eventually(
      async () => receiver.notices.find((n) => n.approval_request_id === request),
      (found) => found !== undefined,
      // The notice is a webhook workflow of its own: on a loaded machine it takes its time.
      60_000,
    );
    expect(notice?.links?.approve).toMatch(new RegExp(`^${h.server.url}/approvals/act/`));
    return { agent, request, links: notice!.links!, run: paused.messages.at(-1)!.run_id! };
  };
  const auditOf = async (runId: string) =>
    (
      (await (
        await fetch(`${h.server.url}/v1/runs/${runId}`, { headers: { authorization: `Bearer ${PASSWORD}` } })
      ).json()) as { approvals: AuditRecord[] }
    ).approvals;

  it('approve once, by a bot’s POST, without the password; opening a link does nothing', async () => {
    const { agent, links, run } = await pausedWithLinks('linked fact');
    const shown = await fetch(links.approve);
    expect(shown.status).toBe(200);
    expect(shown.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(await shown.text()).toContain('memory_insert');
    expect(await admin().agents.retrieve(agent.id)).toBeDefined();
    const [waiting] = (await (
      await fetch(`${h.server.url}/v1/approvals/?agent_id=${agent.id}`, {
        headers: { authorization: `Bearer ${PASSWORD}` },
      })
    ).json()) as Waiting[];
    expect(waiting).toBeDefined();

    h.stub.enqueue({ text: 'Remembered.' });
    const acted = await fetch(links.approve, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(acted.status).toBe(200);
    const continued = (await acted.json()) as { run_id: string };
    expect(continued).toMatchObject({ run_id: expect.any(String) });
    // The model stub's replies are one queue: the next test's reply waits until this one is taken.
    expect(
      await eventually(
        () => admin().runs.retrieve(continued.run_id),
        (found) => found.status === 'completed',
      ),
    ).toMatchObject({ status: 'completed' });
    const again = await fetch(links.approve, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(again.status).toBe(409);
    expect((await fetch(links.deny, { method: 'POST', body: '{}' })).status).toBe(409);
    const [record] = await auditOf(run);
    expect(record).toMatchObject({
      status: 'answered',
      answered_by: { kind: 'signed_link', via: new URL(receiver.url).host },
    });
    expect(record.tool_calls[0].decision).toBe('approved');
  });

  it('deny with a reason from the form; a tampered or foreign link is refused', async () => {
    const { links, run } = await pausedWithLinks('unwanted fact');
    const [payload, mac] = links.deny.split('/approvals/act/')[1].split('.');
    const forged = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { decision: string };
    forged.decision = 'approve';
    const tampered = `${h.server.url}/approvals/act/${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${mac}`;
    expect((await fetch(tampered, { method: 'POST', body: '{}' })).status).toBe(410);
    expect((await fetch(`${h.server.url}/approvals/act/nonsense`)).status).toBe(410);

    h.stub.enqueue({ text: 'Fine, I will not.' });
    const acted = await fetch(links.deny, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ reason: 'not worth keeping' }).toString(),
    });
    expect(acted.status).toBe(200);
    expect(acted.headers.get('content-type')).toMatch(/text\/html/);
    const [record] = await auditOf(run);
    expect(record.tool_calls[0]).toMatchObject({ decision: 'denied', reason: 'not worth keeping' });
    const denial = 'Error: request to call tool denied. User reason: not worth keeping';
    const seen = await eventually(
      async () => Object.values(returnsSeen(h.stub.requests.at(-1)!)),
      (returns) => returns.includes(denial),
    );
    expect(seen).toContain(denial);
  });
});
