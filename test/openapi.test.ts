/**
 * The API describes itself: /openapi.json is a valid OpenAPI 3.1 document listing every route the
 * server registers, real answers validate against the shapes it gives, and /docs renders it in a
 * browser (Debian's Chromium, headless) with every request off the server refused.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import Ajv2020 from 'ajv/dist/2020';
import { chromium } from 'playwright-core';
import { openApiPath } from '../src/api/openapi';
import { useAgentServer } from './helpers/agent-server';
import { registeredRoutes } from './helpers/routes';

const PASSWORD = 'a-password-for-the-reference';

interface OpenApiOperation {
  summary?: string;
  parameters?: { name: string; in: string }[];
  responses: Record<string, unknown>;
}

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, OpenApiOperation>>;
}

const documentedRoutes = (doc: OpenApiDocument) =>
  Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item).map((method) => `${method} ${p}`));

describe('the API description', () => {
  const h = useAgentServer('openai', { LETTA_SERVER_PASSWORD: PASSWORD });
  const get = (url: string, headers: Record<string, string> = {}) =>
    fetch(`${h.server.url}${url}`, { headers });
  let doc: OpenApiDocument;

  beforeAll(async () => {
    const res = await get('/openapi.json');
    expect(res.status).toBe(200);
    doc = (await res.json()) as OpenApiDocument;
  });

  it('serves OpenAPI 3.1 without the password, valid by the specification’s own schema', async () => {
    expect(doc.openapi).toBe('3.1.0');
    expect((await get('/v1/agents')).status).toBe(401); // the API itself still asks for it
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-')), 'openapi.json');
    fs.writeFileSync(file, JSON.stringify(doc));
    const validator = require.resolve('@seriousme/openapi-schema-validator/bin/validate-api-cli.js');
    const result = JSON.parse(execFileSync(process.execPath, [validator, file], { encoding: 'utf8' }));
    expect(result).toEqual({ valid: true });
  });

  it('lists every route the server registers, each with a summary and its answer', () => {
    const registered = registeredRoutes().map((route) => `${route.method} ${openApiPath(route.path)}`);
    expect(registered.length).toBeGreaterThan(130);
    expect(registered.filter((route) => !documentedRoutes(doc).includes(route))).toEqual([]);
    expect(new Set(documentedRoutes(doc))).toEqual(new Set(registered));
    for (const item of Object.values(doc.paths))
      for (const operation of Object.values(item)) {
        expect(operation.summary).toBeTruthy();
        expect(operation.responses['200'] ?? operation.responses['204']).toBeDefined();
      }
  });

  it('names path parameters as Letta’s OpenAPI document does, which its clients are generated from', () => {
    const names = Object.entries(doc.paths).flatMap(([p, item]) => {
      const inPath = [...p.matchAll(/\{(\w+)\}/g)].map((match) => match[1]);
      for (const operation of Object.values(item)) {
        const pathParams = (operation.parameters ?? []).filter((param) => param.in === 'path');
        expect(pathParams.map((param) => param.name)).toEqual(inPath);
      }
      return inPath;
    });
    expect([...new Set(names)].filter((name) => !/^[a-z]+(_[a-z]+)*$/.test(name))).toEqual([]);
    for (const route of [
      '/v1/agents/{agent_id}/core-memory/blocks/{block_label}',
      '/v1/agents/{agent_id}/archival-memory/{memory_id}',
      '/v1/agents/{agent_id}/tools/approval/{tool_name}',
      '/v1/agents/{agent_id}/sources/attach/{source_id}',
      '/v1/agents/{agent_id}/schedule/{scheduled_message_id}',
      '/v1/blocks/{block_id}',
      '/v1/tools/{tool_id}',
      '/v1/runs/{run_id}/steps',
      '/v1/conversations/{conversation_id}/messages',
      '/v1/folders/{folder_id}/files/{file_id}',
      '/v1/sources/{source_id}/{file_id}',
      '/v1/sources/name/{source_name}',
      '/v1/mcp-servers/{mcp_server_id}/tools/{tool_id}',
      '/v1/sandbox-config/environment-variable/{env_var_id}',
    ])
      expect(doc.paths[route]).toBeDefined();
  });

  it('gives shapes the real answers validate against', async () => {
    const auth = { authorization: `Bearer ${PASSWORD}` };
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addSchema(doc as object, 'doc');
    const answerOf = async (method: 'get', route: string, url: string) => {
      const res = await get(url, auth);
      expect(res.status).toBe(200);
      const pointer = ['paths', route, method, 'responses', '200', 'content', 'application/json', 'schema']
        .map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1'))
        .join('/');
      const body = await res.json();
      const valid = ajv.validate({ $ref: `doc#/${pointer}` }, body);
      if (!valid) throw new Error(`${url}: ${ajv.errorsText(ajv.errors)}`);
      return body;
    };

    const client = new Letta({ baseURL: h.server.url, apiKey: PASSWORD, maxRetries: 0 });
    const tool = await client.tools.create({
      source_code:
        'def shout(text: str) -> str:\n    """Shouts.\n\n    Args:\n        text: what to shout\n    """\n    return text.upper()\n',
    });
    const agent = await client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
      tool_ids: [tool.id],
    });
    h.stub.enqueue({ text: 'Hello!' });
    const response = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Hi' }],
    });
    const runId = response.messages[0].run_id!;
    const block = agent.memory.blocks[0];
    await client.folders.create({ name: 'docs', embedding: 'openai/text-embedding-3-small' });

    const checks: [string, string][] = [
      ['/v1/health', '/v1/health'],
      ['/v1/agents', '/v1/agents'],
      ['/v1/agents/{agent_id}', `/v1/agents/${agent.id}`],
      ['/v1/agents/{agent_id}/messages', `/v1/agents/${agent.id}/messages`],
      ['/v1/agents/{agent_id}/tools', `/v1/agents/${agent.id}/tools`],
      ['/v1/agents/{agent_id}/core-memory/blocks', `/v1/agents/${agent.id}/core-memory/blocks`],
      ['/v1/blocks', '/v1/blocks'],
      ['/v1/blocks/{block_id}', `/v1/blocks/${block.id}`],
      ['/v1/tools', '/v1/tools'],
      ['/v1/tools/{tool_id}', `/v1/tools/${tool.id}`],
      ['/v1/runs', '/v1/runs'],
      ['/v1/runs/{run_id}', `/v1/runs/${runId}`],
      ['/v1/runs/{run_id}/messages', `/v1/runs/${runId}/messages`],
      ['/v1/runs/{run_id}/steps', `/v1/runs/${runId}/steps`],
      ['/v1/models', '/v1/models'],
      ['/v1/identities', '/v1/identities'],
      ['/v1/folders', '/v1/folders'],
      ['/v1/archives', '/v1/archives'],
      ['/v1/mcp-servers', '/v1/mcp-servers'],
      ['/v1/sandbox-config', '/v1/sandbox-config'],
      ['/v1/conversations', `/v1/conversations?agent_id=${agent.id}`],
    ];
    for (const [route, url] of checks) await answerOf('get', route, url);
  });

  it('renders the reference at /docs in a browser, with nothing fetched from elsewhere', async () => {
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium' });
    try {
      const page = await browser.newPage();
      const elsewhere: string[] = [];
      await page.route('**/*', (route) => {
        const url = route.request().url();
        if (url.startsWith(h.server.url)) return route.continue();
        elsewhere.push(url);
        return route.abort();
      });
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(`${h.server.url}/docs`);
      await page.locator('.info', { hasText: 'letta-temporal' }).waitFor({ timeout: 30_000 });
      // Swagger UI renders the operations near the view: the first group's, then, scrolled to, the last.
      await page.locator('.opblock-summary-path', { hasText: '/v1/health' }).waitFor();
      await page.locator('#operations-tag-Agents').scrollIntoViewIfNeeded();
      await page.locator('.opblock-summary-path', { hasText: '/v1/agents/{agent_id}' }).first().waitFor();
      await page.locator('.models').scrollIntoViewIfNeeded();
      await page.locator('.models', { hasText: 'AgentState' }).waitFor();
      expect(errors).toEqual([]);
      expect(elsewhere).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
