/**
 * Custom tools as Letta's tool manager makes them: the schema from `json_schema` as given, or built
 * from `args_json_schema`, or derived from the Python source; checked (name, health) before storing.
 * Create and upsert are the same: a tool of the schema's name is updated, as a new version.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Database, Queryable } from '../db';
import { getToolByName, insertTool, updateTool, type ToolFields } from '../db/tools';
import type { ToolRow } from '../db/rows';
import { conflict, invalid } from '../errors';
import { checkToolTimeout } from './tool-timeout';
import { checkIdempotentFlag } from './retry-policy';
import type { ToolCreate, ToolUpdate } from '../schemas/tools';
import { newId } from '../ids';
import {
  pythonSignature,
  schemaFromPython,
  ToolSchemaError,
  type PythonSchemaOptions,
} from './python-schema';
import { schemaHealth, type SchemaHealth } from '../schemas/schema-health';
import { inlineRefs } from '../schemas/json-refs';
import { transpileTool, TypeScriptSourceError } from '../sandbox/typescript';
import { MCP_TOOL_TYPE } from '../mcp/tool-sync';

/** MAX_TOOL_NAME_LENGTH */
const MAX_NAME_LENGTH = 48;

type JsonSchema = { name?: unknown; description?: unknown; parameters?: unknown } & Record<string, unknown>;

type Node = Record<string, unknown>;

const isNode = (value: unknown): value is Node =>
  Boolean(value) && typeof value === 'object' && !Array.isArray(value);

/**
 * A property of an args_json_schema as Letta's generate_schema_from_args_schema_v2 gives it, after its
 * round trip through a Pydantic model (generate_model_from_args_json_schema): nested models inline,
 * an optional one as its type, each field with its description ("" when it has none), titles and
 * defaults dropped. What that round trip refuses is a 400.
 */
function argsField(field: Node): Node {
  if (Array.isArray(field.anyOf)) {
    const options = (field.anyOf as unknown[]).filter(isNode);
    const types = options.filter((option) => option.type !== 'null');
    if (types.length === 1 && types.length < options.length) return argsField(types[0]);
    throw new ToolSchemaError('General Union types are not yet supported');
  }
  switch (field.type) {
    case 'string':
    case 'integer':
    case 'number':
    case 'boolean':
      return { type: field.type, ...(Array.isArray(field.enum) ? { enum: field.enum } : {}) };
    case 'array':
      return { type: 'array', items: isNode(field.items) ? argsField(field.items) : { type: 'string' } };
    case 'object':
      if (isNode(field.properties)) return argsModel(field);
      if (field.additionalProperties === false)
        throw new ToolSchemaError('additionalProperties=false is not supported.');
      if (isNode(field.additionalProperties))
        throw new ToolSchemaError(
          'Dictionary types with nested type arguments are not supported (consider using a Pydantic model instead)',
        );
      return { type: 'object' };
  }
  throw new ToolSchemaError(`Unable to convert pydantic field schema to type: ${JSON.stringify(field)}`);
}

const argsProperties = (properties: unknown) =>
  Object.fromEntries(
    Object.entries(isNode(properties) ? properties : {}).map(([key, field]) => {
      const node = isNode(field) ? field : {};
      return [key, { ...argsField(node), description: node.description ?? '' }];
    }),
  );

const argsModel = (model: Node) => ({
  type: 'object',
  properties: argsProperties(model.properties),
  required: Array.isArray(model.required) ? model.required : [],
});

/** Letta's generate_schema_from_args_schema_v2, from a JSON schema of the arguments. */
async function schemaFromArgs(source: string, args: Record<string, unknown>, options: PythonSchemaOptions) {
  const { name, docstring } = await pythonSignature(source, options);
  return { name, description: docstring ?? `The ${name} tool`, parameters: argsModel(inlineRefs(args)) };
}

async function deriveSchema(body: ToolCreate, options: PythonSchemaOptions): Promise<JsonSchema> {
  try {
    if (body.json_schema) return body.json_schema;
    if (body.args_json_schema) return await schemaFromArgs(body.source_code, body.args_json_schema, options);
    return (await schemaFromPython(body.source_code, options)) as unknown as JsonSchema;
  } catch (error) {
    if (error instanceof ToolSchemaError) throw invalid(error.message);
    throw error;
  }
}

/** The schema's name and health; a schema that cannot make a tool is a 400 with the reasons. */
export function checkSchema(schema: JsonSchema): { name: string; health: SchemaHealth } {
  if (typeof schema.name !== 'string' || !schema.name) throw invalid('The tool schema has no name');
  if (schema.name.length > MAX_NAME_LENGTH) {
    throw invalid(`Tool name '${schema.name}' exceeds the maximum length of ${MAX_NAME_LENGTH} characters`);
  }
  const health = schemaHealth(schema.parameters);
  if (health.status === 'INVALID') {
    throw invalid(`Invalid tool schema for '${schema.name}': ${health.reasons.join('; ')}`);
  }
  return { name: schema.name, health };
}

/** A TypeScript tool's schema is given, not derived: its source must still compile and define the function. */
function checkTypeScript(body: ToolCreate, name: string): void {
  if (body.source_type !== 'typescript') return;
  try {
    transpileTool(body.source_code, name);
  } catch (error) {
    if (error instanceof TypeScriptSourceError) throw invalid(error.message);
    throw error;
  }
}

/**
 * New Python source must define the function its schema names, as Letta's update checks (`def name`):
 * a json_schema whose name is not the source's function is a 400.
 */
function checkPythonDefines(body: ToolCreate, name: string): void {
  if (body.source_type !== 'python') return;
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  if (!new RegExp(`\\bdef\\s+${escaped}\\s*\\(`).test(body.source_code))
    throw invalid(
      `Tool name '${name}' does not match the source code: it defines no function '${name}' (send a json_schema of its function's name, or the source of '${name}')`,
    );
}

/** New source must at least parse: a 400 naming the error, before anything is stored. */
async function checkSource(body: ToolCreate, options: PythonSchemaOptions) {
  if (body.source_type !== 'python') return;
  try {
    await pythonSignature(body.source_code, options);
  } catch (error) {
    if (error instanceof ToolSchemaError) throw invalid(error.message);
    throw error;
  }
}

function fieldsOf(body: ToolCreate, schema: JsonSchema, name: string): ToolFields {
  return {
    name,
    tool_type: 'custom',
    description: body.description ?? (typeof schema.description === 'string' ? schema.description : null),
    source_type: body.source_type,
    source_code: body.source_code,
    json_schema: schema,
    args_json_schema: body.args_json_schema ?? null,
    tags: body.tags ?? [],
    return_char_limit: body.return_char_limit,
    pip_requirements: body.pip_requirements ?? null,
    npm_requirements: body.npm_requirements ?? null,
    default_requires_approval: body.default_requires_approval ?? null,
    enable_parallel_execution: body.enable_parallel_execution,
    metadata: body.metadata_ ?? null,
  };
}

/** Whether storing `fields` would leave the tool as it is. */
const sameTool = (tool: ToolRow, fields: ToolFields) =>
  tool.source_code === fields.source_code &&
  tool.source_type === fields.source_type &&
  isDeepStrictEqual(tool.json_schema, fields.json_schema);

/** Our settings in a tool's `metadata_`: its timeout and its retry policy. */
function checkMetadata(metadata: Record<string, unknown> | null | undefined): void {
  checkToolTimeout(metadata);
  checkIdempotentFlag(metadata);
}

/** A tool checked and ready to store: its name and fields. */
export interface PreparedTool {
  name: string;
  fields: ToolFields;
}

/** Derives and checks a tool's schema (which may read its Python source), before any transaction. */
export async function prepareTool(body: ToolCreate, options: PythonSchemaOptions): Promise<PreparedTool> {
  const schema = await deriveSchema(body, options);
  const { name } = checkSchema(schema);
  checkTypeScript(body, name);
  checkMetadata(body.metadata_);
  return { name, fields: fieldsOf(body, schema, name) };
}

/**
 * Stores a prepared tool in `tx`. A tool of its name that is the server's (built-in, MCP) is a 409; a
 * custom one is a 409 unless it is this very tool (`create`), is updated as a new version (`replace`),
 * or is kept as it is (`keep`).
 */
export async function storeTool(
  tx: Queryable,
  { name, fields }: PreparedTool,
  onExisting: 'create' | 'replace' | 'keep',
): Promise<ToolRow> {
  const existing = await getToolByName(tx, name);
  if (existing && existing.tool_type !== 'custom') {
    throw conflict(`Tool '${name}' is a ${existing.tool_type} tool of the server and cannot be replaced`);
  }
  if (!existing) return insertTool(tx, newId('tool'), fields);
  if (onExisting === 'replace') return updateTool(tx, existing.id, fields);
  if (onExisting === 'keep' || sameTool(existing, fields)) return existing;
  throw conflict(`A tool named '${name}' already exists: update it, or upsert it (PUT /v1/tools)`);
}

/**
 * Creates the tool (Letta's create_tool): one of the same name is a 409, unless it is this very tool,
 * which is answered as it is. `replace` updates it instead (Letta's upsert, create_or_update_tool).
 */
export async function createTool(
  db: Database,
  body: ToolCreate,
  options: PythonSchemaOptions,
  { replace }: { replace: boolean },
): Promise<ToolRow> {
  const prepared = await prepareTool(body, options);
  return db.transaction((tx) => storeTool(tx, prepared, replace ? 'replace' : 'create'));
}

/**
 * Applies a PATCH: the given fields replace the tool's. A new schema (json_schema or args_json_schema)
 * is checked again; changing the source alone keeps the schema, as in Letta.
 */
export async function modifyTool(
  db: Database,
  tool: ToolRow,
  patch: ToolUpdate,
  options: PythonSchemaOptions,
): Promise<ToolRow> {
  if (tool.tool_type === MCP_TOOL_TYPE) return modifyMcpTool(db, tool, patch);
  if (tool.tool_type !== 'custom')
    throw conflict(`Tool '${tool.name}' is a ${tool.tool_type} tool of the server`);
  const body: ToolCreate = {
    source_code: patch.source_code ?? tool.source_code ?? '',
    source_type: patch.source_type ?? (tool.source_type as ToolCreate['source_type']) ?? 'python',
    description: patch.description !== undefined ? patch.description : tool.description,
    tags: patch.tags ?? tool.tags,
    json_schema: patch.json_schema ?? undefined,
    args_json_schema: patch.args_json_schema ?? tool.args_json_schema,
    return_char_limit: patch.return_char_limit ?? tool.return_char_limit,
    pip_requirements: (patch.pip_requirements ?? tool.pip_requirements) as ToolCreate['pip_requirements'],
    npm_requirements: (patch.npm_requirements ?? tool.npm_requirements) as ToolCreate['npm_requirements'],
    default_requires_approval:
      patch.default_requires_approval !== undefined
        ? patch.default_requires_approval
        : tool.default_requires_approval,
    enable_parallel_execution: patch.enable_parallel_execution ?? tool.enable_parallel_execution,
    metadata_: patch.metadata_ ?? tool.metadata,
  };
  if (patch.source_code !== undefined) await checkSource(body, options);
  const schema =
    patch.json_schema || patch.args_json_schema
      ? await deriveSchema(body, options)
      : (tool.json_schema as JsonSchema);
  const { name } = checkSchema(schema);
  checkTypeScript(body, name);
  if (patch.source_code !== undefined) checkPythonDefines(body, name);
  checkMetadata(body.metadata_);
  if (name !== tool.name && (await getToolByName(db, name))) {
    throw conflict(`A tool named '${name}' already exists`);
  }
  return updateTool(db, tool.id, fieldsOf(body, schema, name));
}

/** What of an MCP tool is ours to set; the rest comes from its server with every sync. */
const MCP_TOOL_SETTINGS = [
  'return_char_limit',
  'default_requires_approval',
  'enable_parallel_execution',
  'metadata_',
] as const;

function modifyMcpTool(db: Database, tool: ToolRow, patch: ToolUpdate): Promise<ToolRow> {
  const fixed = Object.keys(patch).filter(
    (key) =>
      !(MCP_TOOL_SETTINGS as readonly string[]).includes(key) && patch[key as keyof ToolUpdate] != null,
  );
  if (fixed.length) {
    throw invalid(
      `Tool '${tool.name}' comes from an MCP server, which sets its ${fixed.join(', ')}; only ${MCP_TOOL_SETTINGS.join(', ')} can change`,
    );
  }
  checkMetadata(patch.metadata_);
  return updateTool(db, tool.id, {
    ...tool,
    return_char_limit: patch.return_char_limit ?? tool.return_char_limit,
    default_requires_approval:
      patch.default_requires_approval !== undefined
        ? patch.default_requires_approval
        : tool.default_requires_approval,
    enable_parallel_execution: patch.enable_parallel_execution ?? tool.enable_parallel_execution,
    // The server link stays whatever metadata is given.
    metadata: patch.metadata_ ? { ...patch.metadata_, mcp: tool.metadata?.mcp } : tool.metadata,
  });
}
