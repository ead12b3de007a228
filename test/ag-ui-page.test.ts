/**
 * The AG-UI chat page (`/ag-ui`, public/ag-ui/) in headless Chromium, on the real server behind a
 * password: the published @ag-ui/client loads from node_modules through the page's import map under its
 * strict Content-Security-Policy, and only the modules it needs are served; a chat streams the agent's
 * reply, runs the page's frontend tool when the model calls it (the accent colour changes) and resumes
 * the run with its result; approval interrupts are approved or denied on the page, the memory panel follows
 * the state's deltas; a reload shows the thread's history; a scoped access token chats with its agent.
 * Screenshots go to test-artifacts/ag-ui-page/.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import { chromium, type Browser, type Page } from 'playwright-core';
import { SERVED_MODULES } from '../src/api/ag-ui-page';
import { useAgentServer } from './helpers/agent-server';
import { eventually } from './helpers/eventually';

const ARTIFACTS = path.join(__dirname, '..', 'test-artifacts', 'ag-ui-page');
const PASSWORD = 'ag-ui-page-password';
const MODULES = '/ag-ui/modules';

/** The events of an AG-UI run's SSE answer. */
const sseEvents = (body: string): { type: string; delta?: string }[] =>
  body
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => JSON.parse(line.slice(5)));

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
   * A tab that records what went wrong in it: script errors, console errors, failed requests, but the
   * `expected` answers (`status url`). Before sign-in the page asks whether the server has a password
   * (a 401 says it has).
   */
  const watchedTab = async (expected: string[] = []) => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const problems: string[] = [];
    const allowed = [`401 ${h.server.url}/v1/agents/?limit=1`, ...expected];
    const isExpected = (status: number, url: string) => allowed.includes(`${status} ${url}`);
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      const status = Number(/status of (\d+)/.exec(message.text())?.[1]);
      if (message.type() === 'error' && !isExpected(status, message.location().url))
        problems.push(`console: ${message.text()} (${message.location().url})`);
    });
    page.on('requestfailed', (request) => problems.push(`failed: ${request.url()}`));
    page.on('response', (response) => {
      if (response.status() >= 400 && !isExpected(response.status(), response.url()))
        problems.push(`${response.status()}: ${response.url()}`);
    });
    return { page, problems };
  };

  const signIn = async (page: Page, credential = PASSWORD) => {
    await page.goto(`${h.server.url}/ag-ui`);
    await page.getByLabel('Server password or access token').fill(credential);
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
      `${MODULES}/tslib/tslib.es6.mjs/index.js`,
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

  /** Opens a chat with the agent named `name` in a signed-in tab. */
  const openChat = async (page: Page, agentId: string) => {
    await page.getByLabel('Agent').selectOption(agentId);
    await page.getByRole('button', { name: 'Open' }).click();
    await page.getByText(new RegExp(`^Chat [0-9a-f]{8} with ${agentId}\\.$`)).waitFor();
  };
  const send = async (page: Page, text: string) => {
    await page.getByRole('textbox', { name: 'Message' }).fill(text);
    await page.getByRole('button', { name: 'Send' }).click();
  };
  // In the tab (this file is compiled without the DOM's types, so these are given as text).
  const accent = (page: Page): Promise<string> =>
    page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--accent').trim()");
  const replies = (page: Page) => page.locator('.message.assistant .text').allInnerTexts();

  /** Every text the agent's replies showed, in order, as each delta arrived (the tab records them). */
  const recordReplyTexts = (page: Page) =>
    page.evaluate(`{
      window.replyTexts = [];
      new MutationObserver((records) => {
        for (const record of records)
          if (record.target.matches?.('.message.assistant .text')) window.replyTexts.push(record.target.textContent);
      }).observe(document.getElementById('messages'), { childList: true, subtree: true });
    }`);
  const replyTexts = (page: Page): Promise<string[]> => page.evaluate('window.replyTexts');

  it('streams a reply, runs its frontend tool when the model calls it, resumes the run, and shows the history after a reload', async () => {
    const agent = await client.agents.create({
      name: 'Bo',
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
    });
    const greeting = 'Hello Alice! I can change the colours of this page for you.';
    h.stub.enqueue(
      { text: greeting },
      { toolCalls: [{ name: 'set_theme_color', arguments: { color: 'teal' } }] },
      { text: 'Done: the page is teal now.' },
    );
    const { page, problems } = await watchedTab();
    try {
      await signIn(page);
      await openChat(page, agent.id);
      expect(await accent(page)).toBe('#1d5fbf');
      await recordReplyTexts(page);

      // The reply streams in: the page shows each text delta of the run's events as it arrives.
      const stream = page.waitForResponse((response) => response.url().includes('/v1/ag-ui/agents/'));
      await send(page, 'Hi, who are you?');
      const events = sseEvents(await (await stream).text());
      await page.locator('.message.assistant .text', { hasText: greeting }).waitFor();
      const deltas = events
        .filter((event) => event.type === 'TEXT_MESSAGE_CONTENT')
        .map((event) => event.delta);
      expect(deltas.join('')).toBe(greeting);
      const growing = deltas.map((_, n) => deltas.slice(0, n + 1).join(''));
      expect((await replyTexts(page)).filter(Boolean)).toEqual(growing);
      // The run's state snapshot: the agent's memory, beside the chat.
      await page.locator('#memory dd', { hasText: 'Name: Alice' }).waitFor();
      expect(await page.locator('#memory dt').allInnerTexts()).toContain('human');
      await screenshot(page, 'streamed-reply');

      // The model calls the page's tool: the page runs it (its accent colour changes) and answers it,
      // and the run resumes with the result to the model's last word.
      await send(page, 'Please make this page teal.');
      await page.locator('.message.assistant .text', { hasText: 'Done: the page is teal now.' }).waitFor();
      expect(await accent(page)).toBe('teal');
      expect(await page.evaluate("getComputedStyle(document.getElementById('send')).backgroundColor")).toBe(
        'rgb(0, 128, 128)',
      );
      await page.locator('.tool-call code', { hasText: 'set_theme_color({"color":"teal"})' }).waitFor();
      await page
        .locator('.message.tool .text', { hasText: "The page's accent colour is now teal." })
        .waitFor();
      const toolReturn = h.stub.requests.at(-1)!.messages.find((m) => m.role === 'tool');
      expect(String(toolReturn?.content)).toContain("The page's accent colour is now teal.");
      expect(await replies(page)).toEqual([greeting, '', 'Done: the page is teal now.']);
      await screenshot(page, 'frontend-tool');

      // A reload keeps the tab's sign-in and thread: a run with no messages brings the history back.
      const modelCalls = h.stub.requests.length;
      await page.reload();
      await page.locator('.message.assistant .text', { hasText: 'Done: the page is teal now.' }).waitFor();
      expect(await page.locator('.message.user .text').allInnerTexts()).toEqual([
        'Hi, who are you?',
        'Please make this page teal.',
      ]);
      expect(await page.locator('.message.assistant .text', { hasText: greeting }).count()).toBe(1);
      expect(h.stub.requests.length).toBe(modelCalls);
      await screenshot(page, 'history-after-reload');
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('shows approval interrupts, resumes the run with an approval or a denial with its reason, and follows the memory they change', async () => {
    const agent = await client.agents.create({
      name: 'Cy',
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
      tool_rules: [{ type: 'requires_approval', tool_name: 'memory_insert' }],
    });
    h.stub.enqueue(
      { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_string: 'Likes jazz' } }] },
      { text: 'I will remember that you like jazz.' },
    );
    const { page, problems } = await watchedTab();
    try {
      await signIn(page);
      await openChat(page, agent.id);
      await send(page, 'Remember that I like jazz');
      const interrupt = page.locator('.interrupt');
      await interrupt.getByRole('button', { name: 'Approve' }).waitFor();
      expect(await interrupt.innerText()).toContain('memory_insert');
      expect(await interrupt.innerText()).toContain('Likes jazz');
      await page.locator('#memory dd', { hasText: 'Name: Alice' }).waitFor();
      await screenshot(page, 'interrupt');

      await interrupt.getByRole('button', { name: 'Approve' }).click();
      await page
        .locator('.message.assistant .text', { hasText: 'I will remember that you like jazz.' })
        .waitFor();
      // The memory edit arrives as a state delta, and the panel shows it.
      await page.locator('#memory dd', { hasText: 'Likes jazz' }).waitFor();
      expect(
        await eventually(
          async () => (await client.agents.blocks.retrieve('human', { agent_id: agent.id })).value,
          (value) => value.includes('Likes jazz'),
        ),
      ).toContain('Likes jazz');
      expect(await page.locator('.interrupt').count()).toBe(0);
      await screenshot(page, 'interrupt-approved');

      // A call denied with a reason: the model reads the reason, the memory stays as it is.
      h.stub.enqueue(
        { toolCalls: [{ name: 'memory_insert', arguments: { label: 'human', new_string: 'Likes noise' } }] },
        { text: 'Understood, I will not.' },
      );
      await send(page, 'Remember that I like noise');
      await interrupt.getByRole('button', { name: 'Deny' }).waitFor();
      await interrupt
        .getByRole('textbox', { name: 'Reason to deny (optional)' })
        .fill('Alice dislikes noise');
      await interrupt.getByRole('button', { name: 'Deny' }).click();
      await page.locator('.message.assistant .text', { hasText: 'Understood, I will not.' }).waitFor();
      const denial = h.stub.requests
        .at(-1)!
        .messages.filter((m) => m.role === 'tool')
        .at(-1);
      expect(String(denial?.content)).toContain('Alice dislikes noise');
      expect(await page.locator('#memory dd').allInnerTexts()).toEqual(['Name: Alice\nLikes jazz']);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('chats with a scoped access token, which names its agent since it may not list the agents', async () => {
    const agent = await client.agents.create({ name: 'Di', model: 'openai/gpt-4o-mini' });
    const { token } = await client.accessTokens.create({
      hostname: h.server.url,
      policy: [{ type: 'agent', id: agent.id, access: ['write_messages'] }],
    });
    h.stub.enqueue({ text: 'Hello through a token.' });
    // A token may not list the agents: the sign-in and the agent picker hear so.
    const { page, problems } = await watchedTab(
      ['limit=1', 'limit=100'].map((query) => `403 ${h.server.url}/v1/agents/?${query}`),
    );
    try {
      await signIn(page, token);
      await page.getByText('Enter the id of an agent this token reaches').waitFor();
      await page.getByRole('textbox', { name: 'Agent' }).fill(agent.id);
      await page.getByRole('button', { name: 'Open' }).click();
      await send(page, 'Hi');
      await page.locator('.message.assistant .text', { hasText: 'Hello through a token.' }).waitFor();
      await screenshot(page, 'scoped-token');
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
