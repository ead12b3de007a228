import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import pg from 'pg';
import { temporal } from '@temporalio/proto';
import { startOpenAiStub, type OpenAiStub } from './helpers/openai-stub';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { eventually } from './helpers/eventually';
import { freePort, testTemporalAddress } from './helpers/env';
import { startProcess, type StartedProcess } from './helpers/process';
import {
  apiUrl,
  killProcess,
  serverProcessEnv,
  startApiProcess,
  startWorkerProcess,
} from './helpers/server-processes';
import { connectTemporalClient, payloadTexts } from './helpers/temporal';

const { PENDING_ACTIVITY_STATE_STARTED } = temporal.api.enums.v1.PendingActivityState;

/** What an MCP call's heartbeats carry (activities/mcp.ts). */
interface McpCallDetails {
  mcp_task?: { server_id: string; task_id: string; status: string; status_message?: string };
  progress?: { progress: number; total?: number };
}

/**
 * Tool calls an MCP server runs as tasks (spec 2025-11-25): the server is the SDK's McpServer with a
 * task store (test/fixtures/mcp/task-server.mjs), run as its own process; the API and the worker run
 * as separate processes too, so the worker can be killed while the task runs.
 */
describe('MCP tool calls as tasks', () => {
  let dataDir: string;
  let schema: TestSchema;
  let db: pg.Client;
  let stub: OpenAiStub;
  let env: Record<string, string>;
  let api: StartedProcess;
  let worker: StartedProcess;
  let taskServer: StartedProcess;
  let eventsFile: string;
  let client: Letta;
  let serverId: string;
  let serverUrl: string;
  let toolId: string;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-mcp-tasks-'));
    eventsFile = path.join(dataDir, 'task-server-events.txt');
    fs.writeFileSync(eventsFile, '');
    const port = await freePort();
    taskServer = startProcess('node', ['test/fixtures/mcp/task-server.mjs'], {
      PORT: String(port),
      EVENTS_FILE: eventsFile,
    });
    await eventually(
      async () => taskServer.output(),
      (output) => output.includes('listening'),
    );
    schema = await createTestSchema();
    stub = await startOpenAiStub();
    // A run cancelled mid-call never asks again: its answer is no queued reply the next run would get.
    stub.setDefault((req) => {
      const last = req.messages.at(-1);
      return { text: last?.role === 'tool' ? `Tool said: ${String(last.content)}` : 'no tool return' };
    });
    env = await serverProcessEnv({
      dataDir,
      databaseUrl: schema.url,
      temporalAddress: testTemporalAddress(),
      openAiBaseUrl: stub.baseURL,
      extra: { ACTIVITY_HEARTBEAT_TIMEOUT_MS: '2000', MCP_RECONNECT_INITIAL_MS: '100' },
    });
    api = await startApiProcess(env);
    worker = await startWorkerProcess(env);
    client = new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 0 });
    db = new pg.Client({ connectionString: schema.url });
    await db.connect();
    serverUrl = `http://127.0.0.1:${port}/mcp`;
    const server = await client.mcpServers.create({
      server_name: 'tasks',
      config: { mcp_server_type: 'streamable_http', server_url: serverUrl },
    });
    serverId = server.id!;
    toolId = (await client.mcpServers.tools.list(serverId)).find((tool) => tool.name === 'slow_task')!.id!;
  });
  afterAll(async () => {
    await db?.end();
    for (const proc of [api, worker, taskServer]) if (proc) await killProcess(proc, 'SIGKILL');
    await stub?.close();
    await schema?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** The server's record of what happened to the calls labelled so. */
  const events = (label: string) =>
    fs
      .readFileSync(eventsFile, 'utf8')
      .split('\n')
      .filter((line) => line.endsWith(` ${label}`))
      .map((line) => line.split(' ')[0]);

  /** Starts a run in which the model calls slow_task; its next answer quotes the tool's return (the default). */
  async function runCalling(args: { label: string; steps: number; step_ms: number; fail?: boolean }) {
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [toolId] });
    stub.enqueue({ toolCalls: [{ name: 'slow_task', arguments: args }] });
    const run = await client.agents.messages.createAsync(agent.id, {
      messages: [{ role: 'user', content: 'Do the slow task.' }],
    });
    return { agentId: agent.id, runId: run.id };
  }

  const finished = (runId: string) =>
    eventually(
      () => client.runs.retrieve(runId),
      (run) => ['completed', 'failed', 'cancelled'].includes(run.status ?? ''),
      60_000,
    );

  const toolReturnOf = async (runId: string) => {
    const messages = (await client.runs.messages.list(runId)).getPaginatedItems();
    return messages.find((m) => m.message_type === 'tool_return_message') as unknown as {
      status: string;
      tool_return: string;
    };
  };

  /** The run's pending MCP activity, as the Temporal UI shows it. */
  async function pendingMcpCall(runId: string) {
    const { rows } = await db.query<{ workflow_id: string }>('SELECT workflow_id FROM runs WHERE id = $1', [
      runId,
    ]);
    if (!rows[0]?.workflow_id) return undefined;
    const temporal = await connectTemporalClient();
    try {
      const described = await temporal.client.workflow.getHandle(rows[0].workflow_id).describe();
      return described.raw.pendingActivities?.find((a) => a.activityType?.name === 'runMcpTool');
    } finally {
      await temporal.close();
    }
  }

  /** Its last heartbeat details. */
  async function heartbeatDetails(runId: string): Promise<McpCallDetails | undefined> {
    const texts = payloadTexts((await pendingMcpCall(runId))?.heartbeatDetails ?? {});
    const details = texts.filter((text) => text.startsWith('{')).map((text) => JSON.parse(text));
    return details.at(-1) as McpCallDetails | undefined;
  }

  const awaitDetails = (runId: string, until: (details: McpCallDetails) => boolean) =>
    eventually(
      () => heartbeatDetails(runId),
      (details) => details !== undefined && until(details),
      30_000,
    );

  it('stores the tool as one that runs as a task', async () => {
    const tool = await client.tools.retrieve(toolId);
    expect(tool.metadata_).toMatchObject({ mcp: { server_id: serverId, task_support: 'required' } });
  });

  it('resumes the task after kill -9 of the worker, twice: the tool runs once, the model gets its result', async () => {
    const { runId } = await runCalling({ label: 'resume', steps: 15, step_ms: 1000 });
    // Progress notifications and task statuses are heartbeats, each with the task's id.
    const details = await awaitDetails(runId, (d) => Boolean(d.mcp_task?.status_message && d.progress));
    expect(details).toMatchObject({
      mcp_task: { server_id: serverId, task_id: expect.any(String), status: 'working' },
      progress: { progress: expect.any(Number), total: 15 },
    });
    expect(details!.mcp_task!.status_message).toMatch(/^step \d+ of 15$/);
    expect(events('resume')).toEqual(['call']);

    await killProcess(worker, 'SIGKILL');
    worker = await startWorkerProcess(env);
    // Killed again as soon as the retry runs: it carries the task on for the attempt after it.
    await eventually(
      () => pendingMcpCall(runId),
      (pending) => (pending?.attempt ?? 0) >= 2 && pending?.state === PENDING_ACTIVITY_STATE_STARTED,
      30_000,
    );
    await killProcess(worker, 'SIGKILL');
    worker = await startWorkerProcess(env);

    expect(await finished(runId)).toMatchObject({ status: 'completed', stop_reason: 'end_turn' });
    expect(events('resume')).toEqual(['call', 'done']);
    expect(await toolReturnOf(runId)).toMatchObject({
      status: 'success',
      tool_return: 'finished resume after 15 steps',
    });
    const messages = (await client.runs.messages.list(runId)).getPaginatedItems();
    expect(messages.at(-1)).toMatchObject({
      message_type: 'assistant_message',
      content: expect.stringContaining('finished resume after 15 steps'),
    });
  });

  it('leaves the task running through a graceful restart of the worker, and resumes it', async () => {
    const { runId } = await runCalling({ label: 'restart', steps: 8, step_ms: 500 });
    await awaitDetails(runId, (d) => Boolean(d.mcp_task));
    await killProcess(worker, 'SIGTERM');
    worker = await startWorkerProcess(env);
    expect(await finished(runId)).toMatchObject({ status: 'completed', stop_reason: 'end_turn' });
    expect(events('restart')).toEqual(['call', 'done']);
    expect(await toolReturnOf(runId)).toMatchObject({ tool_return: 'finished restart after 8 steps' });
  });

  it('cancels the task when the run is cancelled', async () => {
    const { agentId, runId } = await runCalling({ label: 'cancel', steps: 30, step_ms: 500 });
    await awaitDetails(runId, (d) => Boolean(d.mcp_task));
    await client.agents.messages.cancel(agentId, { run_ids: [runId] });
    expect(await finished(runId)).toMatchObject({ status: 'cancelled' });
    await eventually(
      async () => events('cancel'),
      (seen) => seen.includes('cancelled'),
      10_000,
    );
    expect(events('cancel')).toEqual(['call', 'cancelled']);
  });

  it("gives a failed task's error result to the model as the tool's error", async () => {
    const { runId } = await runCalling({ label: 'failing', steps: 2, step_ms: 200, fail: true });
    expect(await finished(runId)).toMatchObject({ status: 'completed' });
    expect(await toolReturnOf(runId)).toMatchObject({
      status: 'error',
      tool_return: 'failing broke at its last step',
    });
    expect(events('failing')).toEqual(['call', 'done']);
  });

  it("ends a call past its server's timeout with a timeout error, and cancels its task", async () => {
    const updated = await client.mcpServers.update(serverId, {
      config: { mcp_server_type: 'streamable_http', server_url: serverUrl, tool_timeout_seconds: 1 },
    } as Parameters<Letta['mcpServers']['update']>[1]);
    expect(updated).toMatchObject({ tool_timeout_seconds: 1 });
    expect(await client.mcpServers.retrieve(serverId)).toMatchObject({ tool_timeout_seconds: 1 });

    const { runId } = await runCalling({ label: 'server-timeout', steps: 10, step_ms: 500 });
    expect(await finished(runId)).toMatchObject({ status: 'completed' });
    expect(await toolReturnOf(runId)).toMatchObject({
      status: 'error',
      tool_return:
        'Error executing function slow_task: TimeoutError: Executing tool slow_task timed out after 1.0 seconds. Its task was cancelled.',
    });
    await eventually(
      async () => events('server-timeout'),
      (seen) => seen.includes('cancelled'),
      10_000,
    );
  });

  it("ends a call past the tool's own timeout, which overrides its server's", async () => {
    await client.mcpServers.update(serverId, {
      config: { mcp_server_type: 'streamable_http', server_url: serverUrl, tool_timeout_seconds: 60 },
    } as Parameters<Letta['mcpServers']['update']>[1]);
    const tool = await client.tools.retrieve(toolId);
    await client.tools.update(toolId, { metadata_: { ...tool.metadata_, timeout_seconds: 2 } });

    const { runId } = await runCalling({ label: 'tool-timeout', steps: 10, step_ms: 500 });
    expect(await finished(runId)).toMatchObject({ status: 'completed' });
    expect(await toolReturnOf(runId)).toMatchObject({
      status: 'error',
      tool_return: expect.stringContaining('timed out after 2.0 seconds'),
    });
  });
});
