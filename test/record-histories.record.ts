/**
 * Records the histories of test/fixtures/histories/ from this server: each scenario below drives the
 * real server (with the OpenAI stub) into one workflow shape or state and saves that workflow's history.
 * Not part of `npm test` (jest's testMatch is *.test.ts); run it with `npm run histories:record`.
 *
 * It only ever adds files. By default it records the scenarios the manifest does not list yet (a new
 * scenario added here); HISTORIES=all records every scenario again, and HISTORIES=a,b the scenarios
 * named. A recording whose file name is taken is written under a dated name next to the old one: the
 * old histories stay, since they are what turns paused under older code look like.
 */
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import Letta, { toFile } from '@letta-ai/letta-client';
import type { LettaResponse } from '@letta-ai/letta-client/resources/agents/messages';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import pg from 'pg';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { useAgentServer, useContinuingAgentServer } from './helpers/agent-server';
import { insertsUnderCountRule } from './helpers/long-requests';
import { clientToolReturn } from './helpers/approvals';
import { eventually } from './helpers/eventually';
import {
  HISTORIES_DIR,
  readManifest,
  workflowTypeOf,
  writeManifest,
  type HistoryEntry,
} from './helpers/histories';
import { shows, type Branch } from './helpers/history-branches';
import { startCountingMcpServer, startElicitServer, startHttpEverything } from './helpers/mcp-servers';
import { apiUrl, killProcess, serverProcessEnv, startApiProcess } from './helpers/server-processes';
import { testTemporalAddress } from './helpers/env';
import { createTestSchema } from './helpers/postgres';
import { startOpenAiStub } from './helpers/openai-stub';
import {
  continueAsNewChain,
  localActivityTypes,
  scheduledActivities,
  startInput,
  turnWorkflowId,
  type ChainRun,
  type HistoryEvent,
} from './helpers/temporal';
import type { AgentTurnInput } from '../contracts/payloads';
import { sessionWorkflowIdFor } from '../src/agent/turns';
import { agentLock } from '../src/db/agents';
import { replayOptions } from '../src/observability/temporal';
import { ingestionWorkflowId } from '../src/agent/folders';
import { projectRoot } from '../src/paths';
import { agentIdKey } from '../contracts/search-attributes';

type Events = HistoryEvent[];

const selection = (process.env.HISTORIES ?? 'missing').trim();
const listed = new Set(readManifest().histories.map((h) => h.scenario));
const wanted = (scenario: string) =>
  selection === 'all' ||
  (selection === 'missing' ? !listed.has(scenario) : selection.split(',').includes(scenario));

const commit = (() => {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: projectRoot, encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
})();

/**
 * Saves a history under `<name>.binpb`, or a dated name when that is taken, and lists it with the
 * branches it covers.
 */
async function save(scenario: string, state: string, events: Events, branches: Branch[] = []): Promise<void> {
  // What is saved must replay against the code that recorded it, and show the branches it claims.
  await Worker.runReplayHistory(
    { workflowsPath: require.resolve('../workflows'), ...replayOptions },
    { events },
    scenario,
  );
  for (const branch of branches) expect([branch, shows(branch, { events })]).toEqual([branch, true]);
  const day = new Date().toISOString().slice(0, 10);
  let file = `${scenario}.binpb`;
  for (let n = 1; fs.existsSync(path.join(HISTORIES_DIR, file)); n++)
    file = `${scenario}.${day}${n > 1 ? `-${n}` : ''}.binpb`;
  fs.writeFileSync(
    path.join(HISTORIES_DIR, file),
    temporal.api.history.v1.History.encode({ events }).finish(),
  );
  const manifest = readManifest();
  const entry: HistoryEntry = {
    file,
    scenario,
    workflowType: workflowTypeOf({ events }),
    state,
    ...(branches.length ? { branches } : {}),
    recorded: day,
    ...(commit ? { commit } : {}),
  };
  manifest.histories.push(entry);
  writeManifest(manifest);
}

const record = (scenario: string, run: () => Promise<void>) =>
  (wanted(scenario) ? it : it.skip)(scenario, run, 60_000);

describe('recording the replay corpus', () => {
  const h = useAgentServer('openai', {
    OUTBOUND_ALLOW_PRIVATE: '127.0.0.1',
    WEBHOOK_SECRET: 'a-webhook-secret-for-recordings',
    WEBHOOK_RETRY_INITIAL_MS: '100',
    WEBHOOK_RETRY_MAX_MS: '200',
    // A model failure's retries over in a moment.
    MODEL_MAX_ATTEMPTS: '2',
    MODEL_RETRY_INITIAL_MS: '100',
    // A call of a few seconds outlives it only by heartbeating.
    ACTIVITY_HEARTBEAT_TIMEOUT_MS: '2000',
    // An agent message whose recipient's turn dies is found within a second.
    AGENT_MESSAGE_LOOK_MS: '1000',
  });
  const temporalClient = (): Client => h.server.turns.temporal;
  const historyOf = async (workflowId: string, runId?: string): Promise<Events> =>
    (await temporalClient().workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
  /** Whether no workflow task is pending: the last one scheduled has completed. */
  const settled = (events: Events) => {
    const last = (has: (e: HistoryEvent) => unknown) => events.map((e) => Boolean(has(e))).lastIndexOf(true);
    return (
      last((e) => e.workflowTaskCompletedEventAttributes) >
      last((e) => e.workflowTaskScheduledEventAttributes)
    );
  };
  /** The history once `done` holds, and once its last workflow task is complete (a stable point). */
  const historyWhen = async (workflowId: string, done: (events: Events) => boolean): Promise<Events> => {
    const events = await eventually(
      () => historyOf(workflowId),
      (e) => done(e) && settled(e),
      30_000,
    );
    if (!done(events)) throw new Error(`${workflowId} never reached the state to record`);
    return events;
  };
  const finished = async (workflowId: string): Promise<Events> => {
    await temporalClient().workflow.getHandle(workflowId).result();
    return historyOf(workflowId);
  };
  /** The one workflow of `type` this server started (there is one per scenario that looks for it). */
  const onlyWorkflowOf = async (type: string): Promise<string> => {
    const query = `WorkflowType = "${type}" AND TaskQueue = "${h.server.turns.taskQueues.agent}"`;
    const found = await eventually(
      async () => {
        const ids: string[] = [];
        for await (const wf of temporalClient().workflow.list({ query })) ids.push(wf.workflowId);
        return ids;
      },
      (ids) => ids.length > 0,
      30_000,
    );
    if (found.length !== 1) throw new Error(`expected one ${type} workflow, found ${found.length}`);
    return found[0];
  };
  const createAgent = (extra: Record<string, unknown> = {}) =>
    h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
      ...extra,
    });
  const approvalCallOf = (messages: unknown[]) =>
    (
      messages.find((m) => (m as { message_type: string }).message_type === 'approval_request_message') as {
        tool_call: { tool_call_id: string };
      }
    ).tool_call.tool_call_id;
  const pythonTool = (source: string) => h.client.tools.create({ source_code: source });

  // Tool and model calls as local activities of the turn's worker (LOCAL_TOOL_CALLS, LOCAL_MODEL_CALLS).
  const local = useAgentServer('openai', { LOCAL_TOOL_CALLS: 'true', LOCAL_MODEL_CALLS: 'true' });

  /** The history of a turn of the `local` server that the stub's `replies` take to its end. */
  const finishedLocalTurn = async (agentId: string, ...replies: Parameters<typeof local.stub.enqueue>) => {
    local.stub.enqueue(...replies);
    const response = await local.client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'I like tea' }],
    });
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    const workflowId = await turnWorkflowId(local.server.db, response.messages[0].run_id!);
    const handle = local.server.turns.temporal.workflow.getHandle(workflowId);
    await handle.result();
    return (await handle.fetchHistory()).events ?? [];
  };

  record('step-local-tool-calls', async () => {
    const ping = await local.client.tools.create({
      source_code:
        'def ping(n: int) -> int:\n    """Returns n.\n\n    Args:\n        n: a number\n    """\n    return n\n',
    });
    const agent = await local.client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
      tool_ids: [ping.id],
    });
    const events = await finishedLocalTurn(
      agent.id,
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'likes tea' } }] },
      { toolCalls: [{ name: 'ping', arguments: { n: 1 } }] },
      { text: 'Done.' },
    );
    expect(localActivityTypes(events)).toEqual([
      'callModel',
      'runBuiltinTool',
      'callModel',
      'runSandboxTool',
      'callModel',
    ]);
    await save(
      'step-local-tool-calls',
      'completed (end_turn): model → memory_insert → model → custom Python tool → model, the calls local activities, the last model call ending the run',
      events,
      ['step-end-turn'],
    );
  });

  record('step-model-call-ends-run', async () => {
    const agent = await local.client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
    });
    const events = await finishedLocalTurn(
      agent.id,
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'likes tea' } }] },
      { text: 'Noted.' },
    );
    expect(localActivityTypes(events)).toEqual(['callModel', 'runBuiltinTool', 'callModel']);
    await save(
      'step-model-call-ends-run',
      'completed (end_turn): model → memory_insert → model, whose final reply ended the run (no finishRun after it)',
      events,
      ['step-end-turn'],
    );
  });

  /** A turn of the `local` server paused for the client tool `ask_user`; `then`, the replies after it. */
  const pausedLocally = async (...then: { text: string }[]) => {
    const agent = await local.client.agents.create({ model: 'openai/gpt-4o-mini' });
    local.stub.enqueue({ toolCalls: [{ name: 'ask_user', arguments: {} }] }, ...then);
    const paused = await local.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Ask me' }],
      client_tools: [{ name: 'ask_user', parameters: { type: 'object', properties: {} } }],
    });
    expect(paused.stop_reason.stop_reason).toBe('requires_approval');
    const workflowId = await turnWorkflowId(local.server.db, paused.messages[0].run_id!);
    const handle = local.server.turns.temporal.workflow.getHandle(workflowId);
    const events = await eventually(
      async () => (await handle.fetchHistory()).events ?? [],
      (e) => e.some((event) => event.upsertWorkflowSearchAttributesEventAttributes) && settled(e),
      30_000,
    );
    return { agent, paused, handle, events };
  };

  record('step-paused-local-model-call', async () => {
    const { events } = await pausedLocally();
    expect(localActivityTypes(events)).toEqual(['callModel']);
    await save(
      'step-paused-local-model-call',
      'running: paused for a client-side tool (ask_user) by a model call run as a local activity',
      events,
      ['step-paused'],
    );
  });

  record('step-local-model-calls', async () => {
    const { agent, paused, handle } = await pausedLocally({ text: 'Thanks.' });
    const call = approvalCallOf(paused.messages);
    const answered = await local.client.agents.messages.create(agent.id, {
      messages: [clientToolReturn(call, 'yes')],
    });
    expect(answered.stop_reason.stop_reason).toBe('end_turn');
    await handle.result();
    const events = (await handle.fetchHistory()).events ?? [];
    expect(localActivityTypes(events)).toEqual(['callModel', 'applyApprovalAnswer', 'callModel']);
    await save(
      'step-local-model-calls',
      'completed (end_turn): a model call paused for a client tool, answered, then the model; model calls and the answer local activities, the last model call ending the run',
      events,
      ['step-end-turn', 'step-approval-answered'],
    );
  });

  record('step-finished-tools', async () => {
    const shout = await pythonTool(
      'def shout(text: str) -> str:\n    """Shouts.\n\n    Args:\n        text: what to shout\n    """\n    return text.upper()\n',
    );
    const everything = await startHttpEverything('streamableHttp');
    try {
      const server = await h.client.mcpServers.create({
        server_name: 'everything',
        config: { mcp_server_type: 'streamable_http', server_url: everything.url },
      });
      const echo = (await h.client.mcpServers.tools.list(server.id!)).find((t) => t.name === 'echo')!;
      const agent = await createAgent({ tool_ids: [shout.id, echo.id] });
      h.stub.enqueue(
        { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'Likes tea' } }] },
        { toolCalls: [{ name: 'shout', arguments: { text: 'tea' } }] },
        { toolCalls: [{ name: 'echo', arguments: { message: 'tea' } }] },
        { text: 'Noted, shouted and echoed.' },
      );
      const response = await h.client.agents.messages.create(agent.id, {
        messages: [{ role: 'user', content: 'I like tea' }],
      });
      expect(response.stop_reason.stop_reason).toBe('end_turn');
      const events = await finished(await turnWorkflowId(h.server.db, response.messages[0].run_id!));
      expect(scheduledActivities(events).map((a) => a.type)).toEqual([
        'callModel',
        'callModel',
        'runSandboxTool',
        'callModel',
        'runMcpTool',
        'callModel',
      ]);
      await save(
        'step-finished-tools',
        'completed (end_turn): model → memory_insert (local activity) → model → custom Python tool (sandbox) → model → MCP echo → model',
        events,
        ['step-end-turn'],
      );
    } finally {
      everything.child.kill('SIGKILL');
    }
  });

  /** The turn of a response that paused it for approval: its workflow, and its history once paused. */
  const pausedTurn = async (paused: LettaResponse) => {
    expect(paused.stop_reason.stop_reason).toBe('requires_approval');
    const workflowId = await turnWorkflowId(h.server.db, paused.messages[0].run_id!);
    const events = await historyWhen(workflowId, (e) =>
      e.some((event) => event.upsertWorkflowSearchAttributesEventAttributes),
    );
    return { workflowId, events };
  };

  /** A turn paused for approval of memory_insert (a requires_approval rule), by a request that waited. */
  const pausedForApproval = async () => {
    const agent = await createAgent({
      tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
    });
    h.stub.enqueue({
      toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'Likes tea' } }],
    });
    const paused = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Remember I like tea' }],
    });
    return { agent, paused, ...(await pausedTurn(paused)) };
  };

  record('step-paused-client-tool', async () => {
    const agent = await createAgent();
    h.stub.enqueue({ toolCalls: [{ name: 'ask_user', arguments: {} }] }); // never answered
    const { events } = await pausedTurn(
      await h.client.agents.messages.create(agent.id, {
        messages: [{ role: 'user', content: 'Ask me' }],
        client_tools: [{ name: 'ask_user', parameters: { type: 'object', properties: {} } }],
      }),
    );
    await save(
      'step-paused-client-tool',
      'running: paused for a client-side tool (ask_user), waiting on the approvalAnswered signal',
      events,
      ['step-paused'],
    );
  });

  record('step-approval-answered', async () => {
    const { agent, paused, workflowId, events: waiting } = await pausedForApproval();
    await save(
      'step-paused-approval',
      'running: paused for approval of a server tool (memory_insert, requires_approval rule)',
      waiting,
      ['step-paused'],
    );

    h.stub.enqueue({ text: 'Noted.' });
    const answered = await h.client.agents.messages.create(agent.id, {
      messages: [
        {
          type: 'approval',
          approvals: [{ type: 'approval', tool_call_id: approvalCallOf(paused.messages), approve: true }],
        },
      ],
    });
    expect(answered.stop_reason.stop_reason).toBe('end_turn');
    await save(
      'step-approval-answered',
      'completed (end_turn): paused for approval of memory_insert, approved by a second request, the tool run, then the model',
      await finished(workflowId),
      ['step-end-turn', 'step-approval-answered'],
    );
  });

  record('step-mid-tool-call', async () => {
    const slow = await pythonTool(
      'import time\n\ndef slow_answer() -> str:\n    """Answers slowly."""\n    time.sleep(4)\n    return "slow answer"\n',
    );
    const agent = await createAgent({ tool_ids: [slow.id] });
    h.stub.enqueue({ toolCalls: [{ name: 'slow_answer', arguments: {} }] }, { text: 'Answered.' });
    const run = await h.client.agents.messages.createAsync(agent.id, {
      messages: [{ role: 'user', content: 'Answer slowly' }],
    });
    const workflowId = await turnWorkflowId(h.server.db, run.id);
    const events = await historyWhen(workflowId, (e) =>
      scheduledActivities(e).some((a) => a.type === 'runSandboxTool'),
    );
    expect(events.some((e) => e.activityTaskCompletedEventAttributes?.scheduledEventId)).toBe(true); // the model's
    await save(
      'step-mid-tool-call',
      'running: a custom Python tool (sandbox activity) scheduled and still running',
      events,
      ['step-mid-tool-call'],
    );
    await temporalClient().workflow.getHandle(workflowId).result();
  });

  const pingSource = (name: string) =>
    `def ${name}(n: int) -> int:\n    """Returns n.\n\n    Args:\n        n: a number\n    """\n    return n\n`;
  const napSource =
    'import time\n\ndef nap(seconds: int) -> str:\n    """Sleeps.\n\n    Args:\n        seconds: how long\n    """\n    time.sleep(seconds)\n    return "rested"\n';

  /** An agent with the custom tool nap, which sleeps as long as it is told. */
  const nappingAgent = async () => createAgent({ tool_ids: [(await pythonTool(napSource)).id] });

  /** The activities a workflow has pending: none before it starts (a session's turn waiting its place in the queue). */
  const pendingActivities = async (workflowId: string) => {
    try {
      return (await temporalClient().workflow.getHandle(workflowId).describe()).raw.pendingActivities ?? [];
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return [];
      throw error;
    }
  };

  /**
   * Once the turn's call of a custom tool runs in the sandbox: the turn's description shows it started
   * (a regular activity's start is written in its history only when it ends).
   */
  const sandboxCallRuns = async (workflowId: string) => {
    const running = (pending: Awaited<ReturnType<typeof pendingActivities>>) =>
      pending.some(
        (a) =>
          a.activityType?.name === 'runSandboxTool' &&
          a.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
      );
    if (!running(await eventually(() => pendingActivities(workflowId), running, 30_000)))
      throw new Error(`${workflowId} never ran its call in the sandbox`);
  };

  /**
   * Sends a message to an idle conversation, whose turn the API starts (the turn takes the lane), and
   * returns once that turn has called the model: `answer`, the request's answer, is still to come.
   */
  const holdingTheLane = async <T>(send: () => Promise<T>) => {
    const seen = h.stub.requests.length;
    const answer = send();
    await eventually(
      async () => h.stub.requests.length,
      (n) => n > seen,
    );
    return { answer };
  };

  /** The finished history of the turn `createAsync` started for `content`, once the stub has played. */
  const asyncTurn = async (agentId: string, content: string, extra: Record<string, unknown> = {}) => {
    const run = await h.client.agents.messages.createAsync(agentId, {
      messages: [{ role: 'user', content }],
      ...extra,
    });
    return turnWorkflowId(h.server.db, run.id);
  };

  /** A reply of two calls of a tool `parallel` or not, on an agent that allows several calls a reply. */
  const twoCallsOfOneReply = async (parallel: boolean) => {
    const name = parallel ? 'ping_together' : 'ping_in_turn';
    const tool = await h.client.tools.create({
      source_code: pingSource(name),
      enable_parallel_execution: parallel,
    });
    const agent = await createAgent({ tool_ids: [tool.id], parallel_tool_calls: true });
    h.stub.enqueue(
      {
        toolCalls: [
          { name, arguments: { n: 1 } },
          { name, arguments: { n: 2 } },
        ],
      },
      { text: 'Both answered.' },
    );
    const events = await finished(await asyncTurn(agent.id, 'Ping twice'));
    expect(scheduledActivities(events).map((a) => a.type)).toEqual([
      'callModel',
      'runSandboxTool',
      'runSandboxTool',
      'callModel',
    ]);
    return events;
  };

  record('step-calls-in-order', async () => {
    await save(
      'step-calls-in-order',
      'completed (end_turn): model → two calls of one reply to a custom Python tool that is not parallel-safe, the second scheduled once the first ended → model',
      await twoCallsOfOneReply(false),
      ['step-calls-in-order', 'step-end-turn'],
    );
  });

  record('step-parallel-calls', async () => {
    await save(
      'step-parallel-calls',
      'completed (end_turn): model → two calls of one reply to a custom Python tool with enable_parallel_execution, scheduled by one workflow task → model',
      await twoCallsOfOneReply(true),
      ['step-parallel-calls', 'step-end-turn'],
    );
  });

  record('step-rejected-call', async () => {
    const agent = await createAgent();
    h.stub.enqueue(
      { toolCalls: [{ name: 'no_such_tool', arguments: {} }] },
      { text: 'That tool does not exist.' },
    );
    const events = await finished(await asyncTurn(agent.id, 'Use a tool you lack'));
    expect(localActivityTypes(events)).toContain('rejectToolCall');
    await save(
      'step-rejected-call',
      'completed (end_turn): model → a call of a tool the agent does not have, refused (rejectToolCall) → model',
      events,
      ['step-rejected-call', 'step-end-turn'],
    );
  });

  record('step-tool-call-failed', async () => {
    const everything = await startHttpEverything('streamableHttp');
    const server = await h.client.mcpServers.create({
      server_name: 'stays-down',
      config: { mcp_server_type: 'streamable_http', server_url: everything.url },
    });
    const echo = (await h.client.mcpServers.tools.list(server.id!)).find((t) => t.name === 'echo')!;
    const agent = await createAgent({ tool_ids: [echo.id] });
    // The server stops for good: every attempt of the call's activity fails to connect.
    const exited = once(everything.child, 'exit');
    everything.child.kill('SIGKILL');
    await exited;
    h.stub.enqueue(
      { toolCalls: [{ name: 'echo', arguments: { message: 'tea' } }] },
      { text: 'The echo server is down.' },
    );
    const events = await finished(await asyncTurn(agent.id, 'Echo tea'));
    expect(scheduledActivities(events).map((a) => a.type)).toEqual(['callModel', 'runMcpTool', 'callModel']);
    await save(
      'step-tool-call-failed',
      'completed (end_turn): model → MCP echo, whose server was down: the activity failed on every attempt (TOOL_MAX_ATTEMPTS), the call refused with the failure (rejectToolCall) → model',
      events,
      ['step-tool-call-failed', 'step-rejected-call', 'step-end-turn'],
    );
    await h.client.mcpServers.delete(server.id!);
  });

  record('step-run-code', async () => {
    const agent = await createAgent({ tools: ['run_code'] });
    h.stub.enqueue(
      { toolCalls: [{ name: 'run_code', arguments: { code: 'print(6 * 7)', language: 'python' } }] },
      { text: 'It printed 42.' },
    );
    const events = await finished(await asyncTurn(agent.id, 'Run some code'));
    expect(scheduledActivities(events).map((a) => a.type)).toEqual(['callModel', 'runCode', 'callModel']);
    await save(
      'step-run-code',
      'completed (end_turn): model → run_code (the runCode activity, on the sandbox queue) → model',
      events,
      ['step-run-code', 'step-end-turn'],
    );
  });

  record('step-required-tool-alert', async () => {
    const agent = await createAgent({
      tool_rules: [{ type: 'required_before_exit', tool_name: 'memory_insert' }],
    });
    h.stub.enqueue(
      { text: 'Bye.' },
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'Likes tea' } }] },
      { text: 'Noted. Bye.' },
    );
    const events = await finished(await asyncTurn(agent.id, 'I like tea'));
    expect(localActivityTypes(events)).toContain('appendUserMessage');
    await save(
      'step-required-tool-alert',
      'completed (end_turn): a required_before_exit rule on memory_insert; the model replied without calls, the turn told it the tool is still to be called (appendUserMessage) → model → memory_insert → model',
      events,
      ['step-required-tool-alert', 'step-end-turn'],
    );
  });

  record('step-elicitation-answered', async () => {
    const elicit = await startElicitServer();
    try {
      const server = await h.client.mcpServers.create({
        server_name: 'booking',
        config: { mcp_server_type: 'streamable_http', server_url: elicit.url },
      });
      const tool = (await h.client.mcpServers.tools.list(server.id!)).find((t) => t.name === 'book_table')!;
      const agent = await createAgent({ tool_ids: [tool.id!] });
      h.stub.enqueue({ toolCalls: [{ name: 'book_table', arguments: {} }] });
      const paused = await h.client.agents.messages.create(agent.id, {
        messages: [{ role: 'user', content: 'Book me a table' }],
      });
      expect(paused.stop_reason.stop_reason).toBe('requires_approval');
      const workflowId = await turnWorkflowId(h.server.db, paused.messages[0].run_id!);
      await save(
        'step-paused-elicitation',
        "running: an MCP tool call (book_table) paused for its server's elicitation",
        await historyWhen(workflowId, (e) => localActivityTypes(e).includes('pauseForElicitation')),
        ['step-elicitation-pause'],
      );
      h.stub.enqueue({ text: 'Booked.' });
      const approval = { type: 'approval', tool_call_id: approvalCallOf(paused.messages), approve: true };
      const body = { messages: [{ type: 'approval', approvals: [approval] }] };
      const answered = await h.client.agents.messages.create(agent.id, body as { messages: [] });
      expect(answered.stop_reason.stop_reason).toBe('end_turn');
      await save(
        'step-elicitation-answered',
        "completed (end_turn): an MCP tool call paused for its server's elicitation, accepted with the defaults, the call's result, then the model",
        await finished(workflowId),
        ['step-elicitation-pause'],
      );
      await h.client.mcpServers.delete(server.id!);
    } finally {
      await killProcess(elicit.process, 'SIGKILL');
    }
  });

  record('step-approval-expired', async () => {
    const agent = await createAgent({
      approval_timeout_seconds: 1,
      tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
    });
    h.stub.enqueue(
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'Likes tea' } }] },
      { text: 'Nobody answered.' },
    );
    const events = await finished(await asyncTurn(agent.id, 'Remember I like tea'));
    expect(localActivityTypes(events)).toContain('expireApproval');
    await save(
      'step-approval-expired',
      'completed (end_turn): paused for approval of memory_insert, the approval timeout (1 s) fired, the call denied, then the model',
      events,
      ['step-approval-expired', 'step-end-turn'],
    );
  });

  record('step-approval-reminded', async () => {
    const agent = await createAgent({
      tool_rules: [
        {
          type: 'requires_approval',
          tool_name: 'memory_insert',
          reminder_after_seconds: 1,
          approval_timeout_seconds: 2,
        },
      ],
    });
    h.stub.enqueue(
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'Likes tea' } }] },
      { text: 'Nobody answered.' },
    );
    const events = await finished(await asyncTurn(agent.id, 'Remember I like tea'));
    expect(localActivityTypes(events)).toEqual(expect.arrayContaining(['remindApproval', 'expireApproval']));
    await save(
      'step-approval-reminded',
      'completed (end_turn): paused for approval of memory_insert under a policy with a reminder (1 s) and a timeout (2 s): the reminder timer fired (remindApproval), then the rest of the timeout (expireApproval), the call denied, then the model',
      events,
      ['step-approval-reminded', 'step-approval-expired', 'step-end-turn'],
    );
  });

  record('step-policy-paused', async () => {
    const agent = await createAgent({
      tool_rules: [
        {
          type: 'requires_approval',
          tool_name: 'memory_insert',
          when: [{ argument: 'label', op: 'ne', value: 'human' }],
        },
      ],
    });
    h.stub.enqueue(
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'Likes tea' } }] },
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'persona', new_str: 'Serves tea' } }] },
    );
    const paused = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Remember tea, both of us' }],
    });
    const { events } = await pausedTurn(paused);
    expect(localActivityTypes(events)).toContain('runBuiltinTool');
    await save(
      'step-policy-paused',
      'running: a requires_approval policy with a condition (label ne human) let memory_insert into human run without a pause, then paused the turn on memory_insert into persona',
      events,
      ['step-paused'],
    );
  });

  record('step-cancelled-mid-tool', async () => {
    const agent = await nappingAgent();
    h.stub.enqueue({ toolCalls: [{ name: 'nap', arguments: { seconds: 60 } }] });
    const workflowId = await asyncTurn(agent.id, 'Take a long nap');
    await sandboxCallRuns(workflowId);
    await h.client.agents.messages.cancel(agent.id);
    const events = await finished(workflowId);
    await save(
      'step-cancelled-mid-tool',
      'completed (cancelled): a custom Python tool (sandbox activity) running when the run was cancelled; the call cancelled, the run ended',
      events,
      ['step-cancelled-mid-tool'],
    );
  });

  record('step-cancelled-while-paused', async () => {
    const { agent, workflowId } = await pausedForApproval();
    await h.client.agents.messages.cancel(agent.id);
    await save(
      'step-cancelled-while-paused',
      'completed (cancelled): paused for approval of memory_insert, then cancelled: the call denied, the run ended',
      await finished(workflowId),
      ['step-cancelled-while-paused'],
    );
  });

  /** Whether a transaction of this database waits for a lock in a statement containing `statement`. */
  const waitsForLock = async (statement: string) => {
    const [{ waiting }] = await h.server.db.query<{ waiting: number }>(
      `SELECT count(*)::int AS waiting FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock' AND position($1 in query) > 0`,
      [statement],
    );
    return waiting > 0;
  };
  const untilWaiting = async (statement: string) => {
    if (!(await eventually(() => waitsForLock(statement), Boolean, 30_000)))
      throw new Error(`nothing waited for a lock in ${statement}`);
  };

  record('step-cancelled-with-answer', async () => {
    const { agent, paused, workflowId } = await pausedForApproval();
    // The agent's row held: the answer's transaction waits for it, then the cancel's denial
    // (denyOnCancel), a local activity that holds the cancel's workflow task until the worker renews
    // the task (at 80% of its timeout), which puts the cancel in a task of its own. Let go, the answer
    // is stored before the denial looks, and its signal comes after the cancel.
    let release!: () => void;
    let taken!: () => void;
    const lockTaken = new Promise<void>((resolve) => (taken = resolve));
    const holding = h.server.db.transaction(
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
          taken();
        }),
      agentLock(agent.id),
    );
    await lockTaken;
    const approval = { type: 'approval', tool_call_id: approvalCallOf(paused.messages), approve: true };
    const body = { messages: [{ type: 'approval', approvals: [approval] }] };
    const answered = h.client.agents.messages.create(agent.id, body as { messages: [] });
    await untilWaiting(agentLock(agent.id));
    const cancelled = h.client.agents.messages.cancel(agent.id);
    await untilWaiting('SELECT pending_approval FROM agents');
    const renewed = (events: Events) => {
      const cancel = events.findIndex((e) => e.workflowExecutionCancelRequestedEventAttributes);
      return cancel >= 0 && events.slice(cancel).some((e) => e.workflowTaskCompletedEventAttributes);
    };
    if (!renewed(await eventually(() => historyOf(workflowId), renewed, 30_000)))
      throw new Error(`${workflowId} never renewed the cancel's workflow task`);
    release();
    await holding;
    const events = await finished(workflowId);
    expect((await answered).stop_reason.stop_reason).toBe('cancelled');
    expect(Object.values(await cancelled)).toEqual(['cancelled']);
    await save(
      'step-cancelled-with-answer',
      'completed (cancelled): paused for approval of memory_insert; cancelled while an answer was being stored: the denial (denyOnCancel) found the answer and returned its run, the answer’s signal came after the cancel, both runs ended cancelled',
      events,
      ['step-cancelled-with-answer', 'step-cancelled-while-paused'],
    );
  });

  record('step-model-failure', async () => {
    const agent = await createAgent();
    h.stub.setDefault(() => ({ status: 500 }));
    try {
      const events = await finished(await asyncTurn(agent.id, 'Hi'));
      await save(
        'step-model-failure',
        'completed (llm_api_error): the model endpoint answered 500 to every attempt (MODEL_MAX_ATTEMPTS 2), the call failed, the run ended',
        events,
        ['step-model-failure'],
      );
    } finally {
      h.stub.setDefault(() => ({ text: 'ok' }));
    }
  });

  record('step-max-steps', async () => {
    const ping = await pythonTool(pingSource('ping_again'));
    const agent = await createAgent({ tool_ids: [ping.id] });
    h.stub.setDefault(() => ({ toolCalls: [{ name: 'ping_again', arguments: { n: 1 } }] }));
    try {
      const events = await finished(await asyncTurn(agent.id, 'Keep pinging', { max_steps: 2 }));
      expect(scheduledActivities(events).map((a) => a.type)).toEqual([
        'callModel',
        'runSandboxTool',
        'callModel',
        'runSandboxTool',
      ]);
      await save(
        'step-max-steps',
        'completed (max_steps): max_steps 2, the model calling a custom Python tool at each step',
        events,
        ['step-max-steps'],
      );
    } finally {
      h.stub.setDefault(() => ({ text: 'ok' }));
    }
  });

  record('step-heartbeating-call', async () => {
    const agent = await nappingAgent();
    h.stub.enqueue({ toolCalls: [{ name: 'nap', arguments: { seconds: 5 } }] }, { text: 'Rested.' });
    await save(
      'step-heartbeating-call',
      'completed (end_turn): model → a custom Python tool that sleeps 5 s, past its heartbeat timeout (2 s), on its first attempt: it heartbeated → model',
      await finished(await asyncTurn(agent.id, 'Take a nap')),
      ['step-heartbeating-call', 'step-end-turn'],
    );
  });

  record('session-continued-as-new', async () => {
    const agent = await createAgent();
    // The server's sessions continue as new after 500 turns; this one, started ahead of the first
    // message, after 2.
    const sessionId = sessionWorkflowIdFor(h.server.turns.deploymentId, agent.id, null);
    const session = await temporalClient().workflow.start('agentSession', {
      workflowId: sessionId,
      taskQueue: h.server.turns.taskQueues.agent,
      args: [{ agentId: agent.id, idleMs: 600_000, maxStepsPerRun: 2 }],
      typedSearchAttributes: [{ key: agentIdKey, value: agent.id }],
    });
    // The first message's turn holds the lane (the API started it): the next three queue in the
    // session, which runs two and carries the third into its next run.
    h.stub.enqueue({ text: 'One.', delayMs: 2_000 }, { text: 'Two.' }, { text: 'Three.' }, { text: 'Four.' });
    const send = (content: string) =>
      h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content }] });
    const { answer: first } = await holdingTheLane(() => send('one'));
    const responses = await Promise.all([first, ...['two', 'three', 'four'].map(send)]);
    expect(responses.map((r) => r.stop_reason.stop_reason)).toEqual(Array(4).fill('end_turn'));
    const events = await historyOf(sessionId, session.firstExecutionRunId);
    expect(events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
    expect(events.filter((e) => e.childWorkflowExecutionCompletedEventAttributes)).toHaveLength(2);
    await save(
      'session-continued-as-new',
      'continued as new: an agentSession (maxStepsPerRun 2) that ran two queued turns as children (each after the lane), then continued as new carrying the third',
      events,
      ['session-steps', 'session-continued-as-new'],
    );
  });

  record('session-waits-for-lane', async () => {
    const agent = await createAgent();
    h.stub.enqueue({ text: 'Slow.', delayMs: 1_000 }, { text: 'Queued.' });
    const { answer: first } = await holdingTheLane(() =>
      h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content: 'first' }] }),
    );
    // The first holds the lane (the API started it): the second waits for it in a session.
    const second = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'second' }],
    });
    expect(second.stop_reason.stop_reason).toBe('end_turn');
    expect((await first).stop_reason.stop_reason).toBe('end_turn');
    const sessionId = sessionWorkflowIdFor(h.server.turns.deploymentId, agent.id, null);
    const events = await historyWhen(sessionId, (e) =>
      e.some((event) => event.childWorkflowExecutionCompletedEventAttributes),
    );
    expect(
      events.some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'laneReleased'),
    ).toBe(true);
    await save(
      'session-waits-for-lane',
      'running: an agentSession whose turn waited for the lane a turn the API started held (laneReleased signal), then ran as its child',
      events,
      ['session-steps', 'session-waits-for-lane', 'session-starts-agent-turn'],
    );
  });

  record('session-cancelled-step', async () => {
    const agent = await nappingAgent();
    const send = (content: string) =>
      h.client.agents.messages.createAsync(agent.id, { messages: [{ role: 'user', content }] });
    // The first message's turn holds the lane (the API started it) for 2 s: the next two queue in the
    // session, which runs the second as its child once the lane is back. The user cancels while that
    // child's call of nap runs, the third message still queued.
    h.stub.enqueue(
      { text: 'Awake.', delayMs: 2_000 },
      { toolCalls: [{ name: 'nap', arguments: { seconds: 60 } }] },
    );
    await holdingTheLane(() => send('Are you awake?'));
    const running = await send('Take a long nap');
    const queued = await send('Then wake me');
    await sandboxCallRuns(await turnWorkflowId(h.server.db, running.id));
    expect(await h.client.agents.messages.cancel(agent.id)).toEqual({
      [running.id]: 'cancelled',
      [queued.id]: 'cancelled',
    });
    const sessionId = sessionWorkflowIdFor(h.server.turns.deploymentId, agent.id, null);
    const events = await historyWhen(sessionId, (e) => shows('session-cancelled-step', { events: e }));
    await save(
      'session-cancelled-step',
      'running: an agentSession whose turn waited for the lane a turn the API started held, then ran as its child; cancelled (the messages cancel route) while the child ran a custom Python tool, the cancelSteps update dropped the turn queued behind it (cancelQueuedRuns), cancelled the child and completed once the child had ended, its run cancelled',
      events,
      ['session-steps', 'session-waits-for-lane', 'session-cancelled-step'],
    );
  });

  record('session-turn-cancelled-before-start', async () => {
    const agent = await createAgent();
    const send = (content: string) =>
      h.client.agents.messages.createAsync(agent.id, { messages: [{ role: 'user', content }] });
    // The first message's turn holds the lane (the API started it) while the model answers slowly: the
    // second waits for the lane in the session, and is cancelled there, before its turn starts.
    h.stub.enqueue({ text: 'Slow.', delayMs: 10_000 });
    const holder = await (await holdingTheLane(() => send('Are you awake?'))).answer;
    const waiting = await send('Then wake me');
    const sessionId = sessionWorkflowIdFor(h.server.turns.deploymentId, agent.id, null);
    await historyWhen(sessionId, (e) => localActivityTypes(e).includes('takeLaneTurn'));
    expect(await h.client.agents.messages.cancel(agent.id)).toEqual({
      [holder.id]: 'cancelled',
      [waiting.id]: 'cancelled',
    });
    const events = await historyWhen(sessionId, (e) =>
      shows('session-turn-cancelled-before-start', { events: e }),
    );
    expect(events.some((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)).toBe(false);
    await save(
      'session-turn-cancelled-before-start',
      'running: an agentSession whose turn waited for the lane a turn the API started held; cancelled (the messages cancel route) before it started: the cancelSteps update cancelled it, its run ended (cancelQueuedRuns), its lane given back (giveLaneBack)',
      events,
      ['session-turn-cancelled-before-start', 'session-waits-for-lane'],
    );
  });

  /** A reply the stub holds back until the scenario lets it go. */
  const heldReply = (text: string) => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    return { reply: { text, heldUntil: released }, release };
  };
  const multiAgent = { include_multi_agent_tools: true };
  const askWaiting = (other: string, message = 'what is 2+2?') => ({
    toolCalls: [
      { name: 'send_message_to_agent_and_wait_for_reply', arguments: { message, other_agent_id: other } },
    ],
  });
  /** The agent-message call (a child workflow) a turn's history started. */
  const messageCallOf = (events: Events) =>
    events.find(
      (e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowType?.name === 'agentMessageCall',
    )?.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId ?? undefined;
  /** The turn of the one run of `agentId` (another agent's message to it). */
  const onlyTurnOf = async (agentId: string) => {
    const [run] = (await h.client.runs.list({ agent_id: agentId })).getPaginatedItems();
    return turnWorkflowId(h.server.db, run.id);
  };
  /** The sender's agent-message call once it waits: its message sent, nothing of it running. */
  const waitingCallOf = async (senderTurn: string) => {
    const started = await historyWhen(senderTurn, (e) =>
      e.some((event) => event.childWorkflowExecutionStartedEventAttributes),
    );
    const callId = messageCallOf(started)!;
    await historyWhen(callId, (e) => e.some((event) => event.activityTaskCompletedEventAttributes));
    return callId;
  };

  record('step-agent-message', async () => {
    const [asker, expert] = await Promise.all([
      createAgent(multiAgent),
      createAgent({ ...multiAgent, name: 'expert' }),
    ]);
    h.stub.enqueue(askWaiting(expert.id), { text: 'Four.' }, { text: 'The expert says four.' });
    const response = await h.client.agents.messages.create(asker.id, {
      messages: [{ role: 'user', content: 'ask the expert' }],
    });
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    const events = await finished(await turnWorkflowId(h.server.db, response.messages[0].run_id!));
    await save(
      'step-agent-message',
      'completed (end_turn): model → send_message_to_agent_and_wait_for_reply (a child agentMessageCall that waited for the other agent’s turn) → model',
      events,
      ['step-end-turn', 'step-agent-message-call'],
    );
    await save(
      'agent-message-call',
      'completed: an agentMessageCall sent its message (sendAgentMessages), the recipient’s turn signalled messageRunStopped, the replies were recorded (recordAgentReplies)',
      await finished(messageCallOf(events)!),
      ['agent-message-call-signalled'],
    );
    await save(
      'step-tells-waiter',
      'completed (end_turn): the turn of another agent’s message, which signalled the waiting call (messageRunStopped) once its run had ended',
      await finished(await onlyTurnOf(expert.id)),
      ['step-end-turn', 'step-tells-waiter'],
    );
  });

  record('step-paused-tells-waiter', async () => {
    const [asker, expert] = await Promise.all([
      createAgent(multiAgent),
      createAgent({ tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }] }),
    ]);
    h.stub.enqueue(
      askWaiting(expert.id, 'remember that I like tea'),
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_str: 'Likes tea' } }] },
      { text: 'The expert waits for an approval.' },
    );
    const response = await h.client.agents.messages.create(asker.id, {
      messages: [{ role: 'user', content: 'tell the expert' }],
    });
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    const events = await historyWhen(await onlyTurnOf(expert.id), (e) =>
      shows('step-paused-tells-waiter', { events: e }),
    );
    await save(
      'step-paused-tells-waiter',
      'running: the turn of another agent’s message paused for approval of memory_insert (a requires_approval rule) and signalled the waiting call (messageRunStopped) at the pause',
      events,
      ['step-paused', 'step-paused-tells-waiter'],
    );
  });

  record('step-cancelled-mid-agent-message', async () => {
    const [asker, expert] = await Promise.all([createAgent(multiAgent), createAgent()]);
    const held = heldReply('Four.');
    h.stub.enqueue(askWaiting(expert.id), held.reply);
    const senderTurn = await asyncTurn(asker.id, 'ask the expert');
    const callId = await waitingCallOf(senderTurn);
    await h.client.agents.messages.cancel(asker.id);
    await save(
      'step-cancelled-mid-agent-message',
      'completed (cancelled): send_message_to_agent_and_wait_for_reply waiting in its child agentMessageCall when the run was cancelled; the child cancelled, the run ended',
      await finished(senderTurn),
      ['step-cancelled-mid-agent-message'],
    );
    await save(
      'agent-message-call-cancelled',
      'cancelled: an agentMessageCall cancelled with its turn while it waited for the recipient’s turn',
      await historyWhen(callId, (e) => shows('agent-message-call-cancelled', { events: e })),
      ['agent-message-call-cancelled'],
    );
    held.release();
    await save(
      'step-waiter-gone',
      'completed (end_turn): the turn of another agent’s message whose sender was cancelled while it waited: its signal found the call gone (SignalExternalWorkflowExecutionFailed), and the turn ended as usual',
      await finished(await onlyTurnOf(expert.id)),
      ['step-end-turn', 'step-tells-waiter', 'step-waiter-gone'],
    );
  });

  record('agent-message-call-looked', async () => {
    const [asker, expert] = await Promise.all([createAgent(multiAgent), createAgent()]);
    const held = heldReply('Four.');
    h.stub.enqueue(askWaiting(expert.id), held.reply, { text: 'The expert is gone.' });
    const senderTurn = await asyncTurn(asker.id, 'ask the expert');
    const callId = await waitingCallOf(senderTurn);
    await temporalClient()
      .workflow.getHandle(await onlyTurnOf(expert.id))
      .terminate('the recipient’s turn dies without signalling');
    held.release();
    await save(
      'agent-message-call-looked',
      'completed: an agentMessageCall whose recipient’s turn was terminated without signalling: a look at the run (lookAtMessageRuns, every AGENT_MESSAGE_LOOK_MS) ended the wait, the error recorded',
      await finished(callId),
      ['agent-message-call-looked'],
    );
  });

  record('session-tells-waiter', async () => {
    const [asker, expert] = await Promise.all([createAgent(multiAgent), createAgent()]);
    const held = heldReply('Still thinking.');
    h.stub.enqueue(held.reply);
    await holdingTheLane(() =>
      h.client.agents.messages.createAsync(expert.id, {
        messages: [{ role: 'user', content: 'Think hard' }],
      }),
    );
    h.stub.enqueue(askWaiting(expert.id), { text: 'The expert did not answer.' });
    const senderTurn = await asyncTurn(asker.id, 'ask the expert');
    await waitingCallOf(senderTurn);
    await h.client.agents.messages.cancel(expert.id);
    held.release();
    await finished(senderTurn);
    const sessionId = sessionWorkflowIdFor(h.server.turns.deploymentId, expert.id, null);
    await save(
      'session-tells-waiter',
      'running: a session whose queued turn (another agent’s message, waiting for the lane a turn the API started held) was cancelled before it started (the messages cancel route): its run cancelled, the waiting call signalled (messageRunStopped)',
      await historyWhen(sessionId, (e) => shows('session-tells-waiter', { events: e })),
      ['session-tells-waiter'],
    );
  });

  record('file-ingestion', async () => {
    const folder = await h.client.folders.create({
      name: 'docs',
      embedding: 'openai/text-embedding-3-small',
    });
    const text = Array.from({ length: 40 }, (_, i) => `Sentence ${i} tells about the lighthouse.`).join(' ');
    const file = await h.client.folders.files.upload(folder.id, {
      file: await toFile(Buffer.from(text), 'notes.txt'),
    });
    const events = await finished(ingestionWorkflowId(h.server.turns.deploymentId, file.id!));
    await save('file-ingestion', 'completed: one text file parsed, chunked and embedded', events);
  });

  record('scheduled-message', async () => {
    const agent = await createAgent();
    h.stub.enqueue({ text: 'Here is your summary.' });
    await h.client.agents.schedule.create(agent.id, {
      schedule: { type: 'one-time', scheduled_at: Date.now() + 2_000 },
      messages: [{ role: 'user', content: 'Time for the daily summary' }],
    });
    const events = await finished(await onlyWorkflowOf('scheduledMessage'));
    await save('scheduled-message', 'completed: a one-time schedule fired and queued its turn', events);
  });

  record('webhook-delivery', async () => {
    let requests = 0;
    const receiver = http.createServer((req, res) => {
      const answer = ++requests === 1 ? 500 : 200; // refused once, then delivered
      req.resume().on('end', () => res.writeHead(answer).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const agent = await createAgent();
      h.stub.enqueue({ text: 'Done in the background.' });
      await h.client.agents.messages.createAsync(agent.id, {
        messages: [{ role: 'user', content: 'Work on it' }],
        callback_url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/letta`,
      });
      const events = await finished(await onlyWorkflowOf('webhookDelivery'));
      await save(
        'webhook-delivery',
        'completed: a run’s completion callback, refused once (500) and delivered on the retry',
        events,
      );
    } finally {
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });
});

/**
 * Turns that continue as new, on a Temporal server of their own that suggests it after 30 events
 * (Temporal's default, 4,096 events or 4 MiB, takes hundreds of cycles: test/long-turn.test.ts).
 */
const CONTINUING = ['step-continued-as-new', 'step-continued-mid-request', 'session-cancels-continued-turn'];
(CONTINUING.some(wanted) ? describe : describe.skip)('recording turns that continue as new', () => {
  const h = useContinuingAgentServer(30);
  const ASK_USER = { name: 'ask_user', parameters: { type: 'object', properties: {} } };
  const chainOf = async (runId: string) =>
    continueAsNewChain(h.server.turns.temporal, await turnWorkflowId(h.server.db, runId));
  const inputOf = (run: ChainRun) => startInput<AgentTurnInput>(run.events);

  /** Answers the agent's ask_user calls until its turn ends; the run of its first request. */
  const answeredUntilTheEnd = async (agentId: string) => {
    const send = (messages: unknown[]) =>
      h.client.agents.messages.create(agentId, { messages: messages as never, client_tools: [ASK_USER] });
    let response = await send([{ role: 'user', content: 'Ask me, many times' }]);
    const firstRunId = response.messages[0].run_id!;
    while (response.stop_reason.stop_reason === 'requires_approval') {
      const pending = response.messages.at(-1) as { tool_call: { tool_call_id: string } };
      response = await send([clientToolReturn(pending.tool_call.tool_call_id, 'yes')]);
    }
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    await h.server.turns.temporal.workflow.getHandle(await turnWorkflowId(h.server.db, firstRunId)).result();
    return firstRunId;
  };

  record('step-continued-as-new', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    let asked = 0;
    h.stub.setDefault(() =>
      ++asked <= 8 ? { toolCalls: [{ name: 'ask_user', arguments: {} }] } : { text: 'Done.' },
    );
    const chain = await chainOf(await answeredUntilTheEnd(agent.id));
    await save(
      'step-continued-as-new',
      'continued as new: an agentTurn answered client-tool call after client-tool call until Temporal suggested continuing (30 events on this server), at a pause or before a model call',
      chain[0].events,
      ['step-continued-as-new'],
    );
    const atPause = chain.slice(1).find((run) => inputOf(run).continued?.pause)!;
    await save(
      'step-continued-as-new',
      `${atPause === chain.at(-1) ? 'completed (end_turn)' : 'continued as new'}: a run of a continued agentTurn that took up its request's pause (its tools and rules loaded by digest), was answered and went on`,
      atPause.events,
      ['step-resumed-at-pause'],
    );
  });

  record('step-continued-mid-request', async () => {
    const response = await insertsUnderCountRule(h, 6);
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    const runId = response.messages[0].run_id!;
    await h.server.turns.temporal.workflow.getHandle(await turnWorkflowId(h.server.db, runId)).result();
    const chain = await chainOf(runId);
    await save(
      'step-continued-mid-request',
      'continued as new: an agentTurn running one request of memory_insert steps (a max_count_per_step rule), continued before a model call',
      chain[0].events,
      ['step-continued-as-new'],
    );
    await save(
      'step-continued-mid-request',
      'completed (end_turn): the last run of that turn, which took up the request at its next step with the rule’s history',
      chain.at(-1)!.events,
      ['step-resumed-at-step', 'step-end-turn'],
    );
  });

  record('session-cancels-continued-turn', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    // A slow first turn the API starts: the next message queues, and the session runs it as its child.
    h.stub.enqueue({ text: 'slow', delayMs: 1_500 });
    await h.client.agents.messages.createAsync(agent.id, {
      messages: [{ role: 'user', content: 'Take your time' }],
    });
    h.stub.setDefault(() => ({ toolCalls: [{ name: 'ask_user', arguments: {} }] }));
    const send = (messages: unknown[]) =>
      h.client.agents.messages.create(agent.id, { messages: messages as never, client_tools: [ASK_USER] });
    let paused = await send([{ role: 'user', content: 'Ask me' }]);
    const firstRunId = paused.messages[0].run_id!;
    while ((await chainOf(firstRunId)).length < 2) {
      const pending = paused.messages.at(-1) as { tool_call: { tool_call_id: string } };
      paused = await send([clientToolReturn(pending.tool_call.tool_call_id, 'again')]);
    }
    expect(await h.client.agents.messages.cancel(agent.id)).toEqual({
      [paused.messages[0].run_id!]: 'cancelled',
    });
    const sessionId = sessionWorkflowIdFor(h.server.turns.deploymentId, agent.id, null);
    const sessionRuns = await continueAsNewChain(h.server.turns.temporal, sessionId);
    const cancelling = sessionRuns.find((run) => shows('session-cancels-turn-by-workflow-id', run))!;
    await save(
      'session-cancels-continued-turn',
      'running: an agentSession whose child turn (queued behind one the API started) continued as new while paused, then was cancelled by its workflow id (the messages cancel route), the cancelSteps update completing once the turn had ended',
      cancelling.events,
      ['session-cancels-turn-by-workflow-id', 'session-steps'],
    );
  });
});

/**
 * A turn whose tool call's worker died under it on the call's last attempt: the server as a process of
 * its own (TOOL_MAX_ATTEMPTS=1), killed while its MCP call runs and started again, runs the call again
 * rather than ending it as failed.
 */
describe('recording the replay corpus: a server killed under a call', () => {
  record('step-interrupted-call-run-again', async () => {
    const schema = await createTestSchema();
    const stub = await startOpenAiStub();
    const mcp = await startCountingMcpServer();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-record-'));
    const env = await serverProcessEnv({
      dataDir,
      databaseUrl: schema.url,
      temporalAddress: testTemporalAddress(),
      openAiBaseUrl: stub.baseURL,
      extra: { TOOL_MAX_ATTEMPTS: '1', ACTIVITY_HEARTBEAT_TIMEOUT_MS: '2000' },
    });
    let server = await startApiProcess(env, 'all');
    const connection = await Connection.connect({ address: testTemporalAddress() });
    try {
      const client = new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 0 });
      const registered = await client.mcpServers.create({
        server_name: 'counting',
        config: { mcp_server_type: 'streamable_http', server_url: mcp.url } as never,
      });
      const read = (await client.mcpServers.tools.list(registered.id!)).find((t) => t.name === 'slow_read')!;
      stub.setDefault((request) =>
        request.messages.some((m) => m.role === 'tool')
          ? { text: 'Read.' }
          : { toolCalls: [{ name: 'slow_read', arguments: { ms: 4_000 } }] },
      );
      const agent = await client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [read.id!] });
      const run = await client.agents.messages.createAsync(agent.id, {
        messages: [{ role: 'user', content: 'Read slowly' }],
      });
      await eventually(
        async () => mcp.calls.length,
        (n) => n === 1,
      );
      await killProcess(server, 'SIGKILL');
      server = await startApiProcess(env, 'all');
      const ended = await eventually(
        () => client.runs.retrieve(run.id),
        (r) => r.status === 'completed',
        60_000,
      );
      expect(ended.stop_reason).toBe('end_turn');
      const db = new pg.Client({ connectionString: schema.url });
      await db.connect();
      const { rows } = await db.query<{ workflow_id: string }>('SELECT workflow_id FROM runs WHERE id = $1', [
        run.id,
      ]);
      await db.end();
      const history = await new Client({ connection }).workflow.getHandle(rows[0].workflow_id).fetchHistory();
      await save(
        'step-interrupted-call-run-again',
        'completed (end_turn): model → an MCP call (slow_read, idempotent) whose server was killed under its one attempt (TOOL_MAX_ATTEMPTS=1): the heartbeat timeout ended the activity, the turn scheduled it again, the call taken over and run again → model',
        history.events ?? [],
        ['step-interrupted-call-run-again', 'step-end-turn'],
      );
    } finally {
      await killProcess(server, 'SIGKILL');
      await connection.close();
      await mcp.close();
      await stub.close();
      await schema.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
