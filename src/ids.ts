import { randomUUID } from 'node:crypto';

/** Letta's ids: `<prefix>-<uuid4>` (letta/schemas/enums.py PrimitiveType). */
export type IdPrefix =
  | 'agent'
  | 'block'
  | 'tool'
  | 'message'
  | 'run'
  | 'step'
  | 'agent-env'
  | 'sandbox'
  | 'sandbox-env'
  | 'mcp_server'
  | 'conv'
  | 'archive'
  | 'passage'
  | 'identity'
  | 'scheduled_message'
  | 'source'
  | 'file'
  | 'file_agent';

export const newId = (prefix: IdPrefix) => `${prefix}-${randomUUID()}`;

/** The pattern of an id of this kind: its prefix, then a lower-case UUID. */
export const idPattern = (prefix: IdPrefix) =>
  new RegExp(`^${prefix}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`);

export function isId(prefix: IdPrefix, value: string): boolean {
  return idPattern(prefix).test(value);
}
