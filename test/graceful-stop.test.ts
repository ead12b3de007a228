/**
 * A stop drains, and an interrupted call is honest: the server runs as `npm start` runs it (the API
 * and the workers in one process, `--role=all`) on the real Temporal server and PostgreSQL, with
 * sandboxed tools (Python and TypeScript, in bubblewrap) and an MCP server that count each start of
 * theirs. SIGTERM lets the calls in flight finish; a grace shorter than a call, or kill -9, leaves it
 * to the restarted server, which runs it again only when the tool may run twice.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import { interruptedText } from '../activities/tool-call';
import { startOpenAiStub, type ChatRequest, type OpenAiStub } from './helpers/openai-stub';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { eventually } from './helpers/eventually';
import { freePort, freePortBelowEphemeral, testTemporalAddress } from './helpers/env';
import { startCountingMcpServer } from './helpers/mcp-servers';
import { parsePrometheusText } from './helpers/prometheus-text';
import { isAlive, startProcess, waitForStatus, type StartedProcess } from './helpers/process';
import { apiUrl, killProcess, serverProcessEnv, startApiProcess } from './helpers/server-processes';

/** What a message asks the stub's model to call: `PLAN {"tool": …, "arguments": …}`. */
const plan = (tool: string, args: Record<string, unknown>) =>
  `PLAN ${JSON.stringify({ tool, arguments: args })}`;

/**
 * The model: a user message's plan is one tool call, a tool's return ends the turn with a text that
 * quotes it.
 */
function followPlans(stub: OpenAiStub) {
  stub.setDefault((request: ChatRequest) => {
    const last = request.messages.at(-1);
    if (last?.role === 'tool') return { text: `The tool said: ${last.content}` };
    const asked = [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    const found = /PLAN (\{.*\})/.exec(asked);
    if (!found) return { text: 'No plan.' };
    const { tool, arguments: args } = JSON.parse(found[1].replace(/\\"/g, '"')) as {
      tool: string;
      arguments: Record<string, unknown>;
    };
    return { toolCalls: [{ name: tool, arguments: args }] };
  });
}

/** Counts what sandboxed tools report over HTTP: each start and end, by their LETTA_TOOL_CALL_ID. */
async function startCounter() {
  const events: { phase: string; call: string }[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://counter');
    events.push({ phase: url.pathname.slice(1), call: url.searchParams.get('call') ?? '' });
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    starts: (call?: string) => events.filter((e) => e.phase === 'start' && (!call || e.call === call)),
    ends: (call?: string) => events.filter((e) => e.phase === 'end' && (!call || e.call === call)),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
type Counter = Awaited<ReturnType<typeof startCounter>>;

/** A Python tool that reports its start and end to `counter`, and sleeps `seconds` between. */
const pythonSleeper = (name: string, counter: string) => ({
  source_code: [
    'import os, time, urllib.request',
    '',
    `def ${name}(seconds: int) -> str:`,
    '    """Sleeps, reporting its start and end.',
    '',
    '    Args:',
    '        seconds: How long.',
    '    """',
    '    call = os.environ.get("LETTA_TOOL_CALL_ID", "")',
    `    urllib.request.urlopen(f"${counter}/start?call={call}", timeout=5).read()`,
    '    time.sleep(seconds)',
    `    urllib.request.urlopen(f"${counter}/end?call={call}", timeout=5).read()`,
    '    return f"slept {seconds}s as {call}"',
    '',
  ].join('\n'),
});

/** The same in TypeScript. */
const typescriptSleeper = (name: string, counter: string) => ({
  source_type: 'typescript',
  source_code: [
    `export async function ${name}(seconds: number): Promise<string> {`,
    "  const call = process.env.LETTA_TOOL_CALL_ID ?? '';",
    `  await fetch(\`${counter}/start?call=\${call}\`);`,
    '  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));',
    `  await fetch(\`${counter}/end?call=\${call}\`);`,
    '  return `slept ${seconds}s as ${call}`;',
    '}',
    '',
  ].join('\n'),
  json_schema: {
    name,
    description: 'Sleeps, reporting its start and end.',
    parameters: {
      type: 'object',
      properties: { seconds: { type: 'integer', description: 'How long.' } },
      required: ['seconds'],
    },
  },
});

interface StartedRun {
  runId: string;
  tool: string;
}

describe('stopping the server while calls run', () => {
  let dataDir: string;
  let schema: TestSchema;
  let stub: OpenAiStub;
  let counter: Counter;
  let mcp: Awaited<ReturnType<typeof startCountingMcpServer>>;
  let env: Record<string, string>;
  let server: StartedProcess | undefined;
  let client: Letta;
  /** The tools' ids, by name, as stored here. */
  const toolIds = new Map<string, string>();

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-stop-'));
    schema = await createTestSchema();
    stub = await startOpenAiStub();
    followPlans(stub);
    counter = await startCounter();
    mcp = await startCountingMcpServer();
    env = await serverProcessEnv({
      dataDir,
      databaseUrl: schema.url,
      temporalAddress: testTemporalAddress(),
      openAiBaseUrl: stub.baseURL,
      extra: {
        ACTIVITY_HEARTBEAT_TIMEOUT_MS: '3000',
        SHUTDOWN_GRACE_MS: '20000',
        SHUTDOWN_TIMEOUT_MS: '40000',
        METRICS_PORT: String(await freePort()),
      },
    });
    server = await startApiProcess(env, 'all');
    client = new Letta({ baseURL: apiUrl(env), apiKey: 'unused', maxRetries: 0 });
    // The tools reach the counter on loopback: the local sandbox config lets them onto the network.
    const allowed = await fetch(`${apiUrl(env)}/v1/sandbox-config/local`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ allow_network: true }),
    });
    expect(allowed.status).toBe(200);
    for (const tool of [
      pythonSleeper('sleep_py', counter.url),
      pythonSleeper('sleep_py_again', counter.url),
      typescriptSleeper('sleep_ts', counter.url),
    ]) {
      const stored = await client.tools.upsert(tool);
      toolIds.set(stored.name!, stored.id);
    }
    // Its author says it may run twice (the official client sets metadata_ by update).
    await client.tools.update(toolIds.get('sleep_py_again')!, { metadata_: { idempotent: true } });
    const registered = await client.mcpServers.create({
      server_name: 'counting',
      config: { mcp_server_type: 'streamable_http', server_url: mcp.url } as never,
    });
    for (const tool of await client.mcpServers.tools.list(registered.id!)) toolIds.set(tool.name!, tool.id!);
  }, 120_000);
  afterAll(async () => {
    if (server) await killProcess(server, 'SIGKILL');
    await mcp?.close();
    await counter?.close();
    await stub?.close();
    await schema?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** A new agent with `tool`, sent a message whose plan calls it, in the background. */
  async function startRun(tool: string, args: Record<string, unknown>): Promise<StartedRun> {
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [toolIds.get(tool)!] });
    const run = await client.agents.messages.createAsync(agent.id, {
      messages: [{ role: 'user', content: plan(tool, args) }],
    });
    return { runId: run.id, tool };
  }

  /** The run's one tool call, its return, once the run has ended. */
  async function endOf({ runId }: StartedRun) {
    const run = await eventually(
      () => client.runs.retrieve(runId),
      (r) => r.status === 'completed' || r.status === 'failed' || r.status === 'cancelled',
      90_000,
    );
    const messages = (await client.runs.messages.list(runId)).getPaginatedItems();
    const call = messages.find((m) => m.message_type === 'tool_call_message') as
      { tool_call: { tool_call_id: string } } | undefined;
    const returns = messages.filter((m) => m.message_type === 'tool_return_message') as unknown as {
      status: string;
      tool_return: string;
    }[];
    return { status: run.status, callId: call?.tool_call.tool_call_id ?? '', returns };
  }

  /** The calls of `runs` that started, as the counter and the MCP server saw them. */
  const startsSeen = () => counter.starts().length + mcp.calls.length;

  /** The takeovers the server counted since it started, by mode and action. */
  async function takeovers(): Promise<Record<string, number>> {
    const text = await (await fetch(`http://127.0.0.1:${env.METRICS_PORT}/metrics`)).text();
    const family = parsePrometheusText(text).get('letta_tool_call_takeovers_total');
    return Object.fromEntries(
      (family?.samples ?? []).map((s) => [`${s.labels.mode}/${s.labels.action}`, s.value]),
    );
  }

  /** What the spans of the run's trace say of a takeover. */
  async function takeoverOnTrace(runId: string): Promise<string[]> {
    const spans = (await (await fetch(`${apiUrl(env)}/v1/runs/${runId}/trace`)).json()) as {
      SpanAttributes: Record<string, string>;
    }[];
    return spans.flatMap((span) => span.SpanAttributes['letta.tool_call.takeover'] ?? []);
  }

  const restart = async () => {
    server = await startApiProcess(env, 'all');
  };

  it('drains on SIGTERM: no new turns, the calls in flight finish, every run ends with its tools’ own returns after a restart', async () => {
    const runs = [
      await startRun('sleep_py', { seconds: 4 }),
      await startRun('sleep_py', { seconds: 4 }),
      await startRun('sleep_ts', { seconds: 4 }),
      await startRun('slow_write', { ms: 4_000 }),
    ];
    expect(
      await eventually(
        async () => startsSeen(),
        (n) => n === runs.length,
        60_000,
      ),
    ).toBe(runs.length);
    const stopping = Date.now();
    process.kill(server!.child.pid!, 'SIGTERM'); // the process alone, as Kubernetes and docker stop send it

    // Stopping: the load balancer's health check fails, a new turn is refused, a read is answered.
    const health = await eventually(
      () => fetch(`${apiUrl(env)}/v1/health/`),
      (res) => res.status === 503,
      5_000,
    );
    expect(await health.json()).toMatchObject({ status: 'stopping' });
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini' });
    const refused = await fetch(`${apiUrl(env)}/v1/agents/${agent.id}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Hello' }] }),
    });
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toEqual({ detail: expect.stringContaining('stopping') });
    expect((await client.agents.retrieve(agent.id)).id).toBe(agent.id);

    expect(await server!.exited).toBe(0);
    // It waited for the calls, and no longer than they took.
    expect(counter.ends()).toHaveLength(3);
    expect(mcp.calls.every((call) => call.end !== undefined)).toBe(true);
    expect(Date.now() - stopping).toBeLessThan(12_000);

    await restart();
    for (const run of runs) {
      const end = await endOf(run);
      expect(end.status).toBe('completed');
      expect(end.returns).toHaveLength(1);
      expect(end.returns[0].tool_return).not.toMatch(/cancel/i);
      if (run.tool === 'slow_write') {
        expect(end.returns[0]).toMatchObject({ status: 'success', tool_return: 'slow_write done' });
        // The MCP request carried the call's id in its _meta.
        expect(mcp.calls.filter((call) => call.callId === end.callId)).toHaveLength(1);
      } else {
        // Each sandboxed tool saw its call's id as LETTA_TOOL_CALL_ID, and ran once.
        expect(end.returns[0]).toMatchObject({ status: 'success', tool_return: `slept 4s as ${end.callId}` });
        expect(counter.starts(end.callId)).toHaveLength(1);
      }
    }
    expect(await takeovers()).toEqual({});
  }, 240_000);

  /**
   * Calls of a tool that may run again and of one that may not, in the sandbox and on the MCP server,
   * cut short by `stop`: after a restart, each is taken over; the first runs again, the second is
   * answered that it may have run.
   */
  async function expectTakeovers(stop: (server: StartedProcess) => Promise<void>) {
    const startsBefore = startsSeen();
    const endsBefore = counter.ends().length;
    const runs = {
      sandboxWrite: await startRun('sleep_py', { seconds: 8 }),
      sandboxRead: await startRun('sleep_py_again', { seconds: 8 }),
      mcpWrite: await startRun('slow_write', { ms: 8_000 }),
      mcpRead: await startRun('slow_read', { ms: 8_000 }),
    };
    const started = await eventually(
      async () => startsSeen(),
      (n) => n === startsBefore + 4,
      60_000,
    );
    expect(started).toBe(startsBefore + 4);
    await stop(server!);
    // The sandboxed tools were stopped with their server: neither reached its end.
    expect(counter.ends()).toHaveLength(endsBefore);
    await restart();

    const sandboxWrite = await endOf(runs.sandboxWrite);
    expect(sandboxWrite.returns).toEqual([
      expect.objectContaining({ status: 'error', tool_return: interruptedText('sleep_py') }),
    ]);
    expect(counter.starts(sandboxWrite.callId)).toHaveLength(1);

    const sandboxRead = await endOf(runs.sandboxRead);
    expect(sandboxRead.returns).toEqual([
      expect.objectContaining({ status: 'success', tool_return: `slept 8s as ${sandboxRead.callId}` }),
    ]);
    expect(counter.starts(sandboxRead.callId)).toHaveLength(2);

    const mcpWrite = await endOf(runs.mcpWrite);
    expect(mcpWrite.returns).toEqual([
      expect.objectContaining({ status: 'error', tool_return: interruptedText('slow_write') }),
    ]);
    expect(mcp.calls.filter((call) => call.callId === mcpWrite.callId)).toHaveLength(1);

    const mcpRead = await endOf(runs.mcpRead);
    expect(mcpRead.returns).toEqual([
      expect.objectContaining({ status: 'success', tool_return: 'slow_read done' }),
    ]);
    expect(mcp.calls.filter((call) => call.callId === mcpRead.callId)).toHaveLength(2);

    for (const end of [sandboxWrite, sandboxRead, mcpWrite, mcpRead]) expect(end.status).toBe('completed');
    // Each takeover is on its run's trace: the tool call's span says what was done.
    for (const [run, action] of [
      [runs.sandboxWrite, 'refused'],
      [runs.sandboxRead, 'rerun'],
      [runs.mcpWrite, 'refused'],
      [runs.mcpRead, 'rerun'],
    ] as const) {
      const marked = await eventually(
        () => takeoverOnTrace(run.runId),
        (found) => found.length > 0,
      );
      expect(marked).toEqual([action]);
    }
    expect(await takeovers()).toEqual({
      'sandbox/rerun': 1,
      'sandbox/refused': 1,
      'mcp/rerun': 1,
      'mcp/refused': 1,
    });
  }

  it('leaves a call longer than the grace to the restarted server, which takes it over by the tool’s retry policy', async () => {
    await killProcess(server!, 'SIGTERM');
    env = { ...env, SHUTDOWN_GRACE_MS: '1000', SHUTDOWN_TIMEOUT_MS: '20000' };
    await restart();
    await expectTakeovers(async (running) => {
      const stopping = Date.now();
      process.kill(running.child.pid!, 'SIGTERM');
      expect(await running.exited).toBe(0);
      // The grace, not the calls: they are cut short, recorded nowhere.
      expect(Date.now() - stopping).toBeLessThan(7_000);
    });
  }, 300_000);

  it('takes over the calls a kill -9 left, as it does those a shutdown cut short', async () => {
    await expectTakeovers((running) => killProcess(running, 'SIGKILL'));
  }, 300_000);

  it('runs a call again however often its process stops under it: a stop uses up none of its attempts', async () => {
    await killProcess(server!, 'SIGTERM');
    env = { ...env, TOOL_MAX_ATTEMPTS: '1' };
    await restart();
    const before = mcp.calls.length;
    const run = await startRun('slow_read', { ms: 6_000 });
    // Killed twice under the call, each time after its latest attempt started: two interruptions, on
    // a call allowed one attempt.
    for (const starts of [1, 2]) {
      await eventually(
        async () => mcp.calls.length - before,
        (n) => n === starts,
        60_000,
      );
      await killProcess(server!, 'SIGKILL');
      await restart();
    }
    const end = await endOf(run);
    expect(end.returns).toEqual([
      expect.objectContaining({ status: 'success', tool_return: 'slow_read done' }),
    ]);
    expect(mcp.calls.filter((call) => call.callId === end.callId)).toHaveLength(3);
  }, 300_000);
});

describe('a closed terminal (SIGHUP)', () => {
  let dataDir: string;

  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-hup-'));
  });
  afterEach(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  /** Whether something accepts connections on `port` of loopback. */
  const listening = (port: number) =>
    new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });

  it('stops the server the same ordered way, its embedded Temporal server last: nothing is left on its ports', async () => {
    const env = {
      DATA_DIR: dataDir,
      PORT: String(await freePortBelowEphemeral()),
      TEMPORAL_PORT: String(await freePortBelowEphemeral()),
      TEMPORAL_UI_PORT: String(await freePortBelowEphemeral()),
    };
    const proc = startProcess('node', ['dist/src/main.js'], env);
    try {
      await waitForStatus(`http://127.0.0.1:${env.PORT}/v1/health/`, 200, proc, 120_000);
      const temporalPid = Number(fs.readFileSync(path.join(dataDir, 'temporal.pid'), 'utf8'));
      expect(await listening(Number(env.TEMPORAL_PORT))).toBe(true);
      process.kill(proc.child.pid!, 'SIGHUP');
      expect(await proc.exited).toBe(0);
      expect(proc.output()).toContain('"signal":"SIGHUP"');
      expect(proc.output()).toContain('"msg":"stopped"');
      expect(isAlive(temporalPid)).toBe(false);
      expect(await listening(Number(env.TEMPORAL_PORT))).toBe(false);
    } finally {
      if (proc.child.exitCode === null) await killProcess(proc, 'SIGKILL');
    }
  }, 180_000);
});
