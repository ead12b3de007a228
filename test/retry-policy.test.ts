import { DomainError } from '../src/errors';
import { MCP_TOOL_TYPE } from '../src/mcp/tool-sync';
import { updatedConfig } from '../src/mcp/server-config';
import { McpServerCreateSchema, McpServerUpdateSchema } from '../src/schemas/mcp-server';
import { checkIdempotentFlag, runsAgainAfterInterruption } from '../src/tools/retry-policy';

/** A stored tool as far as its retry policy reads it. */
const tool = (name: string, tool_type: string, metadata: Record<string, unknown> | null = null) => ({
  name,
  tool_type,
  metadata,
});
const mcpTool = (hints?: Record<string, true>, own?: boolean) =>
  tool('search', MCP_TOOL_TYPE, {
    mcp: { server_id: 's', ...(hints && { hints }) },
    ...(own === undefined ? {} : { idempotent: own }),
  });
const server = (toolsIdempotent?: boolean | null) => ({ config: { tools_idempotent: toolsIdempotent } });

describe('a tool’s retry policy after an interrupted attempt', () => {
  it.each([
    ['a custom tool', tool('send_invoice', 'custom'), undefined, false],
    [
      'a custom tool its author marked',
      tool('send_invoice', 'custom', { idempotent: true }),
      undefined,
      true,
    ],
    ['a built-in read', tool('conversation_search', 'letta_core'), undefined, true],
    ['a built-in that writes', tool('archival_memory_insert', 'letta_core'), undefined, false],
    ['run_code', tool('run_code', 'letta_builtin'), undefined, false],
    ['a custom tool named as a built-in read', tool('web_search', 'custom'), undefined, false],
    ['an MCP tool hinted read-only', mcpTool({ read_only: true }), server(), true],
    ['an MCP tool hinted idempotent', mcpTool({ idempotent: true }), server(), true],
    ['an MCP tool hinted nothing', mcpTool(), server(), false],
    [
      'an MCP tool whose server says no, whatever its hints',
      mcpTool({ read_only: true }),
      server(false),
      false,
    ],
    ['an MCP tool whose server says yes', mcpTool(), server(true), true],
    [
      'an MCP tool that says no itself, whatever its server',
      mcpTool({ read_only: true }, false),
      server(true),
      false,
    ],
    ['an MCP tool that says yes itself', mcpTool(undefined, true), server(false), true],
  ])('%s: runs again %s', (_what, stored, mcpServer, expected) => {
    expect(runsAgainAfterInterruption(stored, mcpServer)).toBe(expected);
  });

  it('takes true or false as metadata_.idempotent, and refuses anything else with a 400', () => {
    for (const metadata of [
      null,
      undefined,
      {},
      { idempotent: true },
      { idempotent: false },
      { idempotent: null },
    ])
      expect(() => checkIdempotentFlag(metadata)).not.toThrow();
    for (const idempotent of ['yes', 1, {}]) {
      let error: unknown;
      try {
        checkIdempotentFlag({ idempotent });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(DomainError);
      expect(error).toMatchObject({ kind: 'invalid', detail: 'metadata.idempotent must be true or false' });
    }
  });

  it("keeps an MCP server's tools_idempotent in its config: set at registration, changed by an update, kept when left out", () => {
    const { config } = McpServerCreateSchema.parse({
      server_name: 'counting',
      config: {
        mcp_server_type: 'streamable_http',
        server_url: 'http://127.0.0.1:9/mcp',
        tools_idempotent: true,
      },
    });
    expect(config).toMatchObject({ tools_idempotent: true });
    const update = (body: unknown) =>
      updatedConfig(config, McpServerUpdateSchema.parse({ config: body }).config);
    expect(update({})).toMatchObject({ tools_idempotent: true });
    expect(update({ tools_idempotent: false })).toMatchObject({ tools_idempotent: false });
    expect(() => McpServerUpdateSchema.parse({ config: { tools_idempotent: 'yes' } })).toThrow();
  });
});
