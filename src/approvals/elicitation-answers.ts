/**
 * Answers to an MCP server's elicitation (spec 2025-11-25, form mode): what a person's answer becomes.
 * Content is checked against the server's requested schema; fields it leaves out take the schema's
 * defaults (SEP-1034), so accepting with no content accepts every default. Titled and multi-select
 * enums (SEP-1330) are plain JSON Schema (`oneOf`/`anyOf` of `const`s, arrays of `enum` items) and are
 * checked as such.
 */
import { Ajv } from 'ajv';
import type { ElicitRequestFormParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';

/** What a client sends for an elicitation (an extension of Letta's approval answer). */
export interface ElicitationResponse {
  action?: 'accept' | 'decline' | 'cancel';
  content?: Record<string, unknown> | null;
}

const ajv = new Ajv({ strict: false, allErrors: true, useDefaults: true });

/** The server's schema, as the approval request shows it. */
export const requestedSchemaOf = (params: ElicitRequestFormParams) => params.requestedSchema;

/** Thrown for content that does not fit the requested schema: the message names the misfit. */
export class ElicitationContentError extends Error {
  override name = 'ElicitationContentError';
}

/** Accepted content with the schema's defaults filled in, or an ElicitationContentError naming what misfits. */
export function acceptedContent(
  params: ElicitRequestFormParams,
  content: Record<string, unknown> | null | undefined,
): Record<string, unknown> {
  const filled = structuredClone(content ?? {});
  const validate = ajv.compile(params.requestedSchema);
  if (!validate(filled))
    throw new ElicitationContentError(
      `the content does not fit the requested schema: ${ajv.errorsText(validate.errors, { dataVar: 'content' })}`,
    );
  return filled as Record<string, unknown>;
}

/**
 * The answer the server gets: approving accepts (with `response.content`, defaults filled in), denying
 * declines, and an explicit `cancel` action cancels either way.
 */
export function elicitResultOf(
  params: ElicitRequestFormParams,
  approve: boolean,
  response: ElicitationResponse | null | undefined,
): ElicitResult {
  const action = response?.action ?? (approve ? 'accept' : 'decline');
  if (action === 'accept' && !approve)
    throw new ElicitationContentError('a denied call cannot accept the elicitation: approve it to accept');
  if (action !== 'accept') return { action };
  return { action, content: acceptedContent(params, response?.content) as ElicitResult['content'] };
}
