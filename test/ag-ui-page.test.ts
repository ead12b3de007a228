/**
 * The AG-UI chat page (`/ag-ui`, public/ag-ui/) in headless Chromium, on the real server behind a
 * password: the published @ag-ui/client loads from node_modules through the page's import map under its
 * strict Content-Security-Policy, and only the modules it needs are served. Screenshots go to
 * test-artifacts/ag-ui-page/.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import { chromium, type Browser, type Page } from 'playwright-core';
import { SERVED_MODULES } from '../src/api/ag-ui-page';
import { useAgentServer } from './helpers/agent-server';

const ARTIFACTS = path.join(__dirname, '..', 'test-artifacts', 'ag-ui-page');
const PASSWORD = 'ag-ui-page-password';
const MODULES = '/ag-ui/modules';

/** A GET sent as written: fetch and browsers resolve `..` in a URL before they send it. */
function rawGet(base: string, target: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get(new URL(base), { path: target }, (response) => {
      let body = '';
      response.on('data', (chunk) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
  });
}

describe('the AG-UI chat page', () => {
  const h = useAgentServer('openai', { LETTA_SERVER_PASSWORD: PASSWORD });
  let browser: Browser;
  let client: Letta;
  beforeAll(async () => {
    client = new Letta({ baseURL: h.server.url, apiKey: PASSWORD, maxRetries: 0 });
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
  });

  const screenshot = (page: Page, name: string) =>
    page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });

  /**
   * A tab that records what went wrong in it: script errors, console errors, failed requests. Before
   * sign-in the page asks whether the server has a password (a 401 says it has): that one is expected.
   */
  const watchedTab = async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const problems: string[] = [];
    const passwordProbe = (url: string, status: string) =>
      status.includes('401') && url === `${h.server.url}/v1/agents/?limit=1`;
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' && !passwordProbe(message.location().url, message.text()))
        problems.push(`console: ${message.text()} (${message.location().url})`);
    });
    page.on('requestfailed', (request) => problems.push(`failed: ${request.url()}`));
    page.on('response', (response) => {
      if (response.status() >= 400 && !passwordProbe(response.url(), String(response.status())))
        problems.push(`${response.status()}: ${response.url()}`);
    });
    return { page, problems };
  };

  const signIn = async (page: Page) => {
    await page.goto(`${h.server.url}/ag-ui`);
    await page.getByLabel('Server password or access token').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  };

  it('serves the page without the password, admitting only its import map as an inline script', async () => {
    const response = await fetch(`${h.server.url}/ag-ui`);
    expect(response.status).toBe(200);
    const policy = response.headers.get('content-security-policy') ?? '';
    expect(policy).toContain("default-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/]+=*'(;|$)/);
    expect(policy).not.toContain('unsafe');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await response.text()).toContain('<script type="importmap">');
    for (const file of ['/ag-ui/ag-ui.js', '/ag-ui/ag-ui.css', `${MODULES}/@ag-ui/client/dist/index.mjs`]) {
      const asset = await fetch(`${h.server.url}${file}`);
      expect({ file, status: asset.status }).toEqual({ file, status: 200 });
      expect(asset.headers.get('content-security-policy')).toBe(policy);
    }
    expect((await fetch(`${h.server.url}/v1/agents/`)).status).toBe(401);
  });

  it('serves the ES modules of the listed packages and nothing else of node_modules', async () => {
    const served = async (target: string) => {
      const { status, body } = await rawGet(h.server.url, target);
      return { target, status, leaks: /"name":|"version":|module\.exports|require\(/.test(body) };
    };
    const module = await fetch(`${h.server.url}${MODULES}/@ag-ui/core/dist/index.mjs`);
    expect(module.headers.get('content-type')).toMatch(/^(application|text)\/javascript/);
    // rxjs names its files without an extension: `.js` completes them.
    expect(
      (await served(`${MODULES}/@ag-ui/client/node_modules/rxjs/dist/esm5/internal/Observable`)).status,
    ).toBe(200);
    const refused = [
      `${MODULES}/@ag-ui/client/package.json`,
      `${MODULES}/@ag-ui/client/dist/index.mjs.map`,
      `${MODULES}/@ag-ui/client/dist/index.d.ts`,
      `${MODULES}/express/index.js`,
      `${MODULES}/@ag-ui/encoder/dist/index.mjs`,
      `${MODULES}/zod/index.js`,
      `${MODULES}/tslib/tslib.js`,
      `${MODULES}/@ag-ui/client/dist/../package.json`,
      `${MODULES}/@ag-ui/client/dist/%2e%2e/package.json`,
      `${MODULES}/@ag-ui/client/dist/..%2fpackage.json`,
      `${MODULES}/@ag-ui/client/dist/%2e%2e%2f%2e%2e%2f%2e%2e%2fexpress/index.js`,
      `${MODULES}/zod/v4/%2e%2e/%2e%2e/%2e%2e/package.json`,
      `${MODULES}/zod/v4/..%5c..%5cpackage.json`,
      `${MODULES}/@ag-ui/client/node_modules/rxjs/dist/esm5/%2e%2e/%2e%2e/package`,
      `${MODULES}/tslib/tslib.es6.mjs/../tslib.js`,
      `${MODULES}/../../package.json`,
      `${MODULES}/%2e%2e/package.json`,
      `${MODULES}/%2e%2e/%2e%2e/src/config`,
    ];
    for (const target of refused) {
      const answer = await served(target);
      expect(answer).toEqual({ target, status: answer.status, leaks: false });
      expect([400, 403, 404]).toContain(answer.status);
    }
  });

  it('loads every module of the import map in Chromium with no error, and opens a chat with an HttpAgent', async () => {
    const agent = await client.agents.create({ name: 'Ada', model: 'openai/gpt-4o-mini' });
    const { page, problems } = await watchedTab();
    const modules: string[] = [];
    page.on('response', (response) => {
      const { pathname } = new URL(response.url());
      if (pathname.startsWith(`${MODULES}/`)) modules.push(pathname);
    });
    try {
      await signIn(page);
      expect(problems).toEqual([]);
      // The whole graph @ag-ui/client imports, each package's modules from the copy its importer
      // resolves to; and every folder or file the server serves is one the page needs.
      const unused = SERVED_MODULES.filter(
        (served) => !modules.some((pathname) => pathname.startsWith(`${MODULES}/${served}`)),
      );
      expect(unused).toEqual([]);
      expect(modules.length).toBeGreaterThan(300);
      await page.getByLabel('Agent').selectOption(agent.id);
      await page.getByRole('button', { name: 'Open' }).click();
      await page.getByText(new RegExp(`^Chat [0-9a-f]{8} with ${agent.id}\\.$`)).waitFor();
      expect(await page.getByRole('textbox', { name: 'Message' }).isEnabled()).toBe(true);
      await screenshot(page, 'chat-opened');
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
