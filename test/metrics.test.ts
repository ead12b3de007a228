import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import { startOpenAiStub, type OpenAiStub } from './helpers/openai-stub';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { freePort, testTemporalAddress } from './helpers/env';
import { stdioConfig } from './helpers/mcp-servers';
import type { StartedProcess } from './helpers/process';
import {
  apiUrl,
  killProcess,
  serverProcessEnv,
  startApiProcess,
  startWorkerProcess,
} from './helpers/server-processes';
import { parsePrometheusText, valueOf, type Family } from './helpers/prometheus-text';
import { dashboardMetrics } from './helpers/dashboard';

const PASSWORD = 'metrics-test-password';

const ASK_USER = {
  name: 'ask_user',
  description: 'Asks the user on their machine.',
  parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
};

const ROLL_SOURCE =
  'def roll_die(sides: int) -> int:\n    """Rolls a die.\n\n    Args:\n        sides: How many sides it has.\n    """\n    return sides\n';

/** A `/metrics` answer, parsed: in Prometheus's text format, or the parser throws. */
async function scrapeAt(url: string): Promise<Map<string, Family>> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await response.text());
}

/**
 * `/metrics` of the server as `npm start` runs it (API and worker in one process, the built code, the
 * Temporal SDK's runtime exporting its metrics), on its own port, read with a strict text-format
 * parser before and after one request whose turn calls the model, a sandboxed tool, an MCP tool and a
 * client tool, and is answered.
 */
describe('Prometheus metrics', () => {
  let dataDir: string;
  let schema: TestSchema;
  let stub: OpenAiStub;
  let env: Record<string, string>;
  let server: StartedProcess;
  let client: Letta;
  let metricsUrl: string;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-metrics-'));
    schema = await createTestSchema();
    stub = await startOpenAiStub();
    const metricsPort = await freePort();
    env = await serverProcessEnv({
      dataDir,
      databaseUrl: schema.url,
      temporalAddress: testTemporalAddress(),
      openAiBaseUrl: stub.baseURL,
      extra: { METRICS_PORT: String(metricsPort), LETTA_SERVER_PASSWORD: PASSWORD },
    });
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    server = await startApiProcess(env, 'all');
    client = new Letta({ baseURL: apiUrl(env), apiKey: PASSWORD, maxRetries: 0 });
  });
  afterAll(async () => {
    if (server) await killProcess(server, 'SIGKILL');
    await stub?.close();
    await schema?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const scrape = () => scrapeAt(metricsUrl);

  it('counts what a turn did: model, sandboxed, MCP and client tool calls, the pause and its answer', async () => {
    const tool = await client.tools.create({ source_code: ROLL_SOURCE });
    const mcp = await client.mcpServers.create({
      server_name: 'everything',
      config: stdioConfig('everything', ['stdio']),
    });
    const echo = (await client.mcpServers.tools.list(mcp.id!)).find((t) => t.name === 'echo')!;
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id, echo.id!] });
    const before = await scrape();

    stub.enqueue(
      { toolCalls: [{ name: 'roll_die', arguments: { sides: 6 } }] },
      { toolCalls: [{ name: 'echo', arguments: { message: 'hi' } }] },
      { toolCalls: [{ name: 'ask_user', arguments: { question: 'Which one?' } }] },
      { text: 'Thanks.' },
    );
    const paused = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Roll, echo, then ask me.' }],
      client_tools: [ASK_USER],
    });
    expect(paused.stop_reason.stop_reason).toBe('requires_approval');
    const duringPause = await scrape();
    expect(valueOf(duringPause, 'letta_approvals_pending', { kind: 'client_tool' })).toBe(1);
    expect(valueOf(duringPause, 'letta_mcp_connections', { server: mcp.id! })).toBe(1);

    const request = paused.messages.at(-1) as { tool_call: { tool_call_id: string } };
    const answered = await client.agents.messages.create(agent.id, {
      messages: [
        {
          type: 'approval',
          approvals: [
            {
              type: 'tool',
              tool_call_id: request.tool_call.tool_call_id,
              tool_return: 'the red one',
              status: 'success',
            },
          ],
        },
      ],
      client_tools: [ASK_USER],
    });
    expect(answered.stop_reason.stop_reason).toBe('end_turn');
    const after = await scrape();

    const moved = (name: string, labels: Record<string, string> = {}) =>
      valueOf(after, name, labels) - valueOf(before, name, labels);
    const model = { provider: 'openai', model: 'gpt-4o-mini' };
    expect(moved('letta_runs_started_total')).toBe(2);
    expect(moved('letta_runs_finished_total', { stop_reason: 'requires_approval' })).toBe(1);
    expect(moved('letta_runs_finished_total', { stop_reason: 'end_turn' })).toBe(1);
    expect(moved('letta_run_duration_seconds_count')).toBe(2);
    expect(moved('letta_model_calls_total', { ...model, outcome: 'ok' })).toBe(4);
    expect(moved('letta_model_call_duration_seconds_count', model)).toBe(4);
    // The stub's usage: 10 tokens in and 5 out per call.
    expect(moved('letta_model_tokens_total', { ...model, direction: 'input' })).toBe(40);
    expect(moved('letta_model_tokens_total', { ...model, direction: 'output' })).toBe(20);
    expect(moved('letta_tool_calls_total', { mode: 'sandbox', tool: 'roll_die', outcome: 'success' })).toBe(
      1,
    );
    expect(moved('letta_tool_calls_total', { mode: 'mcp', tool: 'echo', outcome: 'success' })).toBe(1);
    expect(moved('letta_tool_call_duration_seconds_count', { mode: 'sandbox', tool: 'roll_die' })).toBe(1);
    expect(moved('letta_tool_call_duration_seconds_count', { mode: 'mcp', tool: 'echo' })).toBe(1);
    expect(moved('letta_approval_wait_seconds_count', { kind: 'client_tool', outcome: 'answered' })).toBe(1);
    expect(valueOf(after, 'letta_approvals_pending')).toBe(0);
    expect(valueOf(after, 'letta_queued_runs')).toBe(0);
    const messages = { method: 'POST', route: '/v1/agents/:agentId/messages', status: '200' };
    expect(moved('letta_http_requests_total', messages)).toBe(2);
    // No route template, no id: every label value of the HTTP metrics is a route as registered.
    const routes = after.get('letta_http_requests_total')!.samples.map((s) => s.labels.route);
    expect(routes.filter((route) => route.includes(agent.id))).toEqual([]);
    // Every metric the Grafana dashboard queries, the Temporal SDK's included, is one this server exports;
    // the SDK exports its request failures from the first one on, and a turn may make none.
    const fromFirstFailure = ['temporal_request_failure_total'];
    expect(dashboardMetrics().filter((name) => !after.has(name) && !fromFirstFailure.includes(name))).toEqual(
      [],
    );
  });

  it("appends the Temporal SDK's worker and client metrics", async () => {
    const families = await scrape();
    const temporal = (name: string): Family | undefined => families.get(name);
    expect(temporal('temporal_workflow_task_execution_latency_seconds')?.type).toBe('histogram');
    expect(temporal('temporal_activity_execution_latency_seconds')?.type).toBe('histogram');
    expect(valueOf(families, 'temporal_activity_execution_latency_seconds_count')).toBeGreaterThan(0);
    expect(valueOf(families, 'temporal_request_total')).toBeGreaterThan(0);
  });

  it('serves metrics on their own port only: the API port asks for the password, then has none', async () => {
    expect((await fetch(`${apiUrl(env)}/metrics`)).status).toBe(401);
    const withPassword = await fetch(`${apiUrl(env)}/metrics`, {
      headers: { authorization: `Bearer ${PASSWORD}` },
    });
    expect(withPassword.status).toBe(404);
    expect((await fetch(metricsUrl.replace('/metrics', '/'))).status).toBe(404);
    // Requests no route took, the refused ones among them, are counted under no path of theirs.
    const unmatched = (families: Map<string, Family>) =>
      valueOf(families, 'letta_http_requests_total', { route: 'unmatched', status: '401' }) +
      valueOf(families, 'letta_http_requests_total', { route: 'unmatched', status: '404' });
    expect(unmatched(await scrape())).toBe(2);
  });
});

/** The API and the worker as separate processes (`--role=api`, `--role=worker`): each serves its own. */
describe('Prometheus metrics of a split deployment', () => {
  let dataDir: string;
  let schema: TestSchema;
  let stub: OpenAiStub;
  const processes: StartedProcess[] = [];
  let client: Letta;
  let apiMetrics: string;
  let workerMetrics: string;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-metrics-split-'));
    schema = await createTestSchema();
    stub = await startOpenAiStub();
    const env = await serverProcessEnv({
      dataDir,
      databaseUrl: schema.url,
      temporalAddress: testTemporalAddress(),
      openAiBaseUrl: stub.baseURL,
    });
    const [apiPort, workerPort] = [await freePort(), await freePort()];
    processes.push(await startApiProcess({ ...env, METRICS_PORT: String(apiPort) }));
    processes.push(await startWorkerProcess({ ...env, METRICS_PORT: String(workerPort) }));
    [apiMetrics, workerMetrics] = [apiPort, workerPort].map((port) => `http://127.0.0.1:${port}/metrics`);
    client = new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => {
    for (const proc of processes) await killProcess(proc, 'SIGKILL');
    await stub?.close();
    await schema?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('counts requests where the API runs and model calls where the worker runs them', async () => {
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini' });
    stub.enqueue({ text: 'Hello.' });
    const reply = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(reply.stop_reason.stop_reason).toBe('end_turn');
    const [api, worker] = await Promise.all([scrapeAt(apiMetrics), scrapeAt(workerMetrics)]);
    const messages = { method: 'POST', route: '/v1/agents/:agentId/messages' };
    expect(valueOf(api, 'letta_http_requests_total', messages)).toBe(1);
    expect(valueOf(api, 'letta_runs_started_total')).toBe(1);
    expect(valueOf(api, 'letta_model_calls_total')).toBe(0);
    expect(valueOf(worker, 'letta_model_calls_total', { outcome: 'ok' })).toBe(1);
    expect(valueOf(worker, 'letta_runs_finished_total', { stop_reason: 'end_turn' })).toBe(1);
    expect(valueOf(worker, 'letta_http_requests_total')).toBe(0);
    // Each process's Temporal runtime: the API's client, the worker's workers.
    expect(valueOf(api, 'temporal_request_total')).toBeGreaterThan(0);
    expect(valueOf(worker, 'temporal_activity_execution_latency_seconds_count')).toBeGreaterThan(0);
  });
});
