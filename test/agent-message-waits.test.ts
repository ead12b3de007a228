import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import { useAgentServer } from './helpers/agent-server';
import type { ChatRequest, OpenAiStub, StubReply } from './helpers/openai-stub';
import { startOpenAiStub } from './helpers/openai-stub';
import { eventually } from './helpers/eventually';
import { testTemporalAddress } from './helpers/env';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import type { StartedProcess } from './helpers/process';
import {
  apiUrl,
  killProcess,
  serverProcessEnv,
  startApiProcess,
  startWorkerProcess,
} from './helpers/server-processes';
import { connectTemporalClient, scheduledActivities, workflowHistory } from './helpers/temporal';
import { toolReturnsOf } from './helpers/tool-returns';
import { agentWithRun, toolCallsOf } from './helpers/runs';
import { MockActivityEnvironment } from '@temporalio/testing';
import { agentMessageActivities } from '../activities/agent-messages';

/**
 * An agent message waits as workflows wait (workflows/agent-message-call.ts): a child workflow of the
 * sender's turn, woken by the recipient's turn when its run stops, holding no activity slot meanwhile.
 */

const WAIT_TOOL = 'send_message_to_agent_and_wait_for_reply';

/** A reply the test holds back: the stub answers once `release` is called. */
function heldReply() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  return { released, release };
}

/**
 * The model of every agent of a test: an expert (its system prompt names it) answers "Four." once the
 * test releases it; an agent told to `ask <agent id>` asks that agent and then says what it heard;
 * any other message gets a plain answer at once.
 */
function routeReplies(stub: OpenAiStub) {
  const experts = new Map<string, Promise<void>>();
  stub.setDefault((request: ChatRequest): StubReply => {
    const system = String(request.messages[0]?.content);
    for (const [marker, released] of experts)
      if (system.includes(marker)) return { text: 'Four.', heldUntil: released };
    if (request.messages.at(-1)?.role === 'tool') return { text: 'The expert answered.' };
    const asked = request.messages
      .map((m) => String(m.content))
      .join('\n')
      .match(/ask (agent-[0-9a-f-]+)/);
    if (asked)
      return {
        toolCalls: [{ name: WAIT_TOOL, arguments: { message: 'what is 2+2?', other_agent_id: asked[1] } }],
      };
    return { text: 'Hello back.' };
  });
  /** A new expert's system prompt: its replies wait for the returned release. */
  return (marker: string) => {
    const held = heldReply();
    experts.set(marker, held.released);
    return { system: `You are ${marker}, who answers arithmetic.`, release: held.release };
  };
}

const multiAgent = { model: 'openai/gpt-4o-mini', include_multi_agent_tools: true } as object;

/** The agent-message calls of a sender's run, as child workflows (their search attributes name the run). */
async function callsOfRun(temporal: Client, runId: string): Promise<WorkflowExecutionDescription[]> {
  const found: WorkflowExecutionDescription[] = [];
  for await (const info of temporal.workflow.list({
    query: `WorkflowType = "agentMessageCall" AND LettaRunId = "${runId}"`,
  }))
    found.push(await temporal.workflow.getHandle(info.workflowId).describe());
  return found;
}

/** A call waits when its messages are sent and nothing of it runs: no activity is pending. */
const waiting = (call: WorkflowExecutionDescription) =>
  call.status.name === 'RUNNING' && (call.raw.pendingActivities ?? []).length === 0;

/** The call's workflow waits, its messages sent; fails the test when it never does. */
async function waitingCall(temporal: Client, runId: string): Promise<WorkflowExecutionDescription> {
  const calls = await eventually(
    () => callsOfRun(temporal, runId),
    (found) => found.length === 1 && waiting(found[0]),
    30_000,
  );
  expect(calls.map(waiting)).toEqual([true]);
  return calls[0];
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

describe('an agent message waits as a workflow', () => {
  const h = useAgentServer('openai', { AGENT_MAX_QUEUED_MESSAGES: '300' });
  let expert: (marker: string) => { system: string; release: () => void };
  beforeAll(() => {
    expert = routeReplies(h.stub);
  });

  /** The time of a plain message to an agent, from the request to its answer, in ms. */
  const plainMessage = async (agentId: string) => {
    const started = performance.now();
    const response = await h.client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    return performance.now() - started;
  };

  it('is a child workflow of the sender’s turn, woken by the recipient’s turn, with no activity that waits', async () => {
    const { system, release } = expert('the-child-expert');
    const [asker, answerer] = await Promise.all([
      h.client.agents.create(multiAgent),
      h.client.agents.create({ model: 'openai/gpt-4o-mini', system }),
    ]);
    const run = await h.client.agents.messages.createAsync(asker.id, {
      messages: [{ role: 'user', content: `ask ${answerer.id}` }],
    });
    const temporal = h.server.turns.temporal;
    const call = await waitingCall(temporal, run.id);
    const [turn] = await h.server.db.query<{ workflow_id: string }>(
      'SELECT workflow_id FROM runs WHERE id = $1',
      [run.id],
    );
    expect(call.workflowId.startsWith(`${turn.workflow_id}/call_`)).toBe(true);
    expect(call.parentExecution?.workflowId).toBe(turn.workflow_id);
    release();
    const done = await eventually(
      () => h.client.runs.retrieve(run.id),
      (r) => r.status === 'completed',
      30_000,
    );
    expect(done.status).toBe('completed');
    const messages = (await h.client.runs.messages.list(run.id)).getPaginatedItems();
    expect(toolReturnsOf(messages)[0]).toMatchObject({
      status: 'success',
      tool_return: `{'agent_id': '${answerer.id}', 'response': ['Four.']}`,
    });
    // The wait was a signal and no polling activity: the turn ran no `messageAgents`, the call sent once.
    const callEvents = await workflowHistory(temporal, call.workflowId);
    expect(scheduledActivities(callEvents).map((a) => a.type)).toEqual(['sendAgentMessages']);
    expect(
      callEvents.filter(
        (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'messageRunStopped',
      ),
    ).toHaveLength(1);
    const turnEvents = await workflowHistory(temporal, turn.workflow_id);
    expect(scheduledActivities(turnEvents).map((a) => a.type)).not.toContain('messageAgents');
  });

  it('ends at once when the sender’s run is cancelled while it waits, and the recipient’s turn still ends well', async () => {
    const { system, release } = expert('the-cancelled-expert');
    const [asker, answerer] = await Promise.all([
      h.client.agents.create(multiAgent),
      h.client.agents.create({ model: 'openai/gpt-4o-mini', system }),
    ]);
    const run = await h.client.agents.messages.createAsync(asker.id, {
      messages: [{ role: 'user', content: `ask ${answerer.id}` }],
    });
    const temporal = h.server.turns.temporal;
    const call = await waitingCall(temporal, run.id);
    // The expert's reply is held: only a cancel of the wait itself lets the sender's run end.
    await h.client.agents.messages.cancel(asker.id);
    expect((await h.client.runs.retrieve(run.id)).status).toBe('cancelled');
    expect((await temporal.workflow.getHandle(call.workflowId).describe()).status.name).toBe('CANCELLED');
    const messages = (await h.client.runs.messages.list(run.id)).getPaginatedItems();
    expect(toolReturnsOf(messages)[0]).toMatchObject({ status: 'error' });

    // The recipient's turn goes on; its signal finds the call gone, which ends nothing but the signal.
    const [recipientRun] = (await h.client.runs.list({ agent_id: answerer.id })).getPaginatedItems();
    release();
    const recipientDone = await eventually(
      () => h.client.runs.retrieve(recipientRun.id),
      (r) => r.status === 'completed',
      30_000,
    );
    expect(recipientDone.status).toBe('completed');
    const [recipientTurn] = await h.server.db.query<{ workflow_id: string }>(
      'SELECT workflow_id FROM runs WHERE id = $1',
      [recipientRun.id],
    );
    const handle = temporal.workflow.getHandle(recipientTurn.workflow_id);
    await handle.result();
    expect((await handle.describe()).status.name).toBe('COMPLETED');
  });

  it('still answers the polling activity of turns recorded before, which are in flight across the upgrade', async () => {
    const answerer = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const [call] = await toolCallsOf(h.server.db, await agentWithRun(h.server.db), WAIT_TOOL, [
      { message: 'are you there?', other_agent_id: answerer.id },
    ]);
    const { messageAgents } = agentMessageActivities(h.server.turns);
    expect(await new MockActivityEnvironment().run(messageAgents, call)).toEqual({
      status: 'success',
      output: `{'agent_id': '${answerer.id}', 'response': ['Hello back.']}`,
    });
    // Its recipient's turn has no call to tell: the activity saw the run stop by itself.
    const [recipientRun] = (await h.client.runs.list({ agent_id: answerer.id })).getPaginatedItems();
    const [turn] = await h.server.db.query<{ workflow_id: string }>(
      'SELECT workflow_id FROM runs WHERE id = $1',
      [recipientRun.id],
    );
    await h.server.turns.temporal.workflow.getHandle(turn.workflow_id).result();
    const events = await workflowHistory(h.server.turns.temporal, turn.workflow_id);
    expect(events.some((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes)).toBe(false);
  });

  it('lets another agent answer as fast as alone while 250 agents wait on one', async () => {
    const { system, release } = expert('the-busy-expert');
    const answerer = await h.client.agents.create({ model: 'openai/gpt-4o-mini', system });
    const bystander = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    const senders: string[] = [];
    while (senders.length < 250)
      senders.push(
        ...(await Promise.all(Array.from({ length: 25 }, () => h.client.agents.create(multiAgent)))).map(
          (a) => a.id,
        ),
      );

    await plainMessage(bystander.id); // the first message of an agent starts what later ones reuse
    const alone: number[] = [];
    for (let i = 0; i < 5; i++) alone.push(await plainMessage(bystander.id));

    const started = performance.now();
    const runs: string[] = [];
    for (let i = 0; i < senders.length; i += 25)
      runs.push(
        ...(
          await Promise.all(
            senders.slice(i, i + 25).map((id) =>
              h.client.agents.messages.createAsync(id, {
                messages: [{ role: 'user', content: `ask ${answerer.id}` }],
              }),
            ),
          )
        ).map((r) => r.id),
      );
    // Every call sent and waiting, none of them holding an activity.
    const temporal = h.server.turns.temporal;
    const query = `WorkflowType = "agentMessageCall" AND TaskQueue = "${h.server.turns.taskQueues.agent}" AND ExecutionStatus = "Running"`;
    const waitingCalls = async () => {
      const descriptions: WorkflowExecutionDescription[] = [];
      for await (const info of temporal.workflow.list({ query }))
        descriptions.push(await temporal.workflow.getHandle(info.workflowId).describe());
      return descriptions.filter(waiting).length;
    };
    expect(await eventually(waitingCalls, (n) => n === 250, 240_000)).toBe(250);
    const waited = performance.now() - started;

    const meanwhile: number[] = [];
    for (let i = 0; i < 5; i++) meanwhile.push(await plainMessage(bystander.id));
    expect(await waitingCalls()).toBe(250);
    console.log(
      `plain message alone: ${alone.map(Math.round).join(', ')} ms (median ${Math.round(median(alone))}); ` +
        `with 250 agents waiting on one: ${meanwhile.map(Math.round).join(', ')} ms (median ${Math.round(median(meanwhile))}); ` +
        `250 calls sent and waiting after ${Math.round(waited)} ms`,
    );
    expect(median(meanwhile)).toBeLessThan(1_000);

    release();
    const released = performance.now();
    const completed = async () => {
      const [row] = await h.server.db.query<{ n: string }>(
        `SELECT count(*) AS n FROM runs WHERE id = ANY($1) AND status = 'completed'`,
        [runs],
      );
      return Number(row.n);
    };
    expect(await eventually(completed, (n) => n === 250, 420_000)).toBe(250);
    const [answered] = await h.server.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM tool_executions
        WHERE run_id = ANY($1) AND status = 'success' AND func_return LIKE $2`,
      [runs, `%'agent_id': '${answerer.id}', 'response': ['Four.']%`],
    );
    expect(Number(answered.n)).toBe(250);
    console.log(`250 replies delivered ${Math.round(performance.now() - released)} ms after the release`);
  }, 900_000);
});

describe('an agent message whose recipient does not answer', () => {
  const h = useAgentServer('openai', { AGENT_MESSAGE_TIMEOUT_MS: '4000', AGENT_MESSAGE_LOOK_MS: '500' });
  let expert: (marker: string) => { system: string; release: () => void };
  beforeAll(() => {
    expert = routeReplies(h.stub);
  });

  /** A sender asking an expert whose reply is held; the sender's run once its turn has ended. */
  async function askHeldExpert(marker: string) {
    const { system, release } = expert(marker);
    const [asker, answerer] = await Promise.all([
      h.client.agents.create(multiAgent),
      h.client.agents.create({ model: 'openai/gpt-4o-mini', system }),
    ]);
    const run = await h.client.agents.messages.createAsync(asker.id, {
      messages: [{ role: 'user', content: `ask ${answerer.id}` }],
    });
    const recipientRun = await eventually(
      async () => (await h.client.runs.list({ agent_id: answerer.id })).getPaginatedItems()[0],
      (r) => r?.status === 'running',
    );
    expect(recipientRun?.status).toBe('running');
    const [turn] = await h.server.db.query<{ workflow_id: string }>(
      'SELECT workflow_id FROM runs WHERE id = $1',
      [recipientRun.id],
    );
    return { run, answerer, release, recipientTurn: turn.workflow_id };
  }

  const toolReturnOfRun = async (runId: string) => {
    const done = await eventually(
      () => h.client.runs.retrieve(runId),
      (r) => r.status === 'completed',
      30_000,
    );
    expect(done.status).toBe('completed');
    return toolReturnsOf((await h.client.runs.messages.list(runId)).getPaginatedItems())[0];
  };

  it('ends the wait when the recipient’s turn is terminated without signalling (a look at its run)', async () => {
    const { run, recipientTurn, release } = await askHeldExpert('the-terminated-expert');
    await h.server.turns.temporal.workflow.getHandle(recipientTurn).terminate('terminated by the test');
    const answer = await toolReturnOfRun(run.id);
    expect(answer.status).toBe('error');
    expect(answer.tool_return).toContain('its turn ended without a reply');
    release();
  });

  it('gives up after AGENT_MESSAGE_TIMEOUT_MS with Letta’s error, and the late reply finds nobody waiting', async () => {
    const { run, recipientTurn, release } = await askHeldExpert('the-slow-expert');
    const answer = await toolReturnOfRun(run.id);
    expect(answer.status).toBe('error');
    expect(answer.tool_return).toContain('no reply within 4 seconds');
    release();
    const handle = h.server.turns.temporal.workflow.getHandle(recipientTurn);
    await handle.result();
    expect((await handle.describe()).status.name).toBe('COMPLETED');
  });
});

describe('an agent message across a worker restart', () => {
  let dataDir: string;
  let schema: TestSchema;
  let stub: OpenAiStub;
  let api: StartedProcess;
  let worker: StartedProcess;
  let env: Record<string, string>;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-agent-message-'));
    schema = await createTestSchema();
    stub = await startOpenAiStub();
    env = await serverProcessEnv({
      dataDir,
      databaseUrl: schema.url,
      temporalAddress: testTemporalAddress(),
      openAiBaseUrl: stub.baseURL,
      extra: { ACTIVITY_HEARTBEAT_TIMEOUT_MS: '2000' },
    });
    api = await startApiProcess(env);
    worker = await startWorkerProcess(env);
  });
  afterAll(async () => {
    if (api) await killProcess(api, 'SIGKILL');
    if (worker) await killProcess(worker, 'SIGKILL');
    await stub?.close();
    await schema?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps waiting through kill -9 of the worker: the wait lives in the history', async () => {
    const { system, release } = routeReplies(stub)('the-restarted-expert');
    const client = new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 0 });
    const [asker, answerer] = await Promise.all([
      client.agents.create(multiAgent),
      client.agents.create({ model: 'openai/gpt-4o-mini', system }),
    ]);
    const run = await client.agents.messages.createAsync(asker.id, {
      messages: [{ role: 'user', content: `ask ${answerer.id}` }],
    });
    const temporal = await connectTemporalClient();
    try {
      const call = await waitingCall(temporal.client, run.id);
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
        tool_return: `{'agent_id': '${answerer.id}', 'response': ['Four.']}`,
      });
      // Sent once: the new worker took the wait up from the history.
      const events = await workflowHistory(temporal.client, call.workflowId);
      expect(scheduledActivities(events).map((a) => a.type)).toEqual(['sendAgentMessages']);
      expect((await client.runs.list({ agent_id: answerer.id })).getPaginatedItems()).toHaveLength(1);
    } finally {
      await temporal.close();
    }
  }, 180_000);
});
