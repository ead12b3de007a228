import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import { Client, Connection } from '@temporalio/client';
import { sessionWorkflowIdFor } from '../src/agent/turns';
import { startServer } from '../src/server';
import type { RunningDevServer } from '../src/temporal/dev-server';
import type { AgentTurnInput, AgentTurnResult } from '../contracts/payloads';
import { useContinuingAgentServer } from './helpers/agent-server';
import { insertsUnderCountRule } from './helpers/long-requests';
import { clientToolReturn } from './helpers/approvals';
import { eventually } from './helpers/eventually';
import { continueAsNewChain, startInput, turnWorkflowId, type ChainRun } from './helpers/temporal';
import { freePort, silentLogger, testConfig, uniqueSuffix } from './helpers/env';
import { startOpenAiStub, type OpenAiStub } from './helpers/openai-stub';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { startTemporalServer } from './helpers/temporal-server';

/** A history event's time, in milliseconds. */
const millis = (time: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  Number(time?.seconds ?? 0) * 1000 + Math.floor((time?.nanos ?? 0) / 1e6);

/**
 * A turn continues as new when Temporal suggests it. This Temporal server suggests it after 30 events
 * (Temporal's default is 4,096 events or 4 MiB: test/long-turn.test.ts), so a turn of a few cycles
 * or steps crosses several runs, and each test checks what the turn keeps across them: its workflow
 * id and run ids, its pending approval and the answers to it, its tool rules' history and usage, its
 * cancel, and its place in its conversation.
 */
describe('a turn that continues as new', () => {
  const h = useContinuingAgentServer(30);
  afterEach(() => h.stub.setDefault(() => ({ text: 'ok' })));

  const temporalClient = () => h.server.turns.temporal;
  const chainOfRun = async (runId: string) =>
    continueAsNewChain(temporalClient(), await turnWorkflowId(h.server.db, runId));
  const inputs = (chain: ChainRun[]) => chain.map((run) => startInput<AgentTurnInput>(run.events));
  const ASK_USER = { name: 'ask_user', parameters: { type: 'object', properties: {} } };

  it('keeps its workflow, its pending approval and the answers to it, run after run', async () => {
    const cycles = 12;
    let asked = 0;
    h.stub.setDefault(() =>
      ++asked <= cycles
        ? { toolCalls: [{ name: 'ask_user', arguments: { n: asked } }] }
        : { text: 'Thanks.' },
    );
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    let response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Ask me, many times' }],
      client_tools: [ASK_USER],
    });
    const firstRunId = response.messages[0].run_id!;
    const runIds = [firstRunId];
    for (let cycle = 1; cycle <= cycles; cycle++) {
      expect(response.stop_reason.stop_reason).toBe('requires_approval');
      const pending = response.messages.at(-1) as { tool_call: { tool_call_id: string } };
      // Answered at once: the answer's signal races the workflow task that continues the turn as new.
      response = await h.client.agents.messages.create(agent.id, {
        messages: [clientToolReturn(pending.tool_call.tool_call_id, `answer ${cycle}`)],
        client_tools: [ASK_USER],
      });
      runIds.push(response.messages[0].run_id!);
    }
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    expect(response.messages.at(-1)).toMatchObject({ content: 'Thanks.' });

    const workflowId = await turnWorkflowId(h.server.db, firstRunId);
    const result = (await temporalClient().workflow.getHandle(workflowId).result()) as AgentTurnResult;
    expect(result.stopReason).toBe('end_turn');
    const chain = await chainOfRun(firstRunId);
    expect(chain.length).toBeGreaterThanOrEqual(3);
    // Each run after the first took up a pause, or a request's steps, under the run of the request it
    // had reached.
    const continued = inputs(chain).slice(1);
    for (const input of continued) {
      expect(input.continued?.pause ?? input.continued?.steps).toBeDefined();
      expect(runIds).toContain(input.runId);
    }
    // Whether one of these runs began at a pause or before a model call depends on whether the answer
    // reached the workflow before the task that saw the pause: continuedPause below answers until a
    // run begins at a pause, for the tests that need one.
    // Every run keeps the turn's search attributes: the Temporal UI finds the turn by its first run.
    for (const run of chain) {
      const { searchAttributes } = await temporalClient()
        .workflow.getHandle(workflowId, run.runId)
        .describe();
      expect(searchAttributes).toMatchObject({ LettaAgentId: [agent.id], LettaRunId: [firstRunId] });
    }
    // Every run of the requests stopped as Letta's would, and every call got the answer sent to it.
    for (const [i, runId] of runIds.entries()) {
      expect(await h.client.runs.retrieve(runId)).toMatchObject({
        status: 'completed',
        stop_reason: i < cycles ? 'requires_approval' : 'end_turn',
      });
    }
    const returns = (await h.client.agents.messages.list(agent.id, { order: 'asc', limit: 1000 }))
      .getPaginatedItems()
      .filter((m) => m.message_type === 'tool_return_message')
      .map((m) => (m as { tool_return: string }).tool_return);
    expect(returns).toEqual(Array.from({ length: cycles }, (_, i) => `answer ${i + 1}`));
  }, 120_000);

  it("carries a long request's steps over: its tool rules' history and its usage", async () => {
    const inserts = 6;
    const response = await insertsUnderCountRule(h, inserts);
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    const runId = response.messages[0].run_id!;
    const chain = await chainOfRun(runId);
    expect(chain.length).toBeGreaterThanOrEqual(2);
    const continuedSteps = inputs(chain)
      .slice(1)
      .map((input) => input.continued?.steps?.next);
    expect(continuedSteps.every((next) => next !== undefined && next > 0)).toBe(true);
    // The rule counts the calls of the whole request, across its runs: three ran, three were refused.
    const returns = response.messages
      .filter((m) => m.message_type === 'tool_return_message')
      .map((m) => m as { status: string; tool_return: string });
    expect(returns.map((r) => r.status)).toEqual([
      'success',
      'success',
      'success',
      'error',
      'error',
      'error',
    ]);
    expect(returns[5].tool_return).toContain('[ToolConstraintError] Cannot call memory_insert');
    expect(response.usage).toMatchObject({ step_count: inserts + 1, prompt_tokens: 10 * (inserts + 1) });
  }, 120_000);

  /** A turn of the agent paused on ask_user, continued as new at least once. */
  async function continuedPause(agentId: string) {
    let asked = 0;
    h.stub.setDefault(() => ({ toolCalls: [{ name: 'ask_user', arguments: { n: ++asked } }] }));
    const send = async (messages: unknown[]) => {
      const response = await h.client.agents.messages.create(agentId, {
        messages: messages as never,
        client_tools: [ASK_USER],
      });
      const pending = response.messages.at(-1) as { tool_call: { tool_call_id: string } };
      return { runId: response.messages[0].run_id!, callId: pending.tool_call.tool_call_id };
    };
    let paused = await send([{ role: 'user', content: 'Ask me' }]);
    const firstRunId = paused.runId;
    for (;;) {
      const chain = await chainOfRun(firstRunId);
      if (chain.length > 1 && inputs(chain).at(-1)!.continued?.pause) return paused;
      paused = await send([clientToolReturn(paused.callId, 'again')]);
    }
  }

  it('is cancelled in whichever run it waits, whether the API or its session started it', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const paused = await continuedPause(agent.id);
    // Queries by the workflow id reach the run that waits: its stack shows the wait.
    const workflowId = await turnWorkflowId(h.server.db, paused.runId);
    const handle = temporalClient().workflow.getHandle(workflowId);
    expect((await handle.describe()).runId).toBe((await chainOfRun(paused.runId)).at(-1)!.runId);
    const trace = await eventually(
      () => handle.query<string>('__stack_trace'),
      (stack) => stack.includes('waitForAnswer'),
    );
    expect(trace).toContain('waitForAnswer');
    expect(await h.client.agents.messages.cancel(agent.id)).toEqual({ [paused.runId]: 'cancelled' });

    // Queued behind a slow turn, the turn is its session's child.
    h.stub.enqueue({ text: 'slow', delayMs: 1_500 });
    await h.client.agents.messages.createAsync(agent.id, {
      messages: [{ role: 'user', content: 'Take your time' }],
    });
    const queued = await continuedPause(agent.id);
    const session = sessionWorkflowIdFor(h.server.turns.deploymentId, agent.id, null);
    const sessionEvents = (await continueAsNewChain(temporalClient(), session)).flatMap((run) => run.events);
    const queuedTurn = await turnWorkflowId(h.server.db, queued.runId);
    expect(
      sessionEvents.some(
        (e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId === queuedTurn,
      ),
    ).toBe(true);
    const started = Date.now();
    expect(await h.client.agents.messages.cancel(agent.id)).toEqual({ [queued.runId]: 'cancelled' });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await h.client.runs.retrieve(queued.runId)).toMatchObject({ status: 'cancelled' });
  }, 120_000);

  it('keeps its place in its conversation: its session waits for its last run, the next message after it', async () => {
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
    });
    const inserts = 5;
    h.stub.setDefault((request) => {
      const users = request.messages.filter((m) => m.role === 'user');
      const said = String(users.at(-1)?.content);
      const since = request.messages.length - 1 - request.messages.map((m) => m.role).lastIndexOf('user');
      if (said === 'first') return { text: 'done with first', delayMs: 1_500 };
      if (said === 'second' && since / 2 < inserts)
        return { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'a fact' } }] };
      return { text: `done with ${said}` };
    });
    const send = (content: string) =>
      h.client.agents.messages.createAsync(agent.id, { messages: [{ role: 'user', content }] });
    await send('first');
    // Queued behind the first, the second runs as its session's child, and continues as new mid-request.
    const second = await send('second');
    const third = await send('third');
    const ended = (run: { status?: string | null }) =>
      ['completed', 'failed', 'cancelled'].includes(run.status ?? '');
    const thirdRun = await eventually(() => h.client.runs.retrieve(third.id), ended, 60_000);
    const secondRun = await h.client.runs.retrieve(second.id);
    expect([secondRun.stop_reason, thirdRun.stop_reason]).toEqual(['end_turn', 'end_turn']);

    const chain = await chainOfRun(second.id);
    expect(chain.length).toBeGreaterThanOrEqual(2);
    expect(inputs(chain).at(-1)!.continued?.steps).toBeDefined();
    // The session continues as new too (on this server, every few turns): its events, run after run.
    const session = sessionWorkflowIdFor(h.server.turns.deploymentId, agent.id, null);
    const events = (await continueAsNewChain(temporalClient(), session)).flatMap((run) => run.events);
    const secondTurn = await turnWorkflowId(h.server.db, second.id);
    const thirdTurn = await turnWorkflowId(h.server.db, third.id);
    const at = (has: (e: (typeof events)[number]) => unknown) => events.findIndex((e) => has(e));
    const secondEnded = at(
      (e) => e.childWorkflowExecutionCompletedEventAttributes?.workflowExecution?.workflowId === secondTurn,
    );
    // The session's child ended with the chain's last run, with that run's result, and only then did
    // the third turn start.
    const result = JSON.parse(
      Buffer.from(
        events[secondEnded].childWorkflowExecutionCompletedEventAttributes!.result!.payloads![0].data!,
      ).toString(),
    ) as AgentTurnResult;
    expect(result).toMatchObject({ stopReason: 'end_turn', usage: { stepCount: inserts + 1 } });
    expect(millis(events[secondEnded].eventTime)).toBeGreaterThanOrEqual(
      millis(chain.at(-1)!.events.at(-1)!.eventTime),
    );
    expect(
      at((e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId === thirdTurn),
    ).toBeGreaterThan(secondEnded);
    const texts = (await h.client.agents.messages.list(agent.id, { order: 'asc', limit: 1000 }))
      .getPaginatedItems()
      .filter((m) => ['user_message', 'assistant_message'].includes(m.message_type ?? ''))
      .map((m) => (m as { content: string }).content);
    expect(texts).toEqual([
      'first',
      'done with first',
      'second',
      'done with second',
      'third',
      'done with third',
    ]);
  }, 120_000);
});

/**
 * A cancel that reaches a continued run in its very first workflow task, before the run has loaded its
 * request's tools and rules: the turn still ends its run as cancelled, its pending call denied, rather
 * than the workflow ending `Canceled` with the run left paused. Made certain by starting the continued
 * run while no worker polls and cancelling it before the worker comes back: its first task holds both.
 */
describe('a continued turn cancelled in its first task', () => {
  let temporal: RunningDevServer;
  let dataDir: string;
  let schema: TestSchema;
  let stub: OpenAiStub;
  let env: Record<string, string>;
  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-continued-cancel-'));
    ({ server: temporal } = await startTemporalServer(dataDir, [
      'limit.historyCount.suggestContinueAsNew=30',
    ]));
    schema = await createTestSchema();
    stub = await startOpenAiStub();
    env = {
      DATABASE_URL: schema.url,
      TEMPORAL_ADDRESS: temporal.address,
      TASK_QUEUE_PREFIX: `t-${uniqueSuffix()}-`,
      PORT: String(await freePort()),
      OPENAI_BASE_URL: stub.baseURL,
      OPENAI_API_KEY: 'test-key',
    };
  }, 120_000);
  afterAll(async () => {
    await stub.close();
    await temporal.stop();
    await schema.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('ends its run cancelled and denies its pending call', async () => {
    const ASK_USER = { name: 'ask_user', parameters: { type: 'object', properties: {} } };
    let server = await startServer(testConfig(env), silentLogger());
    const client = new Letta({ baseURL: server.url!, apiKey: 'unused', maxRetries: 0 });
    let asked = 0;
    stub.setDefault(() => ({ toolCalls: [{ name: 'ask_user', arguments: { n: ++asked } }] }));
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini' });
    const send = async (messages: unknown[]) => {
      const response = await client.agents.messages.create(agent.id, {
        messages: messages as never,
        client_tools: [ASK_USER],
      });
      const pending = response.messages.at(-1) as { tool_call: { tool_call_id: string } };
      return { runId: response.messages[0].run_id!, callId: pending.tool_call.tool_call_id };
    };
    let paused = await send([{ role: 'user', content: 'Ask me' }]);
    const workflowId = await turnWorkflowId(server.db, paused.runId);
    const connection = await Connection.connect({ address: temporal.address });
    const temporalClient = new Client({ connection });
    let chain = await continueAsNewChain(temporalClient, workflowId);
    while (chain.length < 2 || !startInput<AgentTurnInput>(chain.at(-1)!.events).continued?.pause) {
      paused = await send([clientToolReturn(paused.callId, 'again')]);
      chain = await eventually(
        () => continueAsNewChain(temporalClient, workflowId),
        (runs) => runs.at(-1)!.events.at(-1)?.workflowTaskCompletedEventAttributes !== undefined,
      );
    }
    // The continued run as it started, run again while no worker polls, and cancelled at once.
    const input = startInput<AgentTurnInput>(chain.at(-1)!.events);
    const { taskQueue } = (await temporalClient.workflow.getHandle(workflowId).describe()) as {
      taskQueue: string;
    };
    await server.stop();
    await temporalClient.workflow
      .getHandle(workflowId)
      .terminate('run again, cancelled before its first task');
    const rerun = await temporalClient.workflow.start('agentTurn', { workflowId, taskQueue, args: [input] });
    await rerun.cancel();

    server = await startServer(testConfig(env), silentLogger());
    try {
      const result = (await rerun.result()) as AgentTurnResult;
      expect(result.stopReason).toBe('cancelled');
      const again = new Letta({ baseURL: server.url!, apiKey: 'unused', maxRetries: 0 });
      expect(await again.runs.retrieve(paused.runId)).toMatchObject({ status: 'cancelled' });
      const returns = (await again.agents.messages.list(agent.id, { order: 'asc', limit: 1000 }))
        .getPaginatedItems()
        .filter((m) => m.message_type === 'tool_return_message')
        .map((m) => m as { tool_call_id: string; status: string });
      expect(returns.at(-1)).toMatchObject({ tool_call_id: paused.callId, status: 'error' });
    } finally {
      await server.stop();
      await connection.close();
    }
  }, 180_000);
});
