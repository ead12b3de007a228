import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import { Client, Connection } from '@temporalio/client';
import { startDevServer, type DevServerOptions, type RunningDevServer } from '../src/temporal/dev-server';
import { startOpenAiStub, type OpenAiStub } from './helpers/openai-stub';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { eventually } from './helpers/eventually';
import { descendantsOf, isAlive, type StartedProcess } from './helpers/process';
import {
  apiUrl,
  killProcess,
  serverProcessEnv,
  startApiProcess,
  startWorkerProcess,
} from './helpers/server-processes';
import { startTemporalServer } from './helpers/temporal-server';
import { callWaits, scheduledActivities, waitingMessageCall, workflowHistory } from './helpers/temporal';
import { toolReturnsOf } from './helpers/tool-returns';

/**
 * A paused turn survives every component: the API and the worker run as separate processes (as
 * `npm run api` / `npm run worker` start them), the Temporal dev server keeps its history in a db
 * file, and each test kills or restarts one of them between the pause and the answer.
 */
describe('durable pauses across restarts of every component', () => {
  let dataDir: string;
  let schema: TestSchema;
  let stub: OpenAiStub;
  let temporal: RunningDevServer;
  let temporalOptions: DevServerOptions;
  let env: Record<string, string>;
  let api: StartedProcess;
  let worker: StartedProcess;
  let client: Letta;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-durable-'));
    schema = await createTestSchema();
    stub = await startOpenAiStub();
    ({ server: temporal, options: temporalOptions } = await startTemporalServer(dataDir));
    env = await serverProcessEnv({
      dataDir,
      databaseUrl: schema.url,
      temporalAddress: temporal.address,
      openAiBaseUrl: stub.baseURL,
      // OUTBOUND_ALLOW_PRIVATE: the slow page fetch_webpage reads is on loopback.
      extra: { ACTIVITY_HEARTBEAT_TIMEOUT_MS: '2000', OUTBOUND_ALLOW_PRIVATE: '127.0.0.1' },
    });
    api = await startApiProcess(env);
    worker = await startWorkerProcess(env);
    client = new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => {
    if (api) await killProcess(api, 'SIGKILL');
    if (worker) await killProcess(worker, 'SIGKILL');
    await temporal?.stop();
    await stub?.close();
    await schema?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const CLIENT_TOOL = {
    name: 'get_secret',
    description: 'Returns the secret kept on the client',
    parameters: { type: 'object', properties: {} },
  };

  /** Creates an agent and sends it a message the model answers with a client tool call: the turn pauses. */
  async function pausedTurn() {
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini' });
    stub.enqueue({ toolCalls: [{ name: 'get_secret', arguments: {} }] });
    const first = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'What is the secret?' }],
      client_tools: [CLIENT_TOOL],
    });
    expect(first.stop_reason.stop_reason).toBe('requires_approval');
    const request = first.messages.at(-1) as unknown as { tool_call: { tool_call_id: string } };
    return { agentId: agent.id, callId: request.tool_call.tool_call_id };
  }

  /** Answers the pause with the client's return and checks the turn completes with it, once. */
  async function answerAndComplete({ agentId, callId }: { agentId: string; callId: string }, secret: string) {
    stub.enqueue((req) => {
      const last = req.messages.at(-1);
      const seen =
        last?.role === 'tool'
          ? JSON.parse(String(last.content)).message
          : `no tool return: ${JSON.stringify(req.messages)}`;
      return { text: `The secret is ${seen}` };
    });
    const response = await client.agents.messages.create(agentId, {
      messages: [
        {
          type: 'approval',
          approvals: [{ type: 'tool', tool_call_id: callId, tool_return: secret, status: 'success' }],
        },
      ],
      client_tools: [CLIENT_TOOL],
    });
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    expect(response.messages.map((m) => m.message_type)).toEqual([
      'tool_return_message',
      'assistant_message',
    ]);
    expect(response.messages[1]).toMatchObject({ content: `The secret is ${secret}` });
    const history = (await client.agents.messages.list(agentId, { order: 'asc' })).getPaginatedItems();
    expect(history.map((m) => m.message_type)).toEqual([
      'system_message',
      'user_message',
      'approval_request_message',
      'approval_response_message',
      'tool_return_message',
      'assistant_message',
    ]);
  }

  it('survives a restart of the API while paused', async () => {
    const paused = await pausedTurn();
    await killProcess(api, 'SIGTERM');
    api = await startApiProcess(env);
    await answerAndComplete(paused, 'API-RESTART');
  });

  it('survives kill -9 of the worker while paused', async () => {
    const paused = await pausedTurn();
    await killProcess(worker, 'SIGKILL');
    worker = await startWorkerProcess(env);
    await answerAndComplete(paused, 'WORKER-KILLED');
  });

  it('survives a restart of the Temporal server (on its db file) while paused', async () => {
    const paused = await pausedTurn();
    await temporal.stop();
    temporal = await startDevServer(temporalOptions);
    await answerAndComplete(paused, 'TEMPORAL-RESTART');
  });

  it('survives kill -9 of the worker while a tool runs: the tool runs again, its result is stored once', async () => {
    const requests: number[] = [];
    const site = http.createServer((_req, res) => {
      requests.push(Date.now());
      setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('slow page'), 1_500);
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
      const agent = await client.agents.create({ model: 'openai/gpt-4o-mini', tools: ['fetch_webpage'] });
      stub.enqueue({ toolCalls: [{ name: 'fetch_webpage', arguments: { url } }] }, { text: 'Read it.' });
      const run = await client.agents.messages.createAsync(agent.id, {
        messages: [{ role: 'user', content: 'Read the page' }],
      });
      while (requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
      await killProcess(worker, 'SIGKILL');
      worker = await startWorkerProcess(env);

      let current = await client.runs.retrieve(run.id);
      for (let i = 0; i < 300 && current.status !== 'completed' && current.status !== 'failed'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        current = await client.runs.retrieve(run.id);
      }
      expect(current).toMatchObject({ status: 'completed', stop_reason: 'end_turn' });
      expect(requests.length).toBe(2); // the killed attempt, then the retry on the new worker
      const messages = (await client.runs.messages.list(run.id)).getPaginatedItems();
      expect(messages.map((m) => m.message_type)).toEqual([
        'user_message',
        'tool_call_message',
        'tool_return_message',
        'assistant_message',
      ]);
      expect(messages[2]).toMatchObject({ status: 'success', tool_return: 'slow page' });
    } finally {
      await new Promise<void>((resolve) => site.close(() => resolve()));
    }
  });
  it('survives kill -9 of the worker while a sandboxed tool runs: no sandbox is orphaned, the retry completes', async () => {
    const tool = await client.tools.create({
      source_code:
        'import time\n\ndef slow_answer() -> str:\n    """Answers slowly."""\n    time.sleep(3)\n    return "slow answer"\n',
    });
    // It may run again: the retry takes the killed attempt's call over and runs it.
    await client.tools.update(tool.id, { metadata_: { idempotent: true } });
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
    stub.enqueue({ toolCalls: [{ name: 'slow_answer', arguments: {} }] }, { text: 'Answered.' });
    const run = await client.agents.messages.createAsync(agent.id, {
      messages: [{ role: 'user', content: 'Answer slowly' }],
    });
    // The sandbox is what the worker started (warm runner or cold sandbox): its processes die with it.
    await eventually(
      async () => (await client.runs.messages.list(run.id)).getPaginatedItems(),
      (messages) => messages.some((m) => m.message_type === 'tool_call_message'),
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // the tool is sleeping now
    const sandboxed = descendantsOf(worker.child.pid!);
    expect(sandboxed.length).toBeGreaterThan(0);
    await killProcess(worker, 'SIGKILL');
    expect(
      await eventually(
        async () => sandboxed.filter(isAlive),
        (pids) => pids.length === 0,
        5_000,
      ),
    ).toEqual([]);
    worker = await startWorkerProcess(env);

    const done = await eventually(
      () => client.runs.retrieve(run.id),
      (r) => r.status === 'completed' || r.status === 'failed',
      30_000,
    );
    expect(done).toMatchObject({ status: 'completed', stop_reason: 'end_turn' });
    const messages = (await client.runs.messages.list(run.id)).getPaginatedItems();
    expect(messages.filter((m) => m.message_type === 'tool_return_message')).toEqual([
      expect.objectContaining({ status: 'success', tool_return: 'slow answer' }),
    ]);
  });

  it('keeps an agent message waiting through kill -9 of the worker: the wait lives in its history', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const [asker, expert] = await Promise.all([
      client.agents.create({
        model: 'openai/gpt-4o-mini',
        ...({ include_multi_agent_tools: true } as object),
      }),
      client.agents.create({ model: 'openai/gpt-4o-mini' }),
    ]);
    const ask = { message: 'what is 2+2?', other_agent_id: expert.id };
    // The expert's reply is held: for the attempt the kill cuts short, and for its retry.
    const held = { text: 'Four.', heldUntil: released };
    stub.enqueue(
      { toolCalls: [{ name: 'send_message_to_agent_and_wait_for_reply', arguments: ask }] },
      held,
      held,
      { text: 'The expert says four.' },
    );
    const asked = stub.requests.length;
    const run = await client.agents.messages.createAsync(asker.id, {
      messages: [{ role: 'user', content: 'ask the expert' }],
    });
    const connection = await Connection.connect({ address: temporal.address });
    try {
      const temporalClient = new Client({ connection });
      const [call] = await waitingMessageCall(temporalClient, run.id);
      expect(call && callWaits(call)).toBe(true);
      await eventually(
        async () => stub.requests.length,
        (n) => n >= asked + 2, // the sender's model call, then the expert's
      );
      await killProcess(worker, 'SIGKILL');
      worker = await startWorkerProcess(env);
      release();
      const done = await eventually(
        () => client.runs.retrieve(run.id),
        (r) => r.status === 'completed',
        60_000,
      );
      expect(done.status).toBe('completed');
      const messages = (await client.runs.messages.list(run.id)).getPaginatedItems();
      expect(toolReturnsOf(messages)[0]).toMatchObject({
        status: 'success',
        tool_return: `{'agent_id': '${expert.id}', 'response': ['Four.']}`,
      });
      // Sent once: the new worker took the wait up from the call's history.
      const events = await workflowHistory(temporalClient, call.workflowId);
      expect(scheduledActivities(events).map((a) => a.type)).toEqual(['sendAgentMessages']);
      expect((await client.runs.list({ agent_id: expert.id })).getPaginatedItems()).toHaveLength(1);
    } finally {
      await connection.close();
    }
  });
});
