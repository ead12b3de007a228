/**
 * Issue 54's traces and logs, on the real server, Temporal and a real OTLP receiver (the OpenTelemetry
 * Collector that scripts/install-otelcol.sh builds, writing what it receives to a file): one step with
 * a model call, a sandboxed tool, an MCP call and a client-tool pause is one trace covering the HTTP
 * request, both workflows and each activity; the official client's run trace, step trace and step
 * metrics answer from the stored spans; and no secret set for the step appears in a span or a log line.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../src/logger';
import { installTracing } from '../src/observability/tracing';
import { replayOptions, workflowWorkerInterceptors } from '../src/observability/temporal';
import { projectRoot } from '../src/paths';
import { useAgentServer } from './helpers/agent-server';
import { freePort } from './helpers/env';
import { eventually } from './helpers/eventually';
import { startAuthProxy, startHttpEverything, type AuthProxy } from './helpers/mcp-servers';
import { startProcess, type StartedProcess } from './helpers/process';

const COLLECTOR = path.join(projectRoot, '.tools', 'bin', 'otelcol-letta');

const PROVIDER_KEY = 'sk-provider-key-7f3a91c2e5';
const MCP_TOKEN = 'mcp-token-4b8d21aa90ef';
const TOOL_SECRET = 'tool-secret-c0ffee5eed11';

const SECRET_LENGTH =
  'def secret_length() -> int:\n    """The length of the API token in the environment."""\n' +
  "    import os\n    return len(os.environ['API_TOKEN'])\n";

const READ_LOCAL_FILE = {
  name: 'read_local_file',
  description: 'Reads a file on the user machine.',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};

/** A span as the Collector's file exporter writes it (OTLP JSON). */
interface OtlpSpan {
  traceId: string;
  name: string;
}

/** Every span in the file exporter's JSON lines. */
function receivedSpans(file: string): OtlpSpan[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .flatMap((line) => {
      const batch = JSON.parse(line) as {
        resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
      };
      return batch.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
    });
}

describe('traces and logs of a step (issue 54)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-traces-'));
  const tracesFile = path.join(dir, 'traces.jsonl');
  const logLines: string[] = [];
  const log = createLogger('debug', 'json', { write: (line: string) => void logLines.push(line) });
  const saved = { ...process.env };
  let collector: StartedProcess;
  let everything: Awaited<ReturnType<typeof startHttpEverything>>;
  let proxy: AuthProxy;

  beforeAll(async () => {
    const port = await freePort();
    const config = path.join(dir, 'collector.yaml');
    fs.writeFileSync(
      config,
      [
        'receivers:',
        '  otlp:',
        '    protocols:',
        '      http:',
        `        endpoint: 127.0.0.1:${port}`,
        'exporters:',
        '  file:',
        `    path: ${tracesFile}`,
        '    flush_interval: 100ms',
        'service:',
        '  telemetry:',
        '    metrics:',
        '      level: none',
        '  pipelines:',
        '    traces:',
        '      receivers: [otlp]',
        '      exporters: [file]',
        '',
      ].join('\n'),
    );
    collector = startProcess(COLLECTOR, ['--config', config], {});
    const started = await eventually(
      async () => collector.output(),
      (output) => output.includes('Everything is ready'),
      30_000,
    );
    expect(started).toContain('Everything is ready');
    // Read by the exporter as the server installs tracing (the first server of this file).
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${port}`;
    process.env.OTEL_BSP_SCHEDULE_DELAY = '200';
    everything = await startHttpEverything('streamableHttp');
    proxy = await startAuthProxy(everything.port, MCP_TOKEN);
  }, 60_000);

  const h = useAgentServer('openai', { OPENAI_API_KEY: PROVIDER_KEY }, 'postgres', log);

  afterAll(async () => {
    process.env = saved;
    await proxy?.close();
    everything?.child.kill();
    collector?.child.kill();
    await collector?.exited;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  let runId: string;
  let stepIds: string[];

  it('runs the step: a model call, a sandboxed tool, an MCP call and a client-tool pause', async () => {
    const tool = await h.client.tools.create({ source_code: SECRET_LENGTH });
    const mcp = await h.client.mcpServers.create({
      server_name: 'private',
      config: {
        mcp_server_type: 'streamable_http',
        server_url: `${proxy.origin}/mcp`,
        auth_token: MCP_TOKEN,
      },
    });
    const echo = (await h.client.mcpServers.tools.list(mcp.id!)).find((t) => t.name === 'echo')!;
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      tool_ids: [tool.id, echo.id!],
      secrets: { API_TOKEN: TOOL_SECRET },
    });
    h.stub.enqueue(
      { toolCalls: [{ name: 'secret_length', arguments: {} }] },
      { toolCalls: [{ name: 'echo', arguments: { message: 'traced' } }] },
      { toolCalls: [{ name: 'read_local_file', arguments: { path: '/etc/hostname' } }] },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Go.' }],
      client_tools: [READ_LOCAL_FILE],
    });
    expect(response.stop_reason.stop_reason).toBe('requires_approval');
    const returns = response.messages.filter((m) => m.message_type === 'tool_return_message');
    expect(returns.map((m) => (m as { tool_return: string }).tool_return)).toEqual([
      String(TOOL_SECRET.length),
      'Echo: traced',
    ]);
    runId = response.messages[0].run_id!;
    stepIds = (await h.client.runs.steps.list(runId)).getPaginatedItems().map((step) => step.id);
    expect(stepIds).toHaveLength(3);

    // The client runs its tool and answers: the turn workflow goes on and ends.
    const request = response.messages.at(-1) as { tool_call: { tool_call_id: string } };
    h.stub.enqueue({ text: 'Done.' });
    const answered = await h.client.agents.messages.create(agent.id, {
      messages: [
        {
          type: 'approval',
          approvals: [
            {
              type: 'tool',
              tool_call_id: request.tool_call.tool_call_id,
              tool_return: 'host',
              status: 'success',
            },
          ],
        },
      ],
      client_tools: [READ_LOCAL_FILE],
    });
    expect(answered.stop_reason.stop_reason).toBe('end_turn');
  }, 120_000);

  const spanNames = (spans: Record<string, unknown>[]) => spans.map((span) => String(span.SpanName));

  it("answers runs.trace.retrieve with the spans of the run's trace, from the request to each activity", async () => {
    const expected = [
      'POST /v1/agents/:agentId/messages',
      'StartWorkflow:agentTurn',
      'RunWorkflow:agentTurn',
      'RunActivity:callModel',
      'RunActivity:runSandboxTool',
      'chat gpt-4o-mini',
      'sandbox run secret_length',
      'tools/call echo',
    ];
    const spans = await eventually(
      () => h.client.runs.trace.retrieve(runId),
      (found) => expected.every((name) => spanNames(found).includes(name)),
      30_000,
    );
    expect(spanNames(spans)).toEqual(expect.arrayContaining(expected));
    // One trace: the request's.
    const request = spans.find((span) => span.SpanName === 'POST /v1/agents/:agentId/messages')!;
    expect(request).toMatchObject({ SpanKind: 'Server', ParentSpanId: '' });
    const turn = spans.find((span) => span.SpanName === 'RunWorkflow:agentTurn')!;
    expect(turn.TraceId).toBe(request.TraceId);
    // A workflow span names its workflow, not the rest of its WorkflowInfo.
    expect(Object.keys(turn.SpanAttributes as object)).toEqual(
      expect.arrayContaining(['namespace', 'taskQueue', 'workflowType', 'workflowId', 'runId']),
    );
    expect(turn.SpanAttributes).not.toHaveProperty('historyLength');
    expect(turn.SpanAttributes).not.toHaveProperty('firstExecutionRunId');
    const activities = spans.filter((span) => String(span.SpanName).startsWith('RunActivity:'));
    expect(activities.length).toBeGreaterThanOrEqual(5);
    for (const activity of activities) expect(activity.TraceId).toBe(request.TraceId);
    const model = spans.find((span) => span.SpanName === 'chat gpt-4o-mini')!;
    expect(model.SpanAttributes).toMatchObject({
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.system': 'openai',
      'gen_ai.response.finish_reasons': '["tool_calls"]',
    });
    expect(
      Number((model.SpanAttributes as Record<string, string>)['gen_ai.usage.input_tokens']),
    ).toBeGreaterThan(0);
  }, 60_000);

  it("answers a step's trace and metrics with its model call and tool timings", async () => {
    const [first] = stepIds;
    const trace = await h.client.steps.trace.retrieve(first);
    expect(trace).toMatchObject({
      step_id: first,
      run_id: runId,
      request_json: { model: 'gpt-4o-mini', provider: 'openai' },
      response_json: { finish_reasons: ['tool_calls'] },
    });
    const metrics = await h.client.steps.metrics.retrieve(first);
    expect(metrics).toMatchObject({ id: first, run_id: runId });
    expect(metrics.llm_request_ns).toBeGreaterThan(0);
    expect(metrics.tool_execution_ns).toBeGreaterThan(0);
    expect(metrics.step_ns!).toBeGreaterThanOrEqual(metrics.llm_request_ns! + metrics.tool_execution_ns!);
    expect(metrics.llm_request_start_ns!).toBeGreaterThanOrEqual(metrics.step_start_ns!);
  });

  it('a message queued behind a running turn: its trace goes through the session workflow into its turn', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    h.stub.enqueue({ text: 'slow', delayMs: 2_000 }, { text: 'queued reply' });
    const send = (content: string) =>
      h.client.agents.messages.createAsync(agent.id, { messages: [{ role: 'user', content }] });
    await send('first');
    const queued = await send('second');
    await eventually(
      () => h.client.runs.retrieve(queued.id),
      (run) => run.status === 'completed',
      30_000,
    );
    // The session's own span (RunWorkflow:agentSession) ends when the session does; its update
    // handler is the session's part of this trace.
    const expected = [
      'POST /v1/agents/:agentId/messages/async',
      'UpdateWithStartWorkflow:enqueueStep',
      'HandleUpdate:enqueueStep',
      'StartChildWorkflow:agentTurn',
      'RunWorkflow:agentTurn',
      'RunActivity:callModel',
      'chat gpt-4o-mini',
    ];
    const spans = await eventually(
      () => h.client.runs.trace.retrieve(queued.id),
      (found) => expected.every((name) => spanNames(found).includes(name)),
      30_000,
    );
    expect(spanNames(spans)).toEqual(expect.arrayContaining(expected));
    const request = spans.find((span) => span.SpanName === expected[0])!;
    for (const name of expected.slice(1))
      expect(spans.find((span) => span.SpanName === name)!.TraceId).toBe(request.TraceId);
    // The client's reads of the run while it waited are not part of it.
    expect(spanNames(spans).filter((name) => name.startsWith('GET '))).toEqual([]);
  }, 60_000);

  it('exports the same trace to the OTLP receiver', async () => {
    const stored = await h.client.runs.trace.retrieve(runId);
    const traceId = String(stored.find((span) => span.ParentSpanId === '')!.TraceId);
    const received = await eventually(
      async () => receivedSpans(tracesFile).filter((span) => span.traceId === traceId),
      (spans) => spans.some((span) => span.name === 'RunWorkflow:agentTurn'),
      30_000,
    );
    expect(received.map((span) => span.name)).toEqual(
      expect.arrayContaining([
        'POST /v1/agents/:agentId/messages',
        'RunWorkflow:agentTurn',
        'chat gpt-4o-mini',
      ]),
    );
  });

  it("follows a caller's unsampled traceparent: its run makes no span, stored or exported", async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    h.stub.enqueue({ text: 'untraced' }, { text: 'traced' });
    const send = (content: string, headers: Record<string, string> = {}) =>
      h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content }] }, { headers });
    const traceId = randomBytes(16).toString('hex');
    const unsampled = `00-${traceId}-${randomBytes(8).toString('hex')}-00`;
    const untraced = (await send('quiet', { traceparent: unsampled })).messages[0].run_id!;
    const traced = (await send('loud')).messages[0].run_id!;
    // The store writes spans in the order they end: the later run's trace stored, the earlier's
    // would be too.
    await eventually(
      () => h.client.runs.trace.retrieve(traced),
      (spans) => spanNames(spans).includes('RunActivity:callModel'),
      30_000,
    );
    expect(await h.client.runs.trace.retrieve(untraced)).toEqual([]);
    expect(receivedSpans(tracesFile).filter((span) => span.traceId === traceId)).toEqual([]);
  }, 60_000);

  it('installs no tracing with OTEL_SDK_DISABLED=true, and keeps the workflow interceptors', () => {
    process.env.OTEL_SDK_DISABLED = 'true';
    try {
      expect(installTracing({ captureContent: false })).toBeUndefined();
    } finally {
      delete process.env.OTEL_SDK_DISABLED;
    }
    // Histories recorded with tracing on replay only with them: turning it off keeps them.
    const off = workflowWorkerInterceptors(undefined).interceptors;
    expect(off.workflowModules).toEqual(replayOptions.interceptors.workflowModules);
    expect(off).not.toHaveProperty('activity');
  });

  it('writes log lines that name the agent, run, step and trace, and no secret anywhere', async () => {
    const lines = logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const ofRun = lines.filter((line) => line.run_id === runId);
    expect(ofRun.length).toBeGreaterThan(0);
    for (const line of ofRun)
      expect(line).toMatchObject({ trace_id: expect.stringMatching(/^[0-9a-f]{32}$/) });
    // The request that started the run names its agent, and its trace is the run's.
    const stored = await h.client.runs.trace.retrieve(runId);
    const traceId = stored.find((span) => span.ParentSpanId === '')!.TraceId;
    expect(ofRun).toContainEqual(
      expect.objectContaining({
        route: '/v1/agents/:agentId/messages',
        agent_id: expect.stringMatching(/^agent-/),
        trace_id: traceId,
      }),
    );
    const everything = [logLines.join('\n'), fs.readFileSync(tracesFile, 'utf8')].join('\n');
    for (const secret of [PROVIDER_KEY, MCP_TOKEN, TOOL_SECRET]) expect(everything).not.toContain(secret);
    const rows = await h.server.db.query<{ row: string }>(
      'SELECT row_to_json(s)::text AS row FROM trace_spans s',
    );
    for (const secret of [PROVIDER_KEY, MCP_TOKEN, TOOL_SECRET])
      expect(rows.map((r) => r.row).join('\n')).not.toContain(secret);
  });
});
