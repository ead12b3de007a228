import { MockActivityEnvironment } from '@temporalio/testing';
import type { WebhookSubject } from '../contracts/payloads';
import { createActivities } from '../activities';
import type { CallModelInput, ToolCallInput } from '../contracts/payloads';
import { noUsage } from '../contracts/usage';
import { openDatabase, type Database } from '../src/db';
import { CANCEL_DENIAL_REASON, recordAnswer } from '../src/approvals/answering';
import { lockPendingApproval } from '../src/db/conversations';
import { getAgentRow } from '../src/db/agents';
import { insertMessage } from '../src/db/messages';
import type { PendingApproval } from '../src/db/rows';
import { getRun } from '../src/db/runs';
import { getToolByName } from '../src/db/tools';
import {
  findToolExecution,
  recordToolExecution,
  StaleBlockError,
  type ToolExecution,
} from '../src/db/tool-executions';
import { newId } from '../src/ids';
import { NO_PRIVATE_ADDRESSES } from '../src/net/private-addresses';
import { ensureBuiltinTools } from '../src/tools/builtin';
import { providerRegistry } from '../src/llm';
import { silentLogger, testConfig } from './helpers/env';
import { startOpenAiStub, type OpenAiStub } from './helpers/openai-stub';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { agentWithRun, toolCallsOf } from './helpers/runs';

const WEB = {
  policy: { timeoutMs: 1000, maxBytes: 1000, maxRedirects: 0, allow: NO_PRIVATE_ADDRESSES },
  exa: { baseUrl: 'http://127.0.0.1:9', timeoutMs: 1000 },
};

/**
 * Temporal retries an activity whose worker died after it did its work but before it reported back.
 * These run each activity twice with the same input, as such a retry would, against the real database.
 */
describe('activities retried after doing their work', () => {
  let schema: TestSchema;
  let stub: OpenAiStub;
  let db: Database;
  let activities: ReturnType<typeof createActivities>;
  /** The webhooks the activities asked to deliver. */
  const webhooks: WebhookSubject[] = [];
  const env = new MockActivityEnvironment();
  const run = <A extends unknown[], R>(activity: (...args: A) => Promise<R>, ...args: A) =>
    env.run(activity, ...args) as Promise<R>;

  beforeAll(async () => {
    schema = await createTestSchema();
    stub = await startOpenAiStub();
    const config = testConfig({
      DATABASE_URL: schema.url,
      OPENAI_BASE_URL: stub.baseURL,
      OPENAI_API_KEY: 'k',
    });
    db = await openDatabase(config, silentLogger());
    await ensureBuiltinTools(db);
    activities = createActivities({
      db,
      log: silentLogger(),
      providers: providerRegistry(config),
      web: WEB,
      startWebhook: async (subject) => void webhooks.push(subject),
      laneReleased: async () => {},
    });
  });
  afterAll(async () => {
    await db?.close();
    await stub?.close();
    await schema?.drop();
  });

  /** The built-in tool the calls here run, as a turn resolves it. */
  const memoryInsert = async () => {
    const tool = (await getToolByName(db, 'memory_insert'))!;
    return { toolId: tool.id, toolVersion: tool.version };
  };

  const count = async (sql: string, params: unknown[]) =>
    Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${sql}`, params))[0].n);

  it('store each model reply, tool result and tool message once', async () => {
    const { agentId, runId } = await agentWithRun(db, {
      memory_blocks: [{ label: 'human', value: 'Alice' }],
    });
    await insertMessage(db, {
      id: newId('message'),
      agent_id: agentId,
      run_id: runId,
      role: 'user',
      content: [{ type: 'text', text: 'I like tea' }],
    });

    const modelInput = (step: number, pendingToolCallIds: string[]): CallModelInput => ({
      agentId,
      runId,
      step,
      allowedTools: ['memory_insert'],
      toolChoice: 'auto',
      parallelToolCalls: false,
      approvalTools: [],
      pendingToolCallIds,
      requestUsage: noUsage(),
    });
    const requestsBefore = stub.requests.length;
    stub.enqueue({
      toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'Likes tea' } }],
    });
    const first = await run(activities.callModel, modelInput(0, []));
    const again = await run(activities.callModel, modelInput(0, []));
    expect(again).toEqual(first);
    expect(stub.requests.length - requestsBefore).toBe(1);

    const [call] = first.toolCalls;
    const toolInput: ToolCallInput = {
      agentId,
      runId,
      stepId: first.stepId,
      messageId: first.messageId,
      toolCallId: call.id,
      toolName: call.name,
      ...(await memoryInsert()),
    };
    const results = await Promise.all([
      run(activities.runBuiltinTool, toolInput),
      run(activities.runBuiltinTool, toolInput),
    ]);
    expect(await run(activities.runBuiltinTool, toolInput)).toEqual(results[0]);
    const [block] = await db.query<{ value: string }>(
      `SELECT b.value FROM blocks b JOIN agent_blocks ab ON ab.block_id = b.id WHERE ab.agent_id = $1`,
      [agentId],
    );
    expect(block.value).toBe('Alice\nLikes tea');
    // The record fences a memory edit: its call takes no claim (activities/tool-call.ts).
    expect(await count('tool_call_claims WHERE tool_call_id = $1', [call.id])).toBe(0);

    stub.enqueue({ text: 'Noted.' });
    const next = await run(activities.callModel, modelInput(1, [call.id]));
    expect(await run(activities.callModel, modelInput(1, [call.id]))).toEqual(next);
    expect(await count('messages WHERE run_id = $1 AND role = $2', [runId, 'tool'])).toBe(1);
    expect(await count('messages WHERE run_id = $1 AND role = $2', [runId, 'assistant'])).toBe(2);
    expect(await count('tool_executions WHERE run_id = $1', [runId])).toBe(1);
  });

  /** The request of a run that sent the client tool ask_user. */
  const askingUser = { client_tools: [{ name: 'ask_user' }] };

  /** A model call of a run whose request sent the client tool ask_user. */
  const clientToolModelCall = (agentId: string, runId: string, step: number): CallModelInput => ({
    agentId,
    runId,
    step,
    allowedTools: [],
    toolChoice: 'auto',
    parallelToolCalls: false,
    approvalTools: ['ask_user'],
    pendingToolCallIds: [],
    requestUsage: noUsage(),
  });

  it('enter the pause once as they store a reply that waits, and report the same wait again', async () => {
    const { agentId, runId } = await agentWithRun(db, { approval_timeout_seconds: 600 }, askingUser);
    const input: CallModelInput = {
      ...clientToolModelCall(agentId, runId, 1),
      requestUsage: { ...noUsage(), promptTokens: 100, stepCount: 1 },
    };
    stub.enqueue({ toolCalls: [{ name: 'ask_user', arguments: {} }] });
    const reply = await run(activities.callModel, input);
    expect(reply.approvalWait!.timeoutMs).toBeGreaterThan(595_000);
    expect(reply.approvalWait!.timeoutMs).toBeLessThanOrEqual(600_000);
    const again = await run(activities.callModel, input);
    expect(again.messageId).toBe(reply.messageId);
    // Its approval notice is asked for by each attempt (its workflow id lets only one start).
    expect(webhooks.filter((w) => w.id === reply.messageId)).toEqual([
      { kind: 'approval_requested', id: reply.messageId, agentId },
      { kind: 'approval_requested', id: reply.messageId, agentId },
    ]);
    expect(again.approvalWait!.timeoutMs).toBeLessThanOrEqual(reply.approvalWait!.timeoutMs!);

    const [agent] = await db.query<{ pending_approval: PendingApproval; last_stop_reason: string }>(
      'SELECT pending_approval, last_stop_reason FROM agents WHERE id = $1',
      [agentId],
    );
    expect(agent.last_stop_reason).toBe('requires_approval');
    expect(agent.pending_approval).toMatchObject({
      run_id: runId,
      workflow_id: `${agentId}/${runId}`,
      message_id: reply.messageId,
      tool_call_ids: reply.toolCalls.map((c) => c.id),
    });
    const stored = await getRun(db, runId);
    expect(stored).toMatchObject({ status: 'completed', stop_reason: 'requires_approval' });
    expect(stored!.usage).toMatchObject({ step_count: 2 });
    expect((stored!.usage as { prompt_tokens: number }).prompt_tokens).toBeGreaterThan(100);
  });

  describe('racing a cancel, which does not stop a running model call at once', () => {
    const pausedRun = async () => {
      const ids = await agentWithRun(db, {}, askingUser);
      stub.enqueue({ toolCalls: [{ name: 'ask_user', arguments: {} }] });
      const input = clientToolModelCall(ids.agentId, ids.runId, 0);
      return { ...ids, input };
    };
    const cancelled = (agentId: string, runId: string) => ({
      agentId,
      runId,
      stopReason: 'cancelled',
      usage: noUsage(),
      pendingToolCallIds: [],
    });

    it('leave a run the cancel ended first unpaused', async () => {
      const { agentId, runId, input } = await pausedRun();
      await run(activities.finishRun, cancelled(agentId, runId));
      const reply = await run(activities.callModel, input);
      expect(reply.toolCalls).toHaveLength(1);
      expect(reply.approvalWait).toBeUndefined();
      expect((await getAgentRow(db, agentId))!.pending_approval).toBeNull();
      expect(await getRun(db, runId)).toMatchObject({ status: 'cancelled' });
    });

    it('deny a pause entered before the cancel ended the run, and end a request that answered it', async () => {
      const { agentId, runId, input } = await pausedRun();
      const reply = await run(activities.callModel, input);
      expect(reply.approvalWait).toEqual({ timeoutMs: null });
      await run(activities.finishRun, cancelled(agentId, runId));
      expect((await getAgentRow(db, agentId))!.pending_approval).toBeNull();
      const [tool] = await db.query<{ tool_returns: { func_response: string }[] }>(
        `SELECT tool_returns FROM messages WHERE run_id = $1 AND role = 'tool'`,
        [runId],
      );
      expect(tool.tool_returns[0].func_response).toContain(CANCEL_DENIAL_REASON);

      // The same race, with the client's answer accepted before the cancel's end of the run.
      const second = await pausedRun();
      const paused = await run(activities.callModel, second.input);
      const answerRun = await db.transaction(async (tx) => {
        const pending = (await lockPendingApproval(tx, { agentId: second.agentId, conversationId: null }))!;
        const answered = await recordAnswer(tx, {
          agentId: second.agentId,
          pending,
          answers: [
            { type: 'tool', tool_call_id: paused.toolCalls[0].id, tool_return: 'yes', status: 'success' },
          ],
          followUps: [],
          answeredBy: { kind: 'password' },
          runId: newId('run'),
          newRun: { background: false, metadata: {}, request_config: {} },
        });
        return answered.runId;
      });
      await run(activities.finishRun, cancelled(second.agentId, second.runId));
      expect(await getRun(db, answerRun)).toMatchObject({ status: 'cancelled', stop_reason: 'cancelled' });
      expect(await getRun(db, second.runId)).toMatchObject({ status: 'cancelled' });
    });
  });

  /** Calls of built-in tool `name`, one for each of `argsList`, that one assistant message asked for. */
  const builtinCalls = (
    ids: { agentId: string; runId: string },
    name: string,
    args: Record<string, unknown>[],
  ) => toolCallsOf(db, ids, name, args);

  const blockValue = async (blockId: string) =>
    (await db.query<{ value: string }>('SELECT value FROM blocks WHERE id = $1', [blockId]))[0].value;

  const firstBlockOf = async (agentId: string) =>
    (
      await db.query<{ id: string }>('SELECT block_id AS id FROM agent_blocks WHERE agent_id = $1', [agentId])
    )[0].id;

  it("write a memory edit's block only with the call's first record, and only over the value it was planned from", async () => {
    const { agentId, runId } = await agentWithRun(db, {
      memory_blocks: [{ label: 'human', value: 'Alice' }],
    });
    const blockId = await firstBlockOf(agentId);
    const execution = (text: string): ToolExecution => ({
      tool_call_id: `call_${newId('tool').slice(5, 20)}`,
      run_id: runId,
      agent_id: agentId,
      tool_name: 'memory_insert',
      status: 'success',
      func_return: text,
      stdout: null,
      stderr: null,
    });
    const write = (previous: string, value: string) => ({ blockId, label: 'human', previous, value });
    const first = execution('first');
    await recordToolExecution(db, first, write('Alice', 'Alice\nLikes tea'));
    expect(await blockValue(blockId)).toBe('Alice\nLikes tea');
    // Outside any lock, a second attempt of the same call: its record and its write both give way.
    const again = await recordToolExecution(db, { ...first, func_return: 'again' }, write('Alice', 'Bob'));
    expect(again.func_return).toBe('first');
    // Another call planned from the value before the first's write: it records and writes nothing.
    const late = execution('late');
    await expect(recordToolExecution(db, late, write('Alice', 'Alice\nLikes coffee'))).rejects.toThrow(
      StaleBlockError,
    );
    expect(await findToolExecution(db, late.tool_call_id)).toBeUndefined();
    expect(await blockValue(blockId)).toBe('Alice\nLikes tea');
  });

  it('apply every edit of a block that two agents share, when they edit it at once', async () => {
    const first = await agentWithRun(db, { memory_blocks: [{ label: 'notes', value: 'Notes' }] });
    const blockId = await firstBlockOf(first.agentId);
    const second = await agentWithRun(db, { block_ids: [blockId] });
    const lines = Array.from({ length: 12 }, (_, i) => `line ${i}`);
    const insert = (line: string) => ({ label: 'notes', new_str: line });
    const calls = [
      ...(await builtinCalls(first, 'memory_insert', lines.slice(0, 6).map(insert))),
      ...(await builtinCalls(second, 'memory_insert', lines.slice(6).map(insert))),
    ];
    const outcomes = await Promise.all(calls.map((input) => run(activities.runBuiltinTool, input)));
    expect(outcomes.map((o) => o.status)).toEqual(lines.map(() => 'success'));
    const value = await blockValue(blockId);
    expect(value.split('\n').sort()).toEqual(['Notes', ...lines].sort());
  });

  it('edit the memories of more agents at once than the pool has connections', async () => {
    const config = testConfig({ DATABASE_URL: schema.url, DATABASE_POOL_SIZE: '2', OPENAI_API_KEY: 'k' });
    const small = await openDatabase(config, silentLogger());
    try {
      const smallActivities = createActivities({
        db: small,
        log: silentLogger(),
        providers: providerRegistry(config),
        web: WEB,
        startWebhook: async (subject) => void webhooks.push(subject),
        laneReleased: async () => {},
      });
      // Each creates a block: it plans its edit in a transaction that holds the agent's lock.
      const calls = await Promise.all(
        Array.from({ length: 4 }, async () => {
          const agent = await agentWithRun(db, { memory_blocks: [{ label: 'human', value: 'Alice' }] });
          const args = { label: 'plans', new_memory: 'Tea at five' };
          return (await builtinCalls(agent, 'memory_rethink', [args]))[0];
        }),
      );
      // An edit that asked the pool for a second connection inside its transaction waited forever
      // once every connection was held by such a transaction.
      let timer: NodeJS.Timeout | undefined;
      const outcomes = await Promise.race([
        Promise.all(calls.map((input) => run(smallActivities.runBuiltinTool, input))),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('the edits did not finish: pool exhausted')), 15_000);
        }),
      ]).finally(() => clearTimeout(timer));
      expect(outcomes.map((o) => o.status)).toEqual(['success', 'success', 'success', 'success']);
    } finally {
      // A pool whose connections are stuck in transactions never closes: do not wait for it then.
      await Promise.race([small.close(), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
    }
  });
});
