import fs from 'node:fs';
import path from 'node:path';
import { toFile } from '@letta-ai/letta-client';
import type { Message } from '@letta-ai/letta-client/resources/agents/messages';
import { AgentFileSchema, FileMessageSchema } from '../src/schemas/agent-file';
import { historyOf } from '../src/agent/agent-file/import';
import { useAgentServer } from './helpers/agent-server';
import { jsonRequest } from './helpers/http';

const FIXTURES = path.join(__dirname, 'fixtures', 'agent-files');
/** Letta's own export of a memgpt_v2_agent: custom Python tools, tool calls and returns in its history. */
const BASIC = fs.readFileSync(path.join(FIXTURES, 'basic-agent-v2.af'), 'utf8');
/** Letta's export of a letta-code agent (Anthropic): approvals, denials, parallel calls, client tools. */
const LETTA_CODE = fs.readFileSync(path.join(FIXTURES, 'letta-code-agent.af'), 'utf8');

const LIMIT = 1024 * 1024;

const upload = (text: string, name = 'agent.af') => toFile(Buffer.from(text), name);

/** What of a listed message must survive a round trip: its kind and what it says, not its ids. */
function essence(message: Message) {
  const m = message as unknown as Record<string, unknown>;
  switch (m.message_type) {
    case 'tool_call_message':
    case 'approval_request_message':
      return [
        m.message_type,
        (m.tool_calls as { name: string; arguments: string }[]).map((c) => [c.name, c.arguments]),
      ];
    case 'tool_return_message':
      return [m.message_type, m.status, m.tool_return];
    case 'approval_response_message':
      return [m.message_type, m.approvals];
    case 'reasoning_message':
      return [m.message_type, m.reasoning];
    default:
      return [m.message_type, m.content];
  }
}

describe('agent files (.af)', () => {
  // A small limit, so that a file past it is cheap to make (the fixtures are below it).
  const h = useAgentServer('openai', { AGENT_FILE_MAX_BYTES: String(LIMIT) });
  const call = (method: string, url: string, body?: unknown) => jsonRequest(h.server.url, method, url, body);

  /** Posts a multipart form by hand (for what the client will not send). */
  const postForm = async (form: FormData) => {
    const res = await fetch(`${h.server.url}/v1/agents/import`, { method: 'POST', body: form });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  const formWith = (text: string, fields: Record<string, string> = {}) => {
    const form = new FormData();
    form.append('file', new Blob([text]), 'agent.af');
    for (const [key, value] of Object.entries(fields)) form.append(key, value);
    return form;
  };

  const allMessages = async (agentId: string) => {
    const list: Message[] = [];
    for await (const message of h.client.agents.messages.list(agentId, { order: 'asc', limit: 100 }))
      list.push(message);
    return list;
  };
  const agentCount = async () => (await call('GET', '/v1/agents/?limit=1000')).json.length as number;

  it("imports Letta's own export: blocks, custom tools, rules, configs, history; the agent then runs a turn", async () => {
    const source = AgentFileSchema.parse(JSON.parse(BASIC));
    const { agent_ids } = await h.client.agents.importFile({ file: await upload(BASIC) });
    expect(agent_ids).toHaveLength(1);
    const agent = await h.client.agents.retrieve(agent_ids[0], {
      include: ['agent.blocks', 'agent.tools', 'agent.tags'],
    });
    const original = source.agents[0];
    // Letta's default: the name gets `_copy`.
    expect(agent.name).toBe(`${original.name}_copy`);
    expect(agent.system).toBe(original.system);
    expect(agent.agent_type).toBe('memgpt_v2_agent');
    expect(agent.tags).toEqual(original.tags);
    expect(agent.llm_config).toMatchObject({ model: 'gpt-4.1-mini', handle: 'openai/gpt-4.1-mini' });
    expect(agent.llm_config.model_endpoint).not.toBe('https://api.openai.com/v1');
    expect(agent.embedding_config).toMatchObject({ embedding_model: 'text-embedding-3-small' });
    expect(agent.blocks.map((b) => [b.label, b.value, b.limit]).sort()).toEqual(
      source.blocks.map((b) => [b.label, b.value, b.limit]).sort(),
    );
    // Custom tools come with their source; Letta's built-ins map to ours; send_message (the reply of
    // Letta's older agent types, which here reply in text) is left out, and so are its rules.
    const toolNames = agent.tools.map((t) => t.name).sort();
    expect(toolNames).toEqual([
      'analyze_data',
      'calculate_fibonacci',
      'conversation_search',
      'get_user_preferences',
      'memory_insert',
      'memory_replace',
    ]);
    const fib = agent.tools.find((t) => t.name === 'calculate_fibonacci')!;
    expect(fib).toMatchObject({ tool_type: 'custom', source_type: 'python' });
    expect(fib.source_code).toContain('def calculate_fibonacci(n: int) -> int:');
    expect(agent.tools.find((t) => t.name === 'memory_insert')!.tool_type).toBe('letta_sleeptime_core');
    expect(agent.tool_rules!.map((r) => [r.tool_name, r.type])).toEqual([
      ['memory_insert', 'continue_loop'],
      ['conversation_search', 'continue_loop'],
      ['memory_replace', 'continue_loop'],
    ]);

    // The history, in order, each call followed by its return.
    const messages = await allMessages(agent.id);
    expect(messages.map((m) => m.message_type)).toEqual([
      'system_message',
      'assistant_message',
      'tool_call_message',
      'tool_return_message',
      'user_message',
      'user_message',
      'assistant_message',
      'tool_call_message',
      'tool_return_message',
    ]);
    expect(
      messages.find((m) => m.message_type === 'user_message' && m.content === 'Test message for export'),
    ).toBeDefined();
    const firstUser = messages.find((m) => m.message_type === 'user_message')!;
    // Its own time, not the import's.
    expect(new Date(firstUser.date).toISOString()).toBe('2025-10-10T07:14:29.000Z');

    // The agent works: a turn runs, and the model sees the imported history before the new message.
    h.stub.enqueue(
      { toolCalls: [{ name: 'calculate_fibonacci', arguments: { n: 10 } }] },
      { text: 'The 10th Fibonacci number is 55.' },
    );
    const reply = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'fib(10)?' }],
    });
    expect(reply.stop_reason?.stop_reason).toBe('end_turn');
    const ret = reply.messages.find((m) => m.message_type === 'tool_return_message') as unknown as {
      tool_return: string;
      status: string;
    };
    expect(ret).toMatchObject({ status: 'success', tool_return: '55' });
    const request = h.stub.requests.at(-2)!;
    const texts = request.messages.map((m) => m.content);
    expect(texts).toContain('Test message for export');
    expect(texts.at(-1)).toBe('fib(10)?');
    const toolCallIds = request.messages
      .flatMap((m) => (m.tool_calls ?? []) as { id: string }[])
      .map((c) => c.id);
    expect(toolCallIds).toEqual(['f9a9765f-9285-4056-9916-d5bafb729bef', 'call_tB2kJPFgSD5Ldk8VaUYwkMCF']);
  });

  it("exports in Letta's format and imports again with the same blocks, tools and messages", async () => {
    const tool = await h.client.tools.create({
      source_code:
        'def shout(text: str) -> str:\n    """Shout.\n\n    Args:\n        text: what to shout\n    """\n    return text.upper()\n',
    });
    const agent = await h.client.agents.create({
      name: 'round-trip',
      model: 'openai/gpt-4o-mini',
      system: 'You are a round-tripper.',
      memory_blocks: [
        { label: 'human', value: 'Name: Ada' },
        { label: 'persona', value: 'Terse.', limit: 500 },
      ],
      tool_ids: [tool.id],
      tool_rules: [{ type: 'exit_loop', tool_name: 'shout' }],
      tags: ['a', 'b'],
      secrets: { API_TOKEN: 'hunter2' },
    });
    // exit_loop: the turn ends with the tool's return.
    h.stub.enqueue({
      reasoning: 'I should shout.',
      toolCalls: [{ name: 'shout', arguments: { text: 'hi' } }],
    });
    await h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content: 'shout hi' }] });

    const exported = (await h.client.agents.exportFile(agent.id)) as unknown as Record<string, unknown>;
    const file = AgentFileSchema.parse(exported);
    expect(Object.keys(exported)).toEqual(
      expect.arrayContaining([
        'agents',
        'groups',
        'blocks',
        'files',
        'sources',
        'tools',
        'mcp_servers',
        'metadata',
        'created_at',
      ]),
    );
    const [fileAgent] = file.agents;
    expect(fileAgent.id).toBe('agent-0');
    expect(fileAgent.block_ids!.every((id) => /^block-\d+$/.test(id))).toBe(true);
    expect(fileAgent.tool_ids!.every((id) => /^tool-\d+$/.test(id))).toBe(true);
    expect(fileAgent.messages.map((m) => m.id)).toEqual(fileAgent.messages.map((_, i) => `message-${i}`));
    expect(fileAgent.in_context_message_ids).toEqual(fileAgent.messages.map((m) => m.id));
    expect(fileAgent.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    // Secrets travel by name only.
    expect(fileAgent.secrets).toEqual({ API_TOKEN: '' });
    expect(JSON.stringify(exported)).not.toContain('hunter2');
    expect(file.tools.find((t) => t.name === 'shout')).toMatchObject({
      tool_type: 'custom',
      source_code: tool.source_code,
    });

    const { agent_ids } = await h.client.agents.importFile({
      file: await upload(JSON.stringify(exported)),
      name: 'round-tripped',
      secrets: JSON.stringify({ API_TOKEN: 'hunter3' }),
    });
    const include = ['agent.blocks', 'agent.tools', 'agent.tags', 'agent.secrets'] as const;
    const [before, after] = await Promise.all([
      h.client.agents.retrieve(agent.id, { include: [...include] }),
      h.client.agents.retrieve(agent_ids[0], { include: [...include] }),
    ]);
    expect(after.name).toBe('round-tripped');
    expect(after.system).toBe(before.system);
    expect(after.tags).toEqual(before.tags);
    expect(after.tool_rules).toEqual(before.tool_rules);
    expect(after.llm_config).toEqual(before.llm_config);
    const blocks = (a: typeof before) => a.blocks.map((b) => [b.label, b.value, b.limit, b.description]);
    expect(blocks(after)).toEqual(blocks(before));
    expect(after.blocks.map((b) => b.id)).not.toEqual(before.blocks.map((b) => b.id));
    // The custom tool is the same tool (upserted by name); the built-ins are ours.
    expect(after.tools.map((t) => t.id).sort()).toEqual(before.tools.map((t) => t.id).sort());
    expect(after.secrets!.map((s) => s.key)).toEqual(['API_TOKEN']);
    expect((await allMessages(after.id)).map(essence)).toEqual((await allMessages(before.id)).map(essence));

    // scrub_messages leaves the history out.
    const scrubbed = await call('GET', `/v1/agents/${agent.id}/export?scrub_messages=true`);
    expect(scrubbed.status).toBe(200);
    expect(scrubbed.json.agents[0]).toMatchObject({ messages: [], in_context_message_ids: [] });
    expect((await call('GET', `/v1/agents/${agent.id}/export?use_legacy_format=true`)).status).toBe(400);
    expect((await call('GET', '/v1/agents/agent-00000000-0000-4000-8000-000000000000/export')).status).toBe(
      404,
    );
  });

  it('imports a letta-code agent with approvals, denials and parallel calls, under another model', async () => {
    const { agent_ids } = await h.client.agents.importFile({
      file: await upload(LETTA_CODE),
      model: 'openai/gpt-4o-mini',
      append_copy_suffix: false,
      strip_messages: false,
    });
    const agent = await h.client.agents.retrieve(agent_ids[0], { include: ['agent.tools'] });
    expect(agent.name).toBe(AgentFileSchema.parse(JSON.parse(LETTA_CODE)).agents[0].name);
    expect(agent.model).toBe('openai/gpt-4o-mini');
    // Letta's `memory` tool, which letta-code agents carry, is ours too.
    expect(agent.tools.map((t) => t.name)).toEqual(
      expect.arrayContaining([
        'Bash',
        'Read',
        'conversation_search',
        'fetch_webpage',
        'web_search',
        'memory',
      ]),
    );
    expect(agent.tools.find((t) => t.name === 'memory')!.tool_type).toBe('letta_memory_core');
    const types = (await allMessages(agent.id)).map((m) => m.message_type);
    expect(types).toContain('approval_request_message');
    expect(types).toContain('approval_response_message');
    // Approvals, denials and client returns survive a round trip through this server's export.
    const again = await h.client.agents.importFile({
      file: await upload(JSON.stringify(await h.client.agents.exportFile(agent.id))),
    });
    expect((await allMessages(again.agent_ids[0])).map(essence)).toEqual(
      (await allMessages(agent.id)).map(essence),
    );
    // Every call is answered before anything else: the model accepts the history.
    h.stub.enqueue({ text: 'hello again' });
    const reply = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(reply.stop_reason?.stop_reason).toBe('end_turn');
  });

  it("keeps out of the model's context what the file keeps out of it, and exports it so", async () => {
    const file = JSON.parse(BASIC);
    const [agent] = file.agents;
    // Only the system message and the last three (user, call, return) are in context.
    agent.in_context_message_ids = ['message-0', 'message-4', 'message-5', 'message-6'];
    const { agent_ids } = await h.client.agents.importFile({ file: await upload(JSON.stringify(file)) });
    h.stub.enqueue({ text: 'ok' });
    await h.client.agents.messages.create(agent_ids[0], { messages: [{ role: 'user', content: 'next' }] });
    const seen = h.stub.requests.at(-1)!.messages.map((m) => m.content);
    expect(seen).toContain('Test message for export');
    expect(seen.join('\n')).not.toContain('Bootup sequence complete');
    // Everything is still listed, and the export names the same messages in context.
    expect(await allMessages(agent_ids[0])).toHaveLength(11);
    const exported = AgentFileSchema.parse(await h.client.agents.exportFile(agent_ids[0]));
    const ids = exported.agents[0].in_context_message_ids;
    const roles = exported.agents[0].messages.filter((m) => ids.includes(m.id)).map((m) => m.role);
    expect(roles).toEqual(['system', 'user', 'assistant', 'tool', 'user', 'assistant']);
  });

  it("keeps a return of Letta's text and image parts through import and export", async () => {
    const file = JSON.parse(BASIC);
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64');
    const parts = [
      { type: 'text', text: 'Sent, with a picture.' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
    ];
    const tool = file.agents[0].messages.find((m: { id: string }) => m.id === 'message-6');
    tool.tool_returns[0].func_response = parts;
    const { agent_ids } = await h.client.agents.importFile({ file: await upload(JSON.stringify(file)) });
    const shown = (await allMessages(agent_ids[0])).filter((m) => m.message_type === 'tool_return_message');
    expect(shown.at(-1)).toMatchObject({
      tool_return: 'Sent, with a picture. [Image omitted]',
      tool_returns: [{ tool_return: parts }],
    });
    const exported = AgentFileSchema.parse(await h.client.agents.exportFile(agent_ids[0]));
    const returned = exported.agents[0].messages.filter((m) => m.role === 'tool').at(-1);
    expect(returned?.tool_returns?.[0].func_response).toEqual(parts);
  });

  it('repairs a history that breaks the invariant, never storing it broken', () => {
    const call = (id: string) => ({ id, type: 'function', function: { name: 'f', arguments: '{}' } });
    const msg = (id: string, role: string, extra: Record<string, unknown> = {}) => ({ id, role, ...extra });
    const { drafts, repairs } = historyOf(
      [
        msg('message-0', 'system', { content: 'sys' }),
        msg('message-1', 'assistant', { tool_calls: [call('a'), call('b')] }),
        msg('message-2', 'tool', { tool_call_id: 'a', content: 'A' }),
        msg('message-3', 'user', { content: 'interrupting' }),
        msg('message-4', 'tool', { tool_call_id: 'zzz', content: 'orphan' }),
        msg('message-5', 'assistant', { tool_calls: [call('c')] }),
      ].map((m) => FileMessageSchema.parse(m)),
    );
    expect(drafts.map((d) => d.role)).toEqual(['system', 'assistant', 'tool', 'user', 'assistant', 'tool']);
    expect(drafts[2].tool_returns!.map((r) => [r.tool_call_id, r.status])).toEqual([
      ['a', 'success'],
      ['b', 'error'],
    ]);
    expect(drafts[5].tool_returns!.map((r) => [r.tool_call_id, r.status])).toEqual([['c', 'error']]);
    expect(repairs).toHaveLength(3);
  });

  it("answers bad files with 4xx in Letta's shape and stores nothing", async () => {
    const before = await agentCount();
    const notJson = await postForm(formWith('this is not json {'));
    expect(notJson).toEqual({ status: 400, json: { detail: 'Corrupted agent file format.' } });
    const legacy = await postForm(formWith(JSON.stringify({ name: 'old', messages: [] })));
    expect(legacy.status).toBe(400);
    expect(String(legacy.json.detail)).toContain('Legacy AgentSchema format is deprecated');
    const wrongShape = await postForm(
      formWith(JSON.stringify({ agents: [{ id: 'agent-0', messages: 'x' }] })),
    );
    expect(wrongShape.status).toBe(422);
    expect((wrongShape.json.detail as { loc: string[] }[])[0].loc.slice(0, 2)).toEqual(['body', 'file']);
    const missing = await postForm(new FormData());
    expect(missing.status).toBe(422);
    const badSecrets = await postForm(formWith(BASIC, { secrets: '[1' }));
    expect(badSecrets).toEqual({ status: 400, json: { detail: 'secrets must be a valid JSON string' } });
    const notMultipart = await call('POST', '/v1/agents/import', { agents: [] });
    expect(notMultipart.status).toBe(422);

    // A reference the file does not hold, after tools and blocks would have been made: nothing stays.
    const broken = JSON.parse(BASIC);
    broken.tools.find((t: { name: string }) => t.name === 'calculate_fibonacci').name =
      'fib_from_broken_file';
    broken.tools.find((t: { name: string }) => t.name === 'fib_from_broken_file').json_schema.name =
      'fib_from_broken_file';
    broken.agents[0].block_ids.push('block-99');
    const dangling = await postForm(formWith(JSON.stringify(broken)));
    expect(dangling.status).toBe(400);
    expect(String(dangling.json.detail)).toContain('block-99');
    // A failure inside the transaction (an unknown provider) rolls back the tools and blocks made before it.
    const unknownModel = JSON.parse(BASIC);
    unknownModel.tools.find((t: { name: string }) => t.name === 'calculate_fibonacci').json_schema.name =
      'fib_from_broken_file';
    unknownModel.agents[0].llm_config.handle = 'nowhere/model';
    const rolledBack = await postForm(formWith(JSON.stringify(unknownModel)));
    expect(rolledBack.status).toBe(400);
    expect((await call('GET', '/v1/tools/?name=fib_from_broken_file')).json).toEqual([]);
    // A block value past its limit.
    const overLimit = JSON.parse(BASIC);
    overLimit.blocks[0].limit = 3;
    expect((await postForm(formWith(JSON.stringify(overLimit)))).status).toBe(400);
    expect(await agentCount()).toBe(before);
  });

  it('refuses a file past AGENT_FILE_MAX_BYTES with 413, in its shape', async () => {
    const big = JSON.stringify({ ...JSON.parse(BASIC), padding: 'x'.repeat(LIMIT) });
    const answer = await postForm(formWith(big));
    expect(answer).toEqual({
      status: 413,
      json: { detail: `Agent file too large: the most it may have is ${LIMIT} bytes` },
    });
  });
});
