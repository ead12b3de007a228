import { z } from 'zod';
import { idOf } from './common';

export const McpServerParams = z.object({ mcpServerId: idOf('mcp_server') });
export const McpToolParams = McpServerParams.extend({ toolId: idOf('tool') });
export const RefreshQuery = z.object({ agent_id: idOf('agent').optional() });
export const McpToolRunSchema = z.object({ args: z.record(z.string(), z.unknown()).default({}) });
