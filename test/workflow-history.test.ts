import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import type { AgentTurnInput } from '../contracts/payloads';
import { agentIdKey, runIdKey, stopReasonKey } from '../contracts/search-attributes';
import { useAgentServer } from './helpers/agent-server';
import { clientToolReturn } from './helpers/approvals';
import { eventually } from './helpers/eventually';
import { sessionWorkflowIdFor } from '../src/agent/turns';
import { loadDeploymentId } from '../src/db/deployment';
import { replayOptions } from '../src/observability/temporal';
import {
  connectTemporalClient,
  localActivityTypes,
  payloadTexts,
  scheduledActivities,
  turnWorkflowId,
  finishedTurnHistory,
  workflowHistory,
  type HistoryEvent,
} from './helpers/temporal';

/** A JSON payload's value, as the SDK's default converter wrote it. */
/** Replays as the worker runs its workflows: with the same workflow interceptors. */
const replayWith = { workflowsPath: require.resolve('../workflows'), ...replayOptions };

const decodePayload = (data: Uint8Array | null | undefined) =>
  data ? JSON.parse(Buffer.from(data).toString('utf8')) : undefined;

const summaryOf = (event: HistoryEvent) => decodePayload(event.userMetadata?.summary?.data);

describe('what the Temporal Web UI shows of an agent turn', () => {
  const h = useAgentServer('openai');
  let temporalClient: Client;
  let closeTemporal: () => Promise<void>;

  beforeAll(async () => {
    ({ client: temporalClient, close: closeTemporal } = await connectTemporalClient());
  });
  afterAll(async () => {
    await closeTemporal?.();
  });

  const createAgent = () =>
    h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
    });

  it('carries no secret: agent secrets, sandbox variables and the model key stay out of the history', async () => {
    const agentSecret = `AGENT-SECRET-${Date.now()}`;
    const sandboxSecret = `SANDBOX-SECRET-${Date.now()}`;
    // The 1.x client has no sandbox configs resource: Letta's REST routes, as a 0.x client calls them.
    const post = (path: string, body: unknown) =>
      fetch(`${h.server.url}/v1/sandbox-config${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then((res) => res.json() as Promise<{ id: string }>);
    const sandbox = await post('/', { config: {} });
    await post(`/${sandbox.id}/environment-variable`, { key: 'SANDBOX_TOKEN', value: sandboxSecret });
    const tool = await h.client.tools.create({
      source_code: [
        'def token_lengths() -> str:',
        '    """Lengths of the tokens this tool was given."""',
        '    import os',
        "    return f\"{len(os.environ['AGENT_TOKEN'])} {len(os.environ['SANDBOX_TOKEN'])}\"",
        '',
      ].join('\n'),
    });
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      tool_ids: [tool.id],
      secrets: { AGENT_TOKEN: agentSecret },
    });
    h.stub.enqueue({ toolCalls: [{ name: 'token_lengths' }] }, { text: 'done' });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'how long are your tokens?' }],
    });
    const toolReturn = response.messages.find((m) => m.message_type === 'tool_return_message');
    expect(toolReturn).toMatchObject({ tool_return: `${agentSecret.length} ${sandboxSecret.length}` });

    const history = await finishedTurnHistory(
      temporalClient,
      await turnWorkflowId(h.server.db, response.messages[0].run_id!),
    );
    const texts = payloadTexts(history).join('\n');
    for (const secret of [agentSecret, sandboxSecret, 'test-key']) expect(texts).not.toContain(secret);
  });

  it('keeps a 50-step run small: ids and summaries, never the transcript', async () => {
    const agent = await createAgent();
    const longUserText = `USERTEXT ${'the user says a great deal '.repeat(200)}`;
    const longModelText = `MODELTEXT ${'the model thinks aloud '.repeat(200)}`;
    h.stub.setDefault(() => ({
      text: longModelText,
      toolCalls: [{ name: 'conversation_search', arguments: { query: `QUERYTEXT ${'x'.repeat(3000)}` } }],
    }));
    let response;
    try {
      response = await h.client.agents.messages.create(agent.id, {
        messages: [{ role: 'user', content: longUserText }],
        max_steps: 50,
      });
    } finally {
      h.stub.setDefault(() => ({ text: 'ok' }));
    }
    expect(response.stop_reason.stop_reason).toBe('max_steps');
    expect(response.usage.step_count).toBe(50);

    const workflowId = await turnWorkflowId(h.server.db, response.messages[0].run_id!);
    const events = await finishedTurnHistory(temporalClient, workflowId);
    // The message's start is the turn's summary (STEP_SUMMARY_MESSAGE_CHARS, 80), and no more of it.
    const summary = decodePayload(events[0].userMetadata!.summary!.data) as string;
    expect(summary).toMatch(/^agent-[^:]+: USERTEXT the user says/);
    expect(summary.length).toBeLessThanOrEqual(`${agent.name}: `.length + 80);
    const texts = payloadTexts(events).filter((t) => t !== JSON.stringify(summary));
    for (const marker of ['USERTEXT', 'MODELTEXT', 'QUERYTEXT']) {
      expect(texts.filter((t) => t.includes(marker))).toEqual([]);
    }
    // The turn's input lists the agent's tools (ids and names); every other payload stays short.
    const input = payloadTexts(events[0].workflowExecutionStartedEventAttributes!.input);
    expect(Math.max(...input.map((t) => t.length))).toBeLessThan(2_000);
    const rest = payloadTexts(events.slice(1));
    expect(Math.max(...rest.map((t) => t.length))).toBeLessThan(1_000);
    const size = temporal.api.history.v1.History.encode({ events }).finish().length;
    expect(size).toBeLessThan(512 * 1024); // Temporal's limits are 50 MB and 51,200 events
    expect(events.length).toBeLessThan(2_000);
  });

  it('names every activity with a summary, and tags the workflow with search attributes', async () => {
    const agent = await createAgent();
    h.stub.enqueue(
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'likes tea' } }] },
      { text: 'Noted.' },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'I like tea' }],
    });
    const runId = response.messages[0].run_id!;
    const workflowId = await turnWorkflowId(h.server.db, runId);
    expect(workflowId).toContain(agent.id);
    expect(workflowId).toContain(runId);

    const events = await finishedTurnHistory(temporalClient, workflowId);
    const summaries = (kind: 'activityTaskScheduledEventAttributes' | 'markerRecordedEventAttributes') =>
      events.filter((e) => e[kind]).map(summaryOf);
    // Model calls are regular activities; a built-in tool that works on the database alone runs as a
    // local activity: a marker, named as a scheduled activity would be.
    expect(summaries('activityTaskScheduledEventAttributes')).toEqual([
      'model openai/gpt-4o-mini',
      'model openai/gpt-4o-mini',
    ]);
    const namedMarkers = summaries('markerRecordedEventAttributes').filter((s) => s !== undefined); // not patches
    expect(namedMarkers).toEqual(['memory_insert (built-in)']);

    const description = await temporalClient.workflow.getHandle(workflowId).describe();
    // Lists show the agent's name and the message's start; the workflow's page, who and what in full.
    expect(await description.staticSummary()).toBe(`${agent.name}: I like tea`);
    const details = await description.staticDetails();
    expect(details).toContain(`**Agent** ${agent.name} (\`${agent.id}\`)`);
    expect(details).toContain(`**Run** \`${runId}\` (send_message)`);
    expect(details).not.toContain('tea');
    const attributes = description.typedSearchAttributes;
    expect(attributes.get(agentIdKey)).toBe(agent.id);
    expect(attributes.get(runIdKey)).toBe(runId);
    expect(attributes.get(stopReasonKey)).toBe('end_turn');

    const listed = await eventually(
      async () => {
        const found = [];
        for await (const wf of temporalClient.workflow.list({
          query: `LettaAgentId = "${agent.id}" AND LettaStopReason = "end_turn"`,
        })) {
          found.push(wf.workflowId);
        }
        return found;
      },
      (found) => found.length > 0,
    );
    expect(listed).toEqual([workflowId]);
  });

  it("shows what the turn is doing in the workflow's current details", async () => {
    const agent = await createAgent();
    h.stub.enqueue({ text: 'slowly', delayMs: 3_000 });
    const run = await h.client.agents.messages.createAsync(agent.id, {
      messages: [{ role: 'user', content: 'Take your time' }],
    });
    const handle = temporalClient.workflow.getHandle(await turnWorkflowId(h.server.db, run.id));
    const details = await eventually(
      async () =>
        (await handle.query<temporal.api.sdk.v1.IWorkflowMetadata>('__temporal_workflow_metadata'))
          .currentDetails,
      (value) => Boolean(value),
    );
    expect(details).toBe('Waiting for the model (step 1)');
    await handle.result();
    const after = await handle.query<temporal.api.sdk.v1.IWorkflowMetadata>('__temporal_workflow_metadata');
    expect(after.currentDetails).toBe('Stopped: end_turn');
  });

  it('shows retries of the model call in the history', async () => {
    const agent = await createAgent();
    h.stub.enqueue({ status: 503 }, { status: 503 }, { text: 'Third time lucky' });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    const events = await finishedTurnHistory(
      temporalClient,
      await turnWorkflowId(h.server.db, response.messages[0].run_id!),
    );
    // A regular activity: its start names the attempt that answered, its failures stay out of the
    // history until the last (the Temporal UI shows them under the pending activity meanwhile).
    const started = events.find((e) => e.activityTaskStartedEventAttributes);
    expect(started?.activityTaskStartedEventAttributes?.attempt).toBe(3);
  });

  it('carries the turn context in its input, runs database-only tools as local activities', async () => {
    const agent = await createAgent();
    const note = { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'x' } }] };
    h.stub.enqueue(note, { text: 'Noted.' });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
    });
    const workflowId = await turnWorkflowId(h.server.db, response.messages[0].run_id!);
    const events = await finishedTurnHistory(temporalClient, workflowId);
    const started = events[0].workflowExecutionStartedEventAttributes!;
    const input = decodePayload(started.input!.payloads![0].data) as AgentTurnInput;
    expect(input.context!.tools.map((t) => t.name)).toContain('memory_insert');
    // One patch: histories from before it end their runs with an activity after the last model call.
    const patchMarkers = events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch');
    expect(patchMarkers).toHaveLength(1);
    expect(localActivityTypes(events)).toEqual(['runBuiltinTool']);
    expect(scheduledActivities(events).map((a) => a.type)).toEqual(['callModel', 'callModel']);
    await Worker.runReplayHistory(replayWith, { events }, workflowId);
  });

  it('pauses in the model call and resumes with the tools the answer brought', async () => {
    const agent = await createAgent();
    h.stub.enqueue({ toolCalls: [{ name: 'ask_user', arguments: {} }] }, { text: 'Thanks.' });
    const paused = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Ask me' }],
      client_tools: [{ name: 'ask_user', parameters: { type: 'object', properties: {} } }],
    });
    expect(paused.stop_reason.stop_reason).toBe('requires_approval');
    const workflowId = await turnWorkflowId(h.server.db, paused.messages[0].run_id!);
    const tagged = await eventually(
      () => workflowHistory(temporalClient, workflowId),
      (events) => events.some((e) => e.upsertWorkflowSearchAttributesEventAttributes),
    );
    expect(scheduledActivities(tagged).map((a) => a.type)).toEqual(['callModel']);

    const call = paused.messages.find((m) => m.message_type === 'approval_request_message') as {
      tool_call: { tool_call_id: string };
    };
    const answered = await h.client.agents.messages.create(agent.id, {
      messages: [clientToolReturn(call.tool_call.tool_call_id, 'yes')],
    });
    expect(answered.stop_reason.stop_reason).toBe('end_turn');
    await temporalClient.workflow.getHandle(workflowId).result();
    const events = await finishedTurnHistory(temporalClient, workflowId);
    // The turn's tools came in its input, the resumed request's with the answer.
    expect(localActivityTypes(events)).toEqual(['applyApprovalAnswer']);
    expect(scheduledActivities(events).map((a) => a.type)).toEqual(['callModel', 'callModel']);

    await Worker.runReplayHistory(replayWith, { events }, workflowId);
  });
  it("replays an agent's session: two turns queued behind one the API started, the first paused for a client tool and answered", async () => {
    const agent = await createAgent();
    const clientTools = [{ name: 'ask_user', parameters: { type: 'object', properties: {} } }];
    h.stub.enqueue(
      { text: 'Slow.', delayMs: 1_000 },
      { toolCalls: [{ name: 'ask_user', arguments: {} }] },
      { text: 'Thanks.' },
      { text: 'Hi.' },
    );
    const say = (content: string, extra = {}) =>
      h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content }], ...extra });
    const runsOf = async () => (await h.client.runs.list({ agent_id: agent.id })).getPaginatedItems().length;
    // The first message finds the agent idle: the API starts its turn, and the next two queue in the
    // agent's session behind it, in the order they were sent.
    const first = say('First');
    await eventually(runsOf, (n) => n === 1);
    const asking = say('Ask me', { client_tools: clientTools });
    await eventually(runsOf, (n) => n === 2);
    const hello = say('Hello');
    await first;
    const paused = await asking;
    const call = paused.messages.find((m) => m.message_type === 'approval_request_message') as {
      tool_call: { tool_call_id: string };
    };
    await h.client.agents.messages.create(agent.id, {
      messages: [clientToolReturn(call.tool_call.tool_call_id, 'yes')],
    });
    expect((await hello).stop_reason.stop_reason).toBe('end_turn');

    const sessionId = sessionWorkflowIdFor(await loadDeploymentId(h.server.db), agent.id, null);
    const events = await eventually(
      () => workflowHistory(temporalClient, sessionId),
      (history) => history.filter((e) => e.childWorkflowExecutionCompletedEventAttributes).length === 2,
    );
    await Worker.runReplayHistory(replayWith, { events }, sessionId);

    // Recorded from the first version of sessions: the same two turns, replayed by this one.
    const recorded = temporal.api.history.v1.History.decode(
      fs.readFileSync(path.join(__dirname, 'fixtures/histories/session-two-steps.binpb')),
    );
    expect(recorded.events.filter((e) => e.childWorkflowExecutionCompletedEventAttributes)).toHaveLength(2);
    expect(recorded.events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes)).toHaveLength(2);
    await Worker.runReplayHistory(replayWith, recorded);
  });
});
