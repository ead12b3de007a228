/**
 * The smoke set (`npm run test:smoke`), which CI also runs on the newest Node line (.ci/run): the
 * server started as `npm start` starts it (a process of the built code on the node running the tests,
 * with the embedded PGlite and Temporal dev server), then one of each: an agent turn, a custom Python
 * tool in the sandbox, a stdio MCP server's tool, an approval, and a clean stop. What a Node release
 * could break is all in there: the Temporal SDK's native module and workflow bundle, PGlite's WASM,
 * the MCP SDK, child processes and signals.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import { freePort } from './helpers/env';
import { stdioConfig } from './helpers/mcp-servers';
import { startOpenAiStub, type OpenAiStub, type StubToolCall } from './helpers/openai-stub';
import { processesMentioning, startProcess, waitForStatus, type StartedProcess } from './helpers/process';

const DOUBLE =
  'def double(n: int) -> int:\n    """Doubles n.\n\n    Args:\n        n: a number\n    """\n    return n * 2\n';

describe(`smoke: the server as users start it, on Node ${process.version}`, () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-smoke-'));
  let stub: OpenAiStub;
  let server: StartedProcess;
  let client: Letta;

  beforeAll(async () => {
    stub = await startOpenAiStub();
    const env = {
      DATA_DIR: dataDir,
      PORT: String(await freePort()),
      TEMPORAL_PORT: String(await freePort()),
      TEMPORAL_UI_PORT: String(await freePort()),
      OPENAI_BASE_URL: stub.baseURL,
      OPENAI_API_KEY: 'test-key',
    };
    server = startProcess(process.execPath, ['dist/src/main.js'], env);
    const url = `http://127.0.0.1:${env.PORT}`;
    await waitForStatus(`${url}/v1/health/`, 200, server, 120_000);
    client = new Letta({ baseURL: url, apiKey: 'unused', maxRetries: 0 });
  }, 150_000);
  afterAll(async () => {
    for (const pid of processesMentioning(dataDir)) process.kill(pid, 'SIGKILL');
    await stub?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /**
   * One turn of a new agent (`agent`: its tools and rules): the model (the stub) calls `call`, then
   * says 'Done.'.
   */
  const turnCalling = async (call: StubToolCall, agent: Parameters<Letta['agents']['create']>[0]) => {
    const { id } = await client.agents.create({ model: 'openai/gpt-4o-mini', ...agent });
    stub.enqueue({ toolCalls: [call] }, { text: 'Done.' });
    const response = await client.agents.messages.create(id, {
      messages: [{ role: 'user', content: `Use ${call.name}.` }],
    });
    return {
      id,
      response,
      toolReturn: response.messages.find((m) => m.message_type === 'tool_return_message'),
    };
  };

  it('comes up on the embedded PGlite and Temporal dev server, on the node running the tests', () => {
    expect(server.output()).toContain('using the embedded PGlite database');
    expect(fs.existsSync(path.join(dataDir, 'temporal.pid'))).toBe(true);
    expect(fs.readlinkSync(`/proc/${server.child.pid}/exe`)).toBe(fs.realpathSync(process.execPath));
  });

  it('runs an agent turn', async () => {
    const agent = await client.agents.create({ model: 'openai/gpt-4o-mini' });
    stub.enqueue({ text: 'Hello from the stub.' });
    const response = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    expect(response.messages.at(-1)).toMatchObject({
      message_type: 'assistant_message',
      content: 'Hello from the stub.',
    });
  });

  it('runs a custom Python tool in the sandbox', async () => {
    const tool = await client.tools.create({ source_code: DOUBLE });
    const { toolReturn } = await turnCalling(
      { name: 'double', arguments: { n: 21 } },
      { tool_ids: [tool.id] },
    );
    expect(toolReturn).toMatchObject({ status: 'success', tool_return: '42' });
  });

  it("calls a stdio MCP server's tool", async () => {
    const mcp = await client.mcpServers.create({
      server_name: 'everything',
      config: stdioConfig('everything', ['stdio']),
    });
    const echo = (await client.mcpServers.tools.list(mcp.id!)).find((tool) => tool.name === 'echo')!;
    const { toolReturn } = await turnCalling(
      { name: 'echo', arguments: { message: 'smoke' } },
      { tool_ids: [echo.id!] },
    );
    expect(toolReturn).toMatchObject({ status: 'success', tool_return: 'Echo: smoke' });
    await client.mcpServers.delete(mcp.id!);
  });

  it('pauses for approval and runs the tool once approved', async () => {
    const tool = (await client.tools.list({ name: 'double' })).items[0];
    // The stub's 'Done.' stays queued for the model call after the approved tool's.
    const paused = await turnCalling(
      { name: 'double', arguments: { n: 5 } },
      { tool_ids: [tool.id], tool_rules: [{ type: 'requires_approval', tool_name: 'double' }] },
    );
    expect(paused.response.stop_reason.stop_reason).toBe('requires_approval');
    const request = paused.response.messages.at(-1) as {
      message_type: string;
      tool_call: { tool_call_id: string };
    };
    expect(request.message_type).toBe('approval_request_message');
    const answered = await client.agents.messages.create(paused.id, {
      messages: [
        {
          type: 'approval',
          approvals: [{ type: 'approval', tool_call_id: request.tool_call.tool_call_id, approve: true }],
        },
      ],
    });
    expect(answered.stop_reason.stop_reason).toBe('end_turn');
    expect(answered.messages[0]).toMatchObject({ message_type: 'tool_return_message', tool_return: '10' });
    expect(answered.messages.at(-1)).toMatchObject({ message_type: 'assistant_message', content: 'Done.' });
  });

  it('stops on SIGTERM with nothing left running', async () => {
    process.kill(server.child.pid!, 'SIGTERM');
    expect(await server.exited).toBe(0);
    expect(server.output()).toContain('"msg":"stopped"');
    expect(processesMentioning(dataDir)).toEqual([]);
  });
});
