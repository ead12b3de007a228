import type { ChildProcess } from 'node:child_process';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { connectMcp, listMcpTools, McpConnectionError, type McpServerConfig } from '../src/mcp/connection';
import { mcpContentText } from '../src/mcp/tool-result';
import { mcpStdioLauncher, mcpStdioOptions } from '../src/mcp/stdio-sandbox';
import { schemaHealth } from '../src/schemas/schema-health';
import { strictParameters } from '../src/schemas/strict-mode';
import { freePort, testConfig } from './helpers/env';
import { startHttpEverything, stdioConfig } from './helpers/mcp-servers';

const TIMEOUTS = { connectMs: 10_000, listMs: 10_000 };
/** Stdio servers start as the server starts them by default: in the MCP sandbox. */
const STDIO = mcpStdioLauncher(mcpStdioOptions(testConfig({})));

describe('connecting to the MCP reference servers', () => {
  const clients: Client[] = [];
  const children: ChildProcess[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    children.forEach((child) => child.kill('SIGKILL'));
  });
  const connect = async (config: McpServerConfig) => {
    const client = await connectMcp(config, TIMEOUTS, STDIO);
    clients.push(client);
    return client;
  };
  const echo = async (client: Client) =>
    mcpContentText((await client.callTool({ name: 'echo', arguments: { message: 'hi' } })).content as never);

  it('speaks stdio, streamable HTTP and SSE, and falls back from streamable HTTP to SSE', async () => {
    const stdio = await connect(stdioConfig('everything', ['stdio']));
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
      STDIO,
    );
    await expect(attempt).rejects.toThrow(McpConnectionError);
    await expect(attempt).rejects.toThrow(/cannot connect to the MCP server/);
    expect(Date.now() - started).toBeLessThan(TIMEOUTS.connectMs);
  });

  it('every tool schema of the reference servers passes the strict transform', async () => {
    // Their files in the sandbox's own /tmp.
    const servers: McpServerConfig[] = [
      stdioConfig('everything', ['stdio']),
      stdioConfig('filesystem', ['/tmp']),
      stdioConfig('memory', [], { MEMORY_FILE_PATH: '/tmp/memory.jsonl' }),
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
