import { MockActivityEnvironment } from '@temporalio/testing';
import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import { useAgentServer, type AgentServer } from './helpers/agent-server';
import type { ChatRequest, OpenAiStub, StubReply } from './helpers/openai-stub';
import { eventually } from './helpers/eventually';
import { agentWithRun, toolCallsOf } from './helpers/runs';
import {
  callWaits,
  scheduledActivities,
  turnWorkflowId,
  waitingMessageCall,
  workflowHistory,
} from './helpers/temporal';
import { toolReturnsOf } from './helpers/tool-returns';
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

/** The call of a sender's run, once it waits; fails the test when it never does. */
async function waitingCall(temporal: Client, runId: string): Promise<WorkflowExecutionDescription> {
  const calls = await waitingMessageCall(temporal, runId);
  expect(calls.map(callWaits)).toEqual([true]);
  return calls[0];
}

type Expert = (marker: string) => { system: string; release: () => void };

/** A sender that asks an expert whose reply is held: the sender's run, its agents and the release. */
async function askHeldExpert(h: AgentServer<'openai'>, expert: Expert, marker: string) {
  const { system, release } = expert(marker);
  const [asker, answerer] = await Promise.all([
    h.client.agents.create(multiAgent),
    h.client.agents.create({ model: 'openai/gpt-4o-mini', system }),
  ]);
  const run = await h.client.agents.messages.createAsync(asker.id, {
    messages: [{ role: 'user', content: `ask ${answerer.id}` }],
  });
  return { run, asker, answerer, release };
}

/** The one run of `agentId` once it has `status`, and its turn's workflow id. */
async function onlyRunOf(h: AgentServer<'openai'>, agentId: string, status: string) {
  const run = await eventually(
    async () => (await h.client.runs.list({ agent_id: agentId })).getPaginatedItems()[0],
    (r) => r?.status === status,
    30_000,
  );
  expect(run?.status).toBe(status);
  return { run, turn: await turnWorkflowId(h.server.db, run.id) };
}

/** The tool return of a run's (one) call, once the run has completed. */
async function toolReturnOfRun(h: AgentServer<'openai'>, runId: string) {
  const done = await eventually(
    () => h.client.runs.retrieve(runId),
    (r) => r.status === 'completed',
    30_000,
  );
  expect(done.status).toBe('completed');
  return toolReturnsOf((await h.client.runs.messages.list(runId)).getPaginatedItems())[0];
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

describe('an agent message waits as a workflow', () => {
  const h = useAgentServer('openai', { AGENT_MAX_QUEUED_MESSAGES: '300' });
  let expert: Expert;
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
    const { run, answerer, release } = await askHeldExpert(h, expert, 'the-child-expert');
    const temporal = h.server.turns.temporal;
    const call = await waitingCall(temporal, run.id);
    const turn = await turnWorkflowId(h.server.db, run.id);
    expect(call.workflowId.startsWith(`${turn}/call_`)).toBe(true);
    expect(call.parentExecution?.workflowId).toBe(turn);
    release();
    expect(await toolReturnOfRun(h, run.id)).toMatchObject({
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
    const turnEvents = await workflowHistory(temporal, turn);
    expect(scheduledActivities(turnEvents).map((a) => a.type)).not.toContain('messageAgents');
  });

  it('ends at once when the sender’s run is cancelled while it waits, and the recipient’s turn still ends well', async () => {
    const { run, asker, answerer, release } = await askHeldExpert(h, expert, 'the-cancelled-expert');
    const temporal = h.server.turns.temporal;
    const call = await waitingCall(temporal, run.id);
    // The expert's reply is held: only a cancel of the wait itself lets the sender's run end.
    await h.client.agents.messages.cancel(asker.id);
    expect((await h.client.runs.retrieve(run.id)).status).toBe('cancelled');
    expect((await temporal.workflow.getHandle(call.workflowId).describe()).status.name).toBe('CANCELLED');
    const messages = (await h.client.runs.messages.list(run.id)).getPaginatedItems();
    expect(toolReturnsOf(messages)[0]).toMatchObject({ status: 'error' });

    // The recipient's turn goes on; its signal finds the call gone, which ends nothing but the signal.
    release();
    const { turn: recipientTurn } = await onlyRunOf(h, answerer.id, 'completed');
    const handle = temporal.workflow.getHandle(recipientTurn);
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
    const { turn } = await onlyRunOf(h, answerer.id, 'completed');
    await h.server.turns.temporal.workflow.getHandle(turn).result();
    const events = await workflowHistory(h.server.turns.temporal, turn);
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
      return descriptions.filter(callWaits).length;
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
  let expert: Expert;
  beforeAll(() => {
    expert = routeReplies(h.stub);
  });

  /** A sender waiting on an expert whose reply is held, once the expert's turn calls its model. */
  async function waitOnHeldExpert(marker: string) {
    const { run, answerer, release } = await askHeldExpert(h, expert, marker);
    const { turn } = await onlyRunOf(h, answerer.id, 'running');
    return { run, release, recipientTurn: turn };
  }

  it('ends the wait when the recipient’s turn is terminated without signalling (a look at its run)', async () => {
    const { run, recipientTurn, release } = await waitOnHeldExpert('the-terminated-expert');
    await h.server.turns.temporal.workflow.getHandle(recipientTurn).terminate('terminated by the test');
    const answer = await toolReturnOfRun(h, run.id);
    expect(answer.status).toBe('error');
    expect(answer.tool_return).toContain('its turn ended without a reply');
    release();
  });

  it('gives up after AGENT_MESSAGE_TIMEOUT_MS with Letta’s error, and the late reply finds nobody waiting', async () => {
    const { run, recipientTurn, release } = await waitOnHeldExpert('the-slow-expert');
    const answer = await toolReturnOfRun(h, run.id);
    expect(answer.status).toBe('error');
    expect(answer.tool_return).toContain('no reply within 4 seconds');
    release();
    const handle = h.server.turns.temporal.workflow.getHandle(recipientTurn);
    await handle.result();
    expect((await handle.describe()).status.name).toBe('COMPLETED');
  });
});
