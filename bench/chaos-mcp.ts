/**
 * The chaos run's MCP server (streamable HTTP, in the driver's process, so it outlives the workers the
 * run kills): two tools that wait as long as asked, one that changes something (no annotations: not
 * idempotent) and one that only reads (`readOnlyHint`: its calls may run again). Each counts its
 * starts by the call's idempotency key, the tool call id in the request's `_meta`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/** The `_meta` key a call's id travels under (src/mcp/call-id.ts). */
const CALL_ID_META_KEY = 'com.letta/tool_call_id';

export interface ChaosMcp {
  url: string;
  /** Starts of each call, by its tool call id. */
  starts: Map<string, number>;
  /** Calls that came without an idempotency key. */
  keyless: number;
  close(): Promise<void>;
}

export async function startChaosMcp(): Promise<ChaosMcp> {
  const starts = new Map<string, number>();
  const state = { keyless: 0 };
  const tool = (extra: { _meta?: Record<string, unknown> }, ms: number) => {
    const key = extra._meta?.[CALL_ID_META_KEY];
    if (typeof key === 'string') starts.set(key, (starts.get(key) ?? 0) + 1);
    else state.keyless++;
    return sleep(ms).then(() => ({ content: [{ type: 'text' as const, text: `waited ${ms}` }] }));
  };
  const mcpServer = () => {
    const server = new McpServer({ name: 'chaos', version: '1.0.0' });
    const input = { ms: z.number().int().min(0).max(60_000) };
    server.registerTool(
      'chaos_write',
      { description: 'Waits ms milliseconds, then says so. Changes something.', inputSchema: input },
      ({ ms }, extra) => tool(extra, ms),
    );
    server.registerTool(
      'chaos_read',
      {
        description: 'Waits ms milliseconds, then says so. Reads only.',
        inputSchema: input,
        annotations: { readOnlyHint: true },
      },
      ({ ms }, extra) => tool(extra, ms),
    );
    return server;
  };
  const listener = http.createServer((req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', async () => {
      const server = mcpServer();
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => void transport.close().then(() => server.close()));
      await server.connect(transport);
      await transport.handleRequest(req, res, JSON.parse(raw || 'null'));
    });
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    starts,
    get keyless() {
      return state.keyless;
    },
    close: () =>
      new Promise((resolve) => {
        listener.closeAllConnections();
        listener.close(() => resolve());
      }),
  };
}
