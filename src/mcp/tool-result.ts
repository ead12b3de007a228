/**
 * An MCP tool's result as the model reads it. The structured result (`structuredContent`) is the
 * result, as JSON, checked against the tool's output schema when it has one; the text content is its
 * backwards-compatible copy (MCP 2025-06-18 on). Images, and binary resources that are images, become
 * Letta's image return parts (src/returns/return-parts.ts); audio, other binary resources and images no
 * model takes are described in a line (type, MIME type, size), never pasted as base64: Letta's return
 * parts have no other kind.
 */
import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import type { JsonSchemaType, JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { imagePart, notShown, returnOfParts, type ReturnPart } from '../returns/return-parts';

export interface McpToolResult {
  status: 'success' | 'error';
  text: string;
  /** The result as Letta's return parts, when it holds an image. */
  parts?: ReturnPart[];
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

/** A content block as a line of text: text as it is, a text resource's text inline, the rest described. */
function blockText(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
    case 'audio':
      return notShown(block.type, block.mimeType, block.data);
    case 'resource': {
      const { resource } = block;
      if ('text' in resource) return resource.text;
      return notShown(`resource ${resource.uri}`, resource.mimeType ?? 'unknown type', resource.blob);
    }
    case 'resource_link':
      return `[resource link ${block.uri}${block.mimeType ? ` ${block.mimeType}` : ''}]`;
    default:
      return JSON.stringify(block);
  }
}

/**
 * A content block as a return part: an image (or a binary resource that is one) as an image part, of
 * any size (the activity holds it to TOOL_RETURN_IMAGE_MAX_BYTES with `limitImages`).
 */
function blockPart(block: ContentBlock): ReturnPart {
  if (block.type === 'image') return imagePart(block.mimeType, block.data);
  if (block.type === 'resource' && 'blob' in block.resource && block.resource.mimeType?.startsWith('image/'))
    return imagePart(block.resource.mimeType, block.resource.blob);
  return { type: 'text', text: blockText(block) };
}

/** The content blocks as text, one block a line. */
export const mcpContentText = (content: ContentBlock[]) => content.map(blockText).join('\n');

/**
 * A successful result: the structured result as JSON, followed by the content that its text copy does
 * not hold (images, audio, resources); without one, the content.
 */
function successReturn(result: CallToolResult) {
  const blocks = result.structuredContent
    ? result.content.filter((block) => block.type !== 'text')
    : result.content;
  const parts = blocks.map(blockPart);
  if (result.structuredContent)
    parts.unshift({ type: 'text', text: JSON.stringify(result.structuredContent) });
  return returnOfParts(parts);
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
  return { status: 'success', ...successReturn(result) };
}
