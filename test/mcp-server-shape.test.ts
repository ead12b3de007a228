import { mcpServerShape } from '../src/api/letta-shapes';
import type { McpServerRow } from '../src/db/mcp-servers';
import { loadConfig } from '../src/config';

/**
 * An MCP server as the API returns it: its credentials masked, or in full as Letta returns them when
 * the operator sets MCP_SHOW_CREDENTIALS (Letta's own tests read a stdio server's env back).
 */
describe('an MCP server as the API shows it', () => {
  const at = new Date('2026-01-01T00:00:00Z');
  const row = (config: McpServerRow['config']): McpServerRow => ({
    id: 'mcp_server-00000000-0000-4000-8000-000000000000',
    server_name: 'files',
    config,
    config_version: 1,
    connection: { status: 'connected', last_error: null, last_tried_at: at },
    created_at: at,
    updated_at: at,
  });
  const stdio = row({
    mcp_server_type: 'stdio',
    command: 'python',
    args: ['-m', 'server'],
    env: { LD_LIBRARY_PATH: '/usr/local/lib', TOKEN: 'abcdefghijklmnop' },
  } as McpServerRow['config']);
  const http = row({
    mcp_server_type: 'streamable_http',
    server_url: 'https://mcp.example.com/mcp',
    auth_token: 'secret-token-123456789',
    custom_headers: { 'X-Team': 'team-secret-abcdef' },
  } as McpServerRow['config']);

  it('masks env values, tokens and headers by default', () => {
    expect(mcpServerShape(stdio)).toMatchObject({ env: { LD_LIBRARY_PATH: '****/lib', TOKEN: '****mnop' } });
    expect(mcpServerShape(http)).toMatchObject({
      auth_token: '****6789',
      custom_headers: { 'X-Team': '****cdef' },
    });
  });

  it('shows them in full when MCP_SHOW_CREDENTIALS is set, and not otherwise', () => {
    expect(loadConfig({}).MCP_SHOW_CREDENTIALS).toBe(false);
    const shown = loadConfig({ MCP_SHOW_CREDENTIALS: 'true' }).MCP_SHOW_CREDENTIALS;
    expect(mcpServerShape(stdio, shown)).toMatchObject({
      env: { LD_LIBRARY_PATH: '/usr/local/lib', TOKEN: 'abcdefghijklmnop' },
    });
    expect(mcpServerShape(http, shown)).toMatchObject({
      auth_token: 'secret-token-123456789',
      custom_headers: { 'X-Team': 'team-secret-abcdef' },
    });
  });
});
