/**
 * An MCP tool's result as the model reads it. The structured result (`structuredContent`) is the
 * result, as JSON, checked against the tool's output schema when it has one; the text content is its
 * backwards-compatible copy (MCP 2025-06-18 on). Images, audio and binary resources are described in a
 * line (type, MIME type, size), never pasted as base64: this server's messages carry tool returns as
 * text to every provider.
 */
import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import type { JsonSchemaType, JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';

export interface McpToolResult {
  status: 'success' | 'error';
  text: string;
}

/** How many compiled output schemas are kept: one per tool in use, dropped together past this. */
const MAX_CACHED_VALIDATORS = 500;

const ajv = new AjvJsonSchemaValidator();
const validators = new Map<string, JsonSchemaValidator<unknown> | undefined>();

/**
 * The schema compiled, without its `$schema`, as input schemas are stored (tool-sync.ts): the validator
 * knows one draft. A schema that does not compile even so gives none, and its results are taken
 * unchecked: the check is the client's SHOULD, and a schema it cannot read says nothing against them.
 */
function compiled(schema: Record<string, unknown>): JsonSchemaValidator<unknown> | undefined {
  const { $schema: _draft, ...given } = schema;
  try {
    return ajv.getValidator<unknown>(given as JsonSchemaType);
  } catch {
    return undefined;
  }
}

/** The compiled schema, by its text: a schema read again from the database is compiled once. */
function validatorOf(schema: Record<string, unknown>): JsonSchemaValidator<unknown> | undefined {
  const key = JSON.stringify(schema);
  if (validators.has(key)) return validators.get(key);
  if (validators.size >= MAX_CACHED_VALIDATORS) validators.clear();
  const validator = compiled(schema);
  validators.set(key, validator);
  return validator;
}

/** Decoded bytes of base64 text. */
const base64Bytes = (data: string) =>
  Math.floor((data.length * 3) / 4) - (data.match(/=*$/)?.[0].length ?? 0);

/** A content block as a line of text: text as it is, a text resource's text inline, the rest described. */
function blockText(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
    case 'audio':
      return `[${block.type} ${block.mimeType}, ${base64Bytes(block.data)} bytes, not shown]`;
    case 'resource': {
      const { resource } = block;
      if ('text' in resource) return resource.text;
      const type = resource.mimeType ?? 'unknown type';
      return `[resource ${resource.uri} ${type}, ${base64Bytes(resource.blob)} bytes, not shown]`;
    }
    case 'resource_link':
      return `[resource link ${block.uri}${block.mimeType ? ` ${block.mimeType}` : ''}]`;
    default:
      return JSON.stringify(block);
  }
}

/** The content blocks as text, one block a line. */
export const mcpContentText = (content: ContentBlock[]) => content.map(blockText).join('\n');

/**
 * The structured result as JSON, followed by the content that its text copy does not hold (images,
 * audio, resources); without one, the content.
 */
function successText(result: CallToolResult): string {
  if (!result.structuredContent) return mcpContentText(result.content);
  const others = result.content.filter((block) => block.type !== 'text');
  return [JSON.stringify(result.structuredContent), ...others.map(blockText)].join('\n');
}

/** An error result's text: its content, or its structured content as JSON when it has no content. */
const errorText = (result: CallToolResult) =>
  result.content.length || !result.structuredContent
    ? mcpContentText(result.content)
    : JSON.stringify(result.structuredContent);

/** Why a result does not fit the tool's output schema, if it does not. */
function outputMismatch(result: CallToolResult, outputSchema: Record<string, unknown>): string | undefined {
  if (!result.structuredContent) return 'the tool has an output schema but returned no structured content';
  const checked = validatorOf(outputSchema)?.(result.structuredContent);
  if (checked && !checked.valid)
    return `the structured content does not match the tool's output schema: ${checked.errorMessage}`;
}

/**
 * The result as the model reads it. An `isError` result is its content (the server's message); a
 * successful one of a tool with an output schema must carry structured content that fits it, as MCP
 * clients SHOULD check, or it is an error naming what does not fit.
 */
export function mcpToolResult(
  toolName: string,
  result: CallToolResult,
  outputSchema?: Record<string, unknown>,
): McpToolResult {
  if (result.isError) return { status: 'error', text: errorText(result) };
  const mismatch = outputSchema && outputMismatch(result, outputSchema);
  if (mismatch)
    return { status: 'error', text: `Error executing function ${toolName}: ValidationError: ${mismatch}` };
  return { status: 'success', text: successText(result) };
}
