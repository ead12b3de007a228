import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import type { z } from 'zod';
import {
  CreateAgentSchema,
  CreateBlockSchema,
  UpdateAgentSchema,
  UpdateBlockSchema,
} from '../src/schemas/agents';
import {
  CancelSchema,
  ConversationMessageSchema,
  LettaRequestSchema,
  RetrieveStreamSchema,
  SearchMessagesSchema,
} from '../src/api/schemas/messages';
import {
  AgentOfDefaultQuery,
  CreateConversationSchema,
  UpdateConversationSchema,
} from '../src/api/schemas/conversations';
import {
  AgentToolRunSchema,
  ToolCreateSchema,
  ToolRunFromSourceSchema,
  ToolUpdateSchema,
  SearchToolsSchema,
} from '../src/schemas/tools';
import {
  EnvVarCreateSchema,
  EnvVarUpdateSchema,
  SandboxConfigCreateSchema,
} from '../src/api/schemas/sandbox-configs';
import { McpOauthAuthorizeSchema, McpToolRunSchema } from '../src/api/schemas/mcp-servers';
import { IdentityCreateSchema } from '../src/api/schemas/identities';
import {
  CreateAgentPassageSchema,
  CreateArchivePassageSchema,
  CreateArchivePassagesSchema,
  CreateArchiveSchema,
  SearchPassagesSchema,
  UpdateArchiveSchema,
} from '../src/api/schemas/archives';
import { CreateFolderSchema, UpdateFolderSchema } from '../src/api/schemas/folders';
import { ScheduleCreateSchema } from '../src/api/schemas/schedules';
import { McpServerCreateSchema, McpServerUpdateSchema } from '../src/schemas/mcp-server';
import { AgentFileSchema } from '../src/schemas/agent-file';
import { ExportAgentBody, ImportAgentForm } from '../src/api/schemas/agent-files';
import { bodyFor, deeplyNested, hostileNumber, hostileString } from './helpers/fuzz';
import { startOpenAiStub, type OpenAiStub } from './helpers/openai-stub';
import { startTestServer, type TestServer } from './helpers/server';

/** A route to fuzz: `{name}` in the path is filled with a stored id, an unknown one, or a hostile string. */
interface FuzzRoute {
  method: string;
  path: string;
  body?: z.ZodType;
  /** Fields that make a body get past the route's first checks; a generated body has them half the time. */
  base?: Record<string, unknown>;
  query?: string[];
  /** The body goes as the `file` of a multipart form, with these form fields (hostile values). */
  form?: string[];
}

const PYTHON_TOOL =
  'def echo(text: str) -> str:\n    """Echo.\n\n    Args:\n        text: what to echo\n    """\n    return text\n';
const MODEL = { model: 'openai/gpt-4o-mini' };
const MESSAGE = { messages: [{ role: 'user', content: 'hi' }] };
const MCP_SERVER = {
  server_name: 'fuzz',
  config: { mcp_server_type: 'streamable_http', server_url: 'http://127.0.0.1:9/mcp' },
};

const PAGE = ['limit', 'after', 'before', 'order'];
/** A Letta agent file whose agent would import: generated files over it get to the database. */
const AGENT_FILE = fs.readFileSync(
  path.join(__dirname, 'fixtures', 'agent-files', 'basic-agent-v2.af'),
  'utf8',
);
const FILE_BASE = {
  agents: [{ id: 'agent-0', model: 'openai/gpt-4o-mini', messages: [], in_context_message_ids: [] }],
};
const IdentityBody = IdentityCreateSchema;
const TEXT = { text: 'remember this' };

const ROUTES: FuzzRoute[] = [
  { method: 'POST', path: '/v1/agents/', body: CreateAgentSchema, base: MODEL },
  { method: 'GET', path: '/v1/agents/', query: [...PAGE, 'name', 'tags', 'match_all_tags', 'include'] },
  { method: 'GET', path: '/v1/agents/{agent}', query: ['include'] },
  { method: 'PATCH', path: '/v1/agents/{agent}', body: UpdateAgentSchema },
  { method: 'PATCH', path: '/v1/agents/{agent}/tools/approval/{toolName}', query: ['requires_approval'] },
  { method: 'PATCH', path: '/v1/agents/{agent}/tools/attach/{tool}' },
  { method: 'PATCH', path: '/v1/agents/{agent}/tools/detach/{tool}' },
  { method: 'GET', path: '/v1/agents/{agent}/core-memory/blocks' },
  { method: 'GET', path: '/v1/agents/{agent}/core-memory/blocks/{label}' },
  { method: 'PATCH', path: '/v1/agents/{agent}/core-memory/blocks/{label}', body: UpdateBlockSchema },
  { method: 'POST', path: '/v1/agents/{agent}/messages', body: LettaRequestSchema, base: MESSAGE },
  { method: 'POST', path: '/v1/agents/{agent}/messages/async', body: LettaRequestSchema, base: MESSAGE },
  {
    method: 'GET',
    path: '/v1/agents/{agent}/messages',
    query: [...PAGE, 'group_id', 'use_assistant_message'],
  },
  { method: 'POST', path: '/v1/agents/{agent}/messages/cancel', body: CancelSchema },
  { method: 'POST', path: '/v1/agents/{agent}/tools/{toolName}/run', body: AgentToolRunSchema },
  { method: 'GET', path: '/v1/runs/', query: [...PAGE, 'agent_id', 'agent_ids', 'statuses', 'active'] },
  { method: 'GET', path: '/v1/runs/{run}' },
  { method: 'GET', path: '/v1/runs/{run}/usage' },
  { method: 'GET', path: '/v1/runs/{run}/messages', query: PAGE },
  { method: 'POST', path: '/v1/runs/{run}/stream', body: RetrieveStreamSchema },
  { method: 'GET', path: '/v1/messages/{message}' },
  {
    method: 'GET',
    path: '/v1/messages/',
    query: [...PAGE, 'conversation_id', 'include_return_message_types'],
  },
  { method: 'POST', path: '/v1/messages/search', body: SearchMessagesSchema, base: { query: 'hi' } },
  { method: 'GET', path: '/v1/tags/', query: [...PAGE, 'name', 'query_text'] },
  {
    method: 'POST',
    path: '/v1/agents/{agent}/schedule',
    body: ScheduleCreateSchema,
    base: { ...MESSAGE, schedule: { type: 'recurring', cron_expression: '0 9 * * *' } },
  },
  { method: 'GET', path: '/v1/agents/{agent}/schedule', query: ['after', 'limit'] },
  { method: 'GET', path: '/v1/agents/{agent}/schedule/{schedule}' },
  {
    method: 'POST',
    path: '/v1/identities/',
    body: IdentityBody,
    base: { identifier_key: 'k', name: 'n', identity_type: 'user' },
  },
  { method: 'PUT', path: '/v1/identities/', body: IdentityBody },
  { method: 'GET', path: '/v1/identities/', query: [...PAGE, 'name', 'identifier_key', 'identity_type'] },
  { method: 'GET', path: '/v1/identities/{identity}' },
  { method: 'PATCH', path: '/v1/identities/{identity}', body: IdentityBody },
  { method: 'GET', path: '/v1/identities/{identity}/agents', query: PAGE },
  { method: 'PATCH', path: '/v1/agents/{agent}/identities/attach/{identity}' },
  { method: 'GET', path: '/v1/agents/{agent}/tools', query: PAGE },
  {
    method: 'GET',
    path: '/v1/agents/{agent}/export',
    query: ['scrub_messages', 'conversation_id', 'use_legacy_format', 'max_steps'],
  },
  { method: 'POST', path: '/v1/agents/{agent}/export', body: ExportAgentBody },
  {
    method: 'POST',
    path: '/v1/agents/import',
    body: AgentFileSchema,
    base: FILE_BASE,
    form: Object.keys(ImportAgentForm.shape),
  },
  { method: 'POST', path: '/v1/agents/{agent}/recompile', query: ['dry_run'] },
  { method: 'POST', path: '/v1/agents/{agent}/summarize' },
  { method: 'POST', path: '/v1/tools/search', body: SearchToolsSchema },
  {
    method: 'GET',
    path: '/v1/steps/',
    query: [...PAGE, 'agent_id', 'model', 'feedback', 'start_date', 'end_date', 'tags'],
  },
  { method: 'GET', path: '/v1/steps/{run}' },
  { method: 'GET', path: '/v1/runs/{run}/steps', query: PAGE },
  { method: 'GET', path: '/v1/runs/{run}/trace', query: ['limit'] },
  { method: 'GET', path: '/v1/steps/{run}/trace' },
  { method: 'GET', path: '/v1/steps/{run}/metrics' },
  { method: 'GET', path: '/v1/models/' },
  { method: 'GET', path: '/v1/models/embedding' },
  { method: 'POST', path: '/v1/tools/add-base-tools' },
  { method: 'POST', path: '/v1/conversations/', body: CreateConversationSchema, query: ['agent_id'] },
  { method: 'GET', path: '/v1/conversations/', query: [...PAGE, 'agent_id', 'summary_search'] },
  { method: 'GET', path: '/v1/conversations/{conversation}' },
  { method: 'PATCH', path: '/v1/conversations/{conversation}', body: UpdateConversationSchema },
  { method: 'GET', path: '/v1/conversations/{conversation}/messages', query: [...PAGE, 'agent_id'] },
  {
    method: 'POST',
    path: '/v1/conversations/{conversation}/messages',
    body: ConversationMessageSchema,
    base: { ...MESSAGE, streaming: false },
  },
  {
    method: 'POST',
    path: '/v1/conversations/{conversation}/cancel',
    body: CancelSchema,
    query: ['agent_id'],
  },
  { method: 'POST', path: '/v1/conversations/{conversation}/recompile', query: ['agent_id', 'dry_run'] },
  { method: 'POST', path: '/v1/conversations/{conversation}/compact', body: AgentOfDefaultQuery },
  { method: 'POST', path: '/v1/conversations/{conversation}/stream', body: RetrieveStreamSchema },
  {
    method: 'POST',
    path: '/v1/conversations/{conversation}/fork',
    query: ['agent_id', 'hidden', 'message_id'],
  },
  { method: 'POST', path: '/v1/tools/', body: ToolCreateSchema, base: { source_code: PYTHON_TOOL } },
  { method: 'PUT', path: '/v1/tools/', body: ToolCreateSchema, base: { source_code: PYTHON_TOOL } },
  { method: 'GET', path: '/v1/tools/', query: [...PAGE, 'name', 'names', 'tool_types', 'search'] },
  { method: 'GET', path: '/v1/tools/{tool}' },
  { method: 'PATCH', path: '/v1/tools/{tool}', body: ToolUpdateSchema },
  {
    method: 'POST',
    path: '/v1/tools/run',
    body: ToolRunFromSourceSchema,
    base: { source_code: PYTHON_TOOL },
  },
  { method: 'POST', path: '/v1/sandbox-config/', body: SandboxConfigCreateSchema, base: { config: {} } },
  { method: 'POST', path: '/v1/sandbox-config/local', body: SandboxConfigCreateSchema.shape.config },
  { method: 'PATCH', path: '/v1/sandbox-config/{sandbox}', body: SandboxConfigCreateSchema },
  { method: 'GET', path: '/v1/sandbox-config/', query: [...PAGE, 'sandbox_type'] },
  {
    method: 'POST',
    path: '/v1/sandbox-config/{sandbox}/environment-variable',
    body: EnvVarCreateSchema,
    base: { key: 'K', value: 'v' },
  },
  { method: 'GET', path: '/v1/sandbox-config/{sandbox}/environment-variable', query: PAGE },
  { method: 'PATCH', path: '/v1/sandbox-config/environment-variable/{envVar}', body: EnvVarUpdateSchema },
  { method: 'POST', path: '/v1/mcp-servers/', body: McpServerCreateSchema, base: MCP_SERVER },
  { method: 'GET', path: '/v1/mcp-servers/{mcp}' },
  { method: 'PATCH', path: '/v1/mcp-servers/{mcp}', body: McpServerUpdateSchema },
  { method: 'PATCH', path: '/v1/mcp-servers/{mcp}/refresh', query: ['agent_id'] },
  { method: 'GET', path: '/v1/mcp-servers/{mcp}/tools' },
  { method: 'POST', path: '/v1/mcp-servers/{mcp}/tools/{tool}/run', body: McpToolRunSchema },
  { method: 'POST', path: '/v1/mcp-servers/{mcp}/oauth/authorize', body: McpOauthAuthorizeSchema },
  { method: 'POST', path: '/v1/agents/{agent}/archival-memory', body: CreateAgentPassageSchema, base: TEXT },
  {
    method: 'GET',
    path: '/v1/agents/{agent}/archival-memory',
    query: ['after', 'before', 'limit', 'search', 'ascending'],
  },
  {
    method: 'GET',
    path: '/v1/agents/{agent}/archival-memory/search',
    query: ['query', 'tags', 'tag_match_mode', 'top_k', 'start_datetime', 'end_datetime'],
  },
  { method: 'PATCH', path: '/v1/agents/{agent}/archives/attach/{archive}' },
  { method: 'PATCH', path: '/v1/agents/{agent}/archives/detach/{archive}' },
  { method: 'PATCH', path: '/v1/agents/{agent}/folders/attach/{folder}' },
  { method: 'PATCH', path: '/v1/agents/{agent}/sources/attach/{folder}' },
  { method: 'GET', path: '/v1/agents/{agent}/folders', query: PAGE },
  { method: 'GET', path: '/v1/agents/{agent}/sources', query: PAGE },
  { method: 'GET', path: '/v1/agents/{agent}/files', query: [...PAGE, 'is_open', 'cursor', 'order_by'] },
  { method: 'PATCH', path: '/v1/agents/{agent}/files/{file}/open' },
  { method: 'PATCH', path: '/v1/agents/{agent}/files/{file}/close' },
  { method: 'PATCH', path: '/v1/agents/{agent}/files/close-all' },
  { method: 'PATCH', path: '/v1/agents/{agent}/folders/detach/{folder}' },
  { method: 'PATCH', path: '/v1/agents/{agent}/sources/detach/{folder}' },
  {
    method: 'POST',
    path: '/v1/folders/',
    body: CreateFolderSchema,
    base: { name: 'f', embedding: 'openai/e' },
  },
  { method: 'GET', path: '/v1/folders/', query: [...PAGE, 'name', 'order_by'] },
  { method: 'GET', path: '/v1/folders/count' },
  { method: 'GET', path: '/v1/folders/{folder}' },
  { method: 'PATCH', path: '/v1/folders/{folder}', body: UpdateFolderSchema },
  { method: 'PATCH', path: '/v1/sources/{folder}', body: UpdateFolderSchema },
  {
    method: 'POST',
    path: '/v1/folders/{folder}/upload',
    query: ['duplicate_handling', 'name'],
    body: CreateFolderSchema,
    form: ['description'],
  },
  { method: 'GET', path: '/v1/folders/{folder}/agents', query: [...PAGE, 'order_by'] },
  { method: 'GET', path: '/v1/folders/{folder}/passages', query: [...PAGE, 'order_by'] },
  { method: 'GET', path: '/v1/folders/{folder}/files', query: [...PAGE, 'order_by', 'include_content'] },
  { method: 'GET', path: '/v1/sources/{folder}/files/{file}', query: ['include_content'] },
  { method: 'GET', path: '/v1/folders/{folder}/files/{file}', query: ['include_content'] },
  { method: 'POST', path: '/v1/archives/', body: CreateArchiveSchema, base: { name: 'a' } },
  { method: 'GET', path: '/v1/archives/', query: [...PAGE, 'name', 'agent_id'] },
  { method: 'GET', path: '/v1/archives/{archive}' },
  { method: 'PATCH', path: '/v1/archives/{archive}', body: UpdateArchiveSchema },
  { method: 'POST', path: '/v1/archives/{archive}/passages', body: CreateArchivePassageSchema, base: TEXT },
  { method: 'POST', path: '/v1/archives/{archive}/passages/batch', body: CreateArchivePassagesSchema },
  { method: 'POST', path: '/v1/passages/search', body: SearchPassagesSchema },
  { method: 'POST', path: '/v1/blocks/', body: CreateBlockSchema, base: { label: 'fuzz', value: 'v' } },
  {
    method: 'GET',
    path: '/v1/blocks/',
    query: [...PAGE, 'label', 'label_search', 'description_search', 'tags', 'match_all_tags'],
  },
  { method: 'GET', path: '/v1/blocks/{block}' },
  { method: 'PATCH', path: '/v1/blocks/{block}', body: UpdateBlockSchema },
  { method: 'GET', path: '/v1/blocks/{block}/agents', query: PAGE },
  { method: 'PATCH', path: '/v1/agents/{agent}/core-memory/blocks/attach/{block}' },
  { method: 'PATCH', path: '/v1/agents/{agent}/core-memory/blocks/detach/{block}' },
  { method: 'GET', path: '/v1/agents/{agent}/core-memory/blocks', query: PAGE },
  { method: 'DELETE', path: '/v1/agents/{agent}/archival-memory/{passage}' },
  { method: 'DELETE', path: '/v1/archives/{archive}/passages/{passage}' },
  { method: 'DELETE', path: '/v1/folders/{folder}/{file}' },
  { method: 'DELETE', path: '/v1/archives/{archive}' },
  { method: 'DELETE', path: '/v1/blocks/{block}' },
  { method: 'PATCH', path: '/v1/agents/{agent}/reset-messages' },
  { method: 'DELETE', path: '/v1/identities/{identity}' },
  { method: 'DELETE', path: '/v1/agents/{agent}/schedule/{schedule}' },
  { method: 'DELETE', path: '/v1/agents/{agent}' },
  { method: 'DELETE', path: '/v1/tools/{tool}' },
  { method: 'DELETE', path: '/v1/sandbox-config/environment-variable/{envVar}' },
  { method: 'DELETE', path: '/v1/mcp-servers/{mcp}' },
  { method: 'DELETE', path: '/v1/conversations/{conversation}' },
];

/** Bodies nobody's schema describes: the parser and the edge checks must answer them too. */
const RAW_BODIES = [
  deeplyNested(100_000),
  `{"name":${deeplyNested(5_000)}}`,
  '{"model":"openai/gpt-4o-mini","memory_blocks":[{"label":"a","value":"x","limit":1e999}]}',
  '{"model":"openai/gpt-4o-mini","context_window_limit":123456789012345678901234567890}',
  '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}}',
  '{"model":"openai/gpt-4o-mini","name":"a","name":"b"}',
  '{"model":"openai/gpt-4o-mini","name":"\\u0000"}',
  '{"model":"openai/gpt-4o-mini","name":"\\ud800"}',
  '{"model":"openai/gpt-4o-mini","metadata":{"k\\u0000":"v"}}',
  '{"messages":[{"role":"user","content":"\\udc00\\u0000"}]}',
  '"just a string"',
  'null',
  '[]',
  '\xff\xfe\x00',
];

/** Places in the fixture where a hostile value goes, so that an import gets far with it. */
const FILE_LEAVES = [
  ['agents', 0, 'name'],
  ['agents', 0, 'system'],
  ['agents', 0, 'timezone'],
  ['agents', 0, 'agent_type'],
  ['agents', 0, 'tags', 0],
  ['agents', 0, 'llm_config', 'context_window'],
  ['agents', 0, 'llm_config', 'handle'],
  ['agents', 0, 'tool_rules', 0, 'tool_name'],
  ['agents', 0, 'in_context_message_ids', 1],
  ['agents', 0, 'messages', 1, 'tool_calls', 0, 'id'],
  ['agents', 0, 'messages', 1, 'tool_calls', 0, 'function', 'arguments'],
  ['agents', 0, 'messages', 2, 'tool_call_id'],
  ['agents', 0, 'messages', 4, 'content', 0, 'text'],
  ['agents', 0, 'messages', 4, 'created_at'],
  ['agents', 0, 'messages', 6, 'tool_returns', 0, 'func_response'],
  ['agents', 0, 'messages', 3, 'role'],
  ['blocks', 0, 'label'],
  ['blocks', 0, 'value'],
  ['blocks', 0, 'limit'],
  ['tools', 0, 'name'],
  ['tools', 0, 'source_code'],
  ['tools', 0, 'json_schema', 'name'],
  ['tools', 0, 'return_char_limit'],
  ['tools', 0, 'pip_requirements'],
] as const;

/** The fixture with one hostile value in it. */
const mutatedFile = fc
  .tuple(fc.constantFrom(...FILE_LEAVES), fc.oneof(hostileString, hostileNumber, fc.constant(null)))
  .map(([leaf, value]) => {
    const file = JSON.parse(AGENT_FILE);
    let node = file;
    for (const key of leaf.slice(0, -1)) node = node[key];
    node[leaf[leaf.length - 1]] = value;
    return JSON.stringify(file);
  });

/** Files nobody's schema describes, for the import: the server's own fixture among them. */
const RAW_FILES = [
  ...RAW_BODIES,
  AGENT_FILE,
  AGENT_FILE.replace('"message-6"', '"message-99"'),
  AGENT_FILE.replace('"block-2"', '"\\u0000"'),
  JSON.stringify(AGENT_FILE),
  AGENT_FILE.slice(0, 1000),
];

const BOUNDARY = 'fuzz-boundary-7d3f';

/** A multipart form: the file, then the fields; `truncated` leaves out its end. */
function multipart(file: string, fields: Record<string, string>, truncated: boolean): string {
  const parts = [
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="agent.af"\r\nContent-Type: application/json\r\n\r\n${file}\r\n`,
    ...Object.entries(fields).map(
      ([name, value]) =>
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
    ),
  ];
  const body = `${parts.join('')}--${BOUNDARY}--\r\n`;
  return truncated ? body.slice(0, Math.floor(body.length / 2)) : body;
}

/** A path value: URL-encoded where it can be (a lone surrogate cannot: it goes as raw UTF-8 bytes). */
function encoded(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return '%ED%A0%80';
  }
}

describe('hostile input', () => {
  let model: OpenAiStub;
  let server: TestServer;
  let emptyIndex: string;
  const stored: Record<string, string> = {};

  /** One request on a connection of its own: a reset then belongs to this request, not an earlier one. */
  const send = (method: string, url: string, body?: string, contentType = 'application/json') =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(
        `${server.url}${url}`,
        {
          method,
          agent: false,
          headers: body === undefined ? {} : { 'content-type': contentType },
          timeout: 60_000,
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        },
      );
      req.on('error', (error) => reject(new Error(`${method} ${url.slice(0, 200)}: ${error.message}`)));
      req.end(body);
    });

  beforeAll(async () => {
    model = await startOpenAiStub();
    emptyIndex = fs.mkdtempSync(path.join(os.tmpdir(), 'fuzz-index-'));
    server = await startTestServer({
      OPENAI_BASE_URL: model.baseURL,
      OPENAI_API_KEY: 'test',
      // No request may leave this machine: package installs point at nothing, MCP servers at loopback.
      PIP_INDEX_URL: `file://${emptyIndex}`,
      NPM_REGISTRY_URL: 'http://127.0.0.1:9/',
      TOOL_TIMEOUT_MS: '5000',
      MCP_CONNECT_TIMEOUT_MS: '2000',
    });
    const created = async (url: string, body: unknown) => {
      const res = await send('POST', url, JSON.stringify(body));
      expect(res.status).toBe(200);
      return JSON.parse(res.text) as { id: string };
    };
    const tool = await created('/v1/tools/', {
      source_code:
        'def echo(text: str) -> str:\n    """Echo.\n\n    Args:\n        text: what to echo\n    """\n    return text\n',
    });
    const agent = await created('/v1/agents/', {
      model: 'openai/gpt-4o-mini',
      embedding: 'openai/text-embedding-3-small',
      memory_blocks: [{ label: 'human', value: 'x' }],
      tool_ids: [tool.id],
    });
    const sandbox = await created('/v1/sandbox-config/', { config: {} });
    const envVar = await created(`/v1/sandbox-config/${sandbox.id}/environment-variable`, {
      key: 'K',
      value: 'v',
    });
    const run = await created(`/v1/agents/${agent.id}/messages/async`, {
      messages: [{ role: 'user', content: 'hi' }],
    });
    const conversation = await created(`/v1/conversations/?agent_id=${agent.id}`, {});
    const schedule = await created(`/v1/agents/${agent.id}/schedule`, {
      ...MESSAGE,
      schedule: { type: 'recurring', cron_expression: '0 9 * * *' },
    });
    const archive = await created('/v1/archives/', {
      name: 'fuzz',
      embedding: 'openai/text-embedding-3-small',
    });
    const passage = await created(`/v1/archives/${archive.id}/passages`, TEXT);
    const block = await created('/v1/blocks/', { label: 'shared', value: 'v' });
    const identity = await created('/v1/identities/', {
      identifier_key: 'fuzz',
      name: 'f',
      identity_type: 'org',
    });
    await send('PATCH', `/v1/agents/${agent.id}/archives/attach/${archive.id}`);
    const folder = await created('/v1/folders/', {
      name: 'fuzz',
      embedding: 'openai/text-embedding-3-small',
    });
    const uploaded = await send(
      'POST',
      `/v1/folders/${folder.id}/upload`,
      multipart('{"fuzz": "a file to read"}', {}, false),
      `multipart/form-data; boundary=${BOUNDARY}`,
    );
    expect(uploaded.status).toBe(200);
    const file = JSON.parse(uploaded.text) as { id: string };
    const [message] = (
      JSON.parse((await send('GET', `/v1/agents/${agent.id}/messages`)).text) as { id: string }[]
    ).slice(-1);
    Object.assign(stored, {
      conversation: conversation.id,
      message: message.id,
      agent: agent.id,
      tool: tool.id,
      sandbox: sandbox.id,
      envVar: envVar.id,
      run: run.id,
      archive: archive.id,
      passage: passage.id,
      block: block.id,
      identity: identity.id,
      folder: folder.id,
      file: file.id,
      schedule: schedule.id,
    });
    Object.assign(stored, { toolName: 'echo', label: 'human' });
  });
  afterAll(async () => {
    await server?.stopAll();
    await model?.close();
    fs.rmSync(emptyIndex, { recursive: true, force: true });
  });

  /** A filled-in path: mostly stored ids, so that bodies reach the route's work. */
  const pathFor = (route: FuzzRoute) =>
    fc
      .record(
        Object.fromEntries(
          [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => [
            name,
            fc.oneof(
              {
                weight: 6,
                arbitrary: fc.constant(stored[name] ?? `${name}-00000000-0000-4000-8000-000000000000`),
              },
              { weight: 1, arbitrary: fc.constant(`${name}-00000000-0000-4000-8000-000000000000`) },
              { weight: 2, arbitrary: hostileString.filter((s) => s.length < 300).map(encoded) },
            ),
          ]),
        ),
      )
      .map((values) => route.path.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? ''));

  const queryFor = (route: FuzzRoute) =>
    fc
      .dictionary(
        fc.constantFrom(...(route.query ?? ['x'])),
        fc.oneof(
          hostileString.filter((s) => s.length < 300),
          hostileNumber.map(String),
        ),
        { maxKeys: 3 },
      )
      .map((params) => {
        const pairs = Object.entries(params).map(([key, value]) => `${key}=${encoded(value)}`);
        return pairs.length ? `?${pairs.join('&')}` : '';
      });

  /** A generated body, over the route's base fields half the time, in text. */
  const bodyOf = (route: FuzzRoute) =>
    fc.tuple(bodyFor(route.body!), fc.boolean()).map(([body, onBase]) => {
      const isObject = body !== null && typeof body === 'object' && !Array.isArray(body);
      return JSON.stringify(onBase && isObject && route.base ? { ...body, ...route.base } : body);
    });

  /** An upload: a generated or raw file in a multipart form, with hostile form fields. */
  const uploadOf = (route: FuzzRoute) =>
    fc
      .tuple(
        fc.oneof(
          { weight: 5, arbitrary: bodyOf(route) },
          { weight: 5, arbitrary: mutatedFile },
          { weight: 2, arbitrary: fc.constantFrom(...RAW_FILES) },
        ),
        fc.dictionary(
          fc.constantFrom(...route.form!),
          fc.oneof(
            hostileString.filter((s) => s.length < 300),
            fc.constantFrom('true', 'false', '{}', '{"K":"v"}', 'openai/gpt-4o-mini', 'x/y'),
          ),
          { maxKeys: 3 },
        ),
        fc.boolean(),
        fc.nat({ max: 20 }),
      )
      .map(([file, fields, asJson, cut]) =>
        // Now and then the body is not a form at all, or a form cut short.
        asJson && cut === 0 ? file : multipart(file, fields, cut === 1),
      );

  const requestFor = (route: FuzzRoute) =>
    fc.record({
      method: fc.constant(route.method),
      url: fc.tuple(pathFor(route), queryFor(route)).map(([p, q]) => p + q),
      body: route.form
        ? uploadOf(route)
        : route.body
          ? fc.oneof(
              { weight: 20, arbitrary: bodyOf(route) },
              { weight: 1, arbitrary: fc.constantFrom(...RAW_BODIES) },
            )
          : fc.constant(undefined),
      contentType: fc.constant(route.form ? `multipart/form-data; boundary=${BOUNDARY}` : 'application/json'),
    });

  it('answers thousands of generated requests without a 5xx, and stays healthy', async () => {
    // Every request is sent, not only those up to the first failure, so that one run lists them all.
    const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
    const requests = fc.sample(fc.oneof(...ROUTES.map(requestFor)), {
      numRuns: Number(process.env.FUZZ_RUNS ?? 3_000),
      seed,
    });
    const failures: string[] = [];
    for (const { method, url, body, contentType } of requests) {
      const answer = await send(method, url, body, contentType);
      if (answer.status >= 500)
        failures.push(
          `${answer.status} ${answer.text.slice(0, 300)} <- ${method} ${url} ${body?.slice(0, 300)}`,
        );
    }
    failures.sort();
    expect({ seed, failures: failures.slice(0, 30), count: failures.length }).toEqual({
      seed,
      failures: [],
      count: 0,
    });
    expect((await send('GET', '/v1/health/')).status).toBe(200);
    const fresh = await send(
      'POST',
      '/v1/agents/',
      JSON.stringify({ model: 'openai/gpt-4o-mini', name: 'after' }),
    );
    expect(fresh.status).toBe(200);
  }, 600_000);
});
