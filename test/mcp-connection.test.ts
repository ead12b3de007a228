import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  connectMcp,
  listMcpTools,
  mcpResultText,
  McpConnectionError,
  type McpServerConfig,
} from '../src/mcp/connection';
import { projectRoot } from '../src/paths';
import { schemaHealth } from '../src/tools/schema-health';
import { strictParameters } from '../src/tools/strict-mode';

/** The MCP reference servers, installed from npm and started from their installed files (not npx). */
const serverFile = (name: string) =>
  path.join(projectRoot, 'node_modules', '@modelcontextprotocol', `server-${name}`, 'dist', 'index.js');
const TIMEOUTS = { connectMs: 10_000, listMs: 10_000 };

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });

/** server-everything in one of its HTTP modes, on a free port; resolves once it listens. */
async function startHttpEverything(
  mode: 'streamableHttp' | 'sse',
): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, [serverFile('everything'), mode], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => /listening|running/i.test(String(chunk)) && resolve());
    child.on('exit', (code) => reject(new Error(`server-everything ${mode} exited (${code})`)));
  });
  return { url: `http://127.0.0.1:${port}${mode === 'sse' ? '/sse' : '/mcp'}`, child };
}

describe('connecting to the MCP reference servers', () => {
  const clients: Client[] = [];
  const children: ChildProcess[] = [];
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-connection-'));
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    children.forEach((child) => child.kill('SIGKILL'));
    fs.rmSync(work, { recursive: true, force: true });
  });
  const connect = async (config: McpServerConfig) => {
    const client = await connectMcp(config, TIMEOUTS);
    clients.push(client);
    return client;
  };
  const echo = async (client: Client) =>
    mcpResultText((await client.callTool({ name: 'echo', arguments: { message: 'hi' } })) as never);

  it('speaks stdio, streamable HTTP and SSE, and falls back from streamable HTTP to SSE', async () => {
    const stdio = await connect({
      mcp_server_type: 'stdio',
      command: process.execPath,
      args: [serverFile('everything'), 'stdio'],
    });
    const streamable = await startHttpEverything('streamableHttp');
    const sse = await startHttpEverything('sse');
    children.push(streamable.child, sse.child);
    const overHttp = await connect({ mcp_server_type: 'streamable_http', server_url: streamable.url });
    const overSse = await connect({ mcp_server_type: 'sse', server_url: sse.url });
    const fellBack = await connect({ mcp_server_type: 'streamable_http', server_url: sse.url });
    for (const client of [stdio, overHttp, overSse, fellBack]) {
      expect((await listMcpTools(client, TIMEOUTS)).map((t) => t.name)).toContain('echo');
      expect(await echo(client)).toBe('Echo: hi');
    }
  });

  it('fails clearly, and soon, when a server cannot be reached', async () => {
    const port = await freePort();
    const started = Date.now();
    const attempt = connectMcp(
      { mcp_server_type: 'streamable_http', server_url: `http://127.0.0.1:${port}/mcp` },
      TIMEOUTS,
    );
    await expect(attempt).rejects.toThrow(McpConnectionError);
    await expect(attempt).rejects.toThrow(/cannot connect to the MCP server/);
    expect(Date.now() - started).toBeLessThan(TIMEOUTS.connectMs);
  });

  it('every tool schema of the reference servers passes the strict transform', async () => {
    const servers: McpServerConfig[] = [
      { mcp_server_type: 'stdio', command: process.execPath, args: [serverFile('everything'), 'stdio'] },
      { mcp_server_type: 'stdio', command: process.execPath, args: [serverFile('filesystem'), work] },
      {
        mcp_server_type: 'stdio',
        command: process.execPath,
        args: [serverFile('memory')],
        env: { MEMORY_FILE_PATH: path.join(work, 'memory.jsonl') },
      },
    ];
    const tools = (
      await Promise.all(servers.map(async (config) => listMcpTools(await connect(config), TIMEOUTS)))
    ).flat();
    expect(tools.length).toBeGreaterThanOrEqual(30);
    for (const tool of tools) {
      const health = schemaHealth(strictParameters(tool.inputSchema as Record<string, unknown>));
      expect([tool.name, health.status, health.reasons]).toEqual([tool.name, 'STRICT_COMPLIANT', []]);
    }
  });
});
