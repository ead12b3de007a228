/**
 * The approval page (`/approvals`, public/approvals/) in headless Chromium, on the real server behind a
 * password: three agents pause on tool calls made through the official client, one reply with three
 * parallel calls; the page lists the five, approves one with an edited argument, denies one with a
 * reason, answers a request of three calls with the keyboard only; a second tab follows it all
 * without a reload, and a third, whose stream fails, by fetching the list every few seconds.
 * Screenshots go to test-artifacts/approval-page/.
 */
import fs from 'node:fs';
import path from 'node:path';
import Letta from '@letta-ai/letta-client';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { ChatRequest } from './helpers/openai-stub';
import { useAgentServer } from './helpers/agent-server';
import { eventually } from './helpers/eventually';
import { startNoticeReceiver } from './helpers/notice-receiver';
import { testTemporalUiUrl } from './helpers/env';

const ARTIFACTS = path.join(__dirname, '..', 'test-artifacts', 'approval-page');
const PASSWORD = 'approvals-page-password';
const INSERT = 'memory_insert';

/** What the model was shown of each tool call's result, by tool call id, over all its requests. */
const toolReturnsSeen = (requests: ChatRequest[]) =>
  Object.fromEntries(
    requests.flatMap((request) =>
      request.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, String(m.content)]),
    ),
  );

describe('the approval page', () => {
  const h = useAgentServer('openai', {
    LETTA_SERVER_PASSWORD: PASSWORD,
    TEMPORAL_UI_URL: testTemporalUiUrl(),
    // Approval notices go to a receiver on loopback, which an operator allows.
    OUTBOUND_ALLOW_PRIVATE: '127.0.0.1',
  });
  let receiver: Awaited<
    ReturnType<typeof startNoticeReceiver<{ approval_request_id: string; links: { approve: string } | null }>>
  >;
  /** The runs each agent paused in, in order. */
  const pausedRuns = new Map<string, string[]>();
  let client: Letta;
  let browser: Browser;
  beforeAll(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    client = new Letta({ baseURL: h.server.url, apiKey: PASSWORD, maxRetries: 0 });
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
    receiver = await startNoticeReceiver();
  });
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
  });

  const screenshot = (page: Page, name: string) =>
    page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });

  /** An agent whose memory edits wait for approval (and, given more, other tools' calls too). */
  const createAgent = (name: string, approvalTools: string[] = [INSERT]) =>
    client.agents.create({
      name,
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Name: Alice' }],
      parallel_tool_calls: true,
      tool_rules: approvalTools.map((tool_name) => ({ type: 'requires_approval' as const, tool_name })),
      metadata: { approval_webhook_url: receiver.url },
    });

  /** The agent's reply to `text` is `calls`, which pause its run. */
  const pauseOn = async (agentId: string, text: string, calls: { name: string; arguments: object }[]) => {
    h.stub.enqueue({ toolCalls: calls.map((call) => ({ ...call, arguments: { ...call.arguments } })) });
    const response = await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: text }],
    });
    expect(response.stop_reason.stop_reason).toBe('requires_approval');
    const request = response.messages.at(-1) as unknown as {
      run_id: string;
      tool_calls: { tool_call_id: string }[];
    };
    pausedRuns.set(agentId, [...(pausedRuns.get(agentId) ?? []), request.run_id]);
    paused.set(request.run_id, (request as unknown as { id: string }).id);
    return request.tool_calls.map((call) => call.tool_call_id);
  };

  const api = (path: string) =>
    fetch(`${h.server.url}${path}`, { headers: { authorization: `Bearer ${PASSWORD}` } });
  /** The approval request a run paused on. */
  const requestOf = (runId: string) => paused.get(runId);
  const paused = new Map<string, string>();

  const humanBlock = async (agentId: string) =>
    (await client.agents.blocks.retrieve('human', { agent_id: agentId })).value;

  /** A tab on the page, signed in (sessionStorage is a tab's own: each tab signs in). */
  const openSignedIn = async (page: Page, name?: string, updates = 'Live: the list updates by itself.') => {
    await page.goto(`${h.server.url}/approvals`);
    if (name) await page.getByLabel(/^Your name/).fill(name);
    await page.getByLabel('Server password or access token').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText(updates).waitFor();
  };

  const listedCalls = (page: Page) => page.locator('#requests .call');
  /** Waits for the list to show `count` calls (it updates by itself). */
  const listsCalls = async (page: Page, count: number) =>
    expect(
      await eventually(
        () => listedCalls(page).count(),
        (n) => n === count,
      ),
    ).toBe(count);
  const announces = async (page: Page, text: string) =>
    expect(
      await eventually(
        () => page.locator('#announcer').innerText(),
        (said) => said.includes(text),
      ),
    ).toContain(text);
  /** Whether the focused element matches `selector` (and shows `text`). */
  const focusedIs =
    (selector: string, text = '') =>
    async (page: Page) =>
      (await page.locator(`${selector}:focus`, { hasText: text }).count()) === 1;
  const request = (page: Page, agent: string) => page.locator('#requests button', { hasText: agent });
  const callFields = (page: Page, tool: string, nth = 0) =>
    page.locator('fieldset.tool-call', { has: page.locator('legend', { hasText: tool }) }).nth(nth);

  it('serves the page without the password, with a strict Content-Security-Policy', async () => {
    for (const file of ['/approvals', '/approvals/approvals.js', '/approvals/approvals.css']) {
      const response = await fetch(`${h.server.url}${file}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    }
    expect((await fetch(`${h.server.url}/v1/approvals/`)).status).toBe(401);
  });

  it('lists five waiting calls of three agents, approves one edited, denies one with a reason, updates a second tab', async () => {
    const ada = await createAgent('Ada', [INSERT, 'conversation_search']);
    const bo = await createAgent('Bo');
    const cy = await createAgent('Cy');
    // One reply with three parallel calls, each waiting for approval.
    const adaCalls = await pauseOn(ada.id, 'Remember jazz and chess, and look for tea', [
      { name: INSERT, arguments: { label: 'human', new_string: 'Likes jazz' } },
      { name: 'conversation_search', arguments: { query: 'tea' } },
      { name: INSERT, arguments: { label: 'human', new_string: 'Likes chess' } },
    ]);
    expect(adaCalls).toHaveLength(3);
    const [boCall] = await pauseOn(bo.id, 'Remember that I like tea', [
      { name: INSERT, arguments: { label: 'human', new_string: 'Likes tea' } },
    ]);

    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    const tab = await context.newPage();
    const second = await context.newPage();
    // A third tab whose stream never opens: it falls back to fetching the list every few seconds.
    const polled = await context.newPage();
    await polled.route('**/v1/approvals/stream', (route) => route.abort());
    for (const page of [tab, second, polled]) page.on('pageerror', (error) => errors.push(error.message));
    let secondLoads = 0;
    second.on('load', () => secondLoads++);

    // The streams the tabs read hold the server open: the tabs close first, and show how they failed.
    try {
      // A wrong password is refused, and said so.
      await tab.goto(`${h.server.url}/approvals`);
      await tab.getByLabel('Server password or access token').fill('not the password');
      await tab.getByRole('button', { name: 'Sign in' }).click();
      await tab
        .getByRole('alert')
        .filter({ hasText: 'The server refused this password or token.' })
        .waitFor();
      await screenshot(tab, 'sign-in-refused');

      await openSignedIn(tab, 'Ann');
      await openSignedIn(second);
      await openSignedIn(polled, undefined, 'Live updates interrupted: the list is checked every 5 seconds.');
      await listsCalls(tab, 4);
      // A request made now appears in both tabs by itself.
      const [cyCall] = await pauseOn(cy.id, 'Remember that I am on holiday', [
        { name: INSERT, arguments: { label: 'human', new_string: 'On holiday' } },
      ]);
      for (const page of [tab, second, polled]) await listsCalls(page, 5);
      expect(await tab.locator('#count').innerText()).toBe('5 calls in 3 requests, newest first.');
      // Newest first.
      expect(await tab.locator('#requests .agent').allInnerTexts()).toEqual(['Cy', 'Bo', 'Ada']);
      await announces(second, 'New: Cy asks to run');
      await screenshot(tab, 'list');

      // Bo's call, its context, and an answer that fails twice before it is sent with an edited argument.
      await request(tab, 'Bo').click();
      const detail = tab.locator('#detail');
      await detail.getByRole('heading', { name: 'Bo asks to run memory_insert' }).waitFor();
      await detail.locator('.messages', { hasText: 'Remember that I like tea' }).waitFor();
      await detail.locator('.block', { hasText: 'Name: Alice' }).waitFor();
      expect(
        await detail.getByRole('link', { name: 'Open in the Temporal UI' }).getAttribute('href'),
      ).toMatch(new RegExp(`^${testTemporalUiUrl()}/namespaces/default/workflows/`));
      await screenshot(tab, 'request-context');
      const boFields = callFields(tab, INSERT);
      await boFields.getByRole('radio', { name: 'Approve with edited arguments' }).check();
      const edited = boFields.getByLabel('Edited arguments of memory_insert (JSON)');
      await edited.fill('{ "label": "human", "new_string": ');
      await tab.getByRole('button', { name: 'Send answer' }).click();
      await boFields.getByText('The edited arguments are not valid JSON').waitFor();
      expect(await edited.getAttribute('aria-invalid')).toBe('true');
      expect(await focusedIs('#call-0-arguments')(tab)).toBe(true);
      await screenshot(tab, 'invalid-json');
      // The server refuses arguments that do not fit the tool's schema; the page says why.
      await edited.fill('{ "label": "human", "new_string": 7 }');
      await tab.getByRole('button', { name: 'Send answer' }).click();
      await tab.locator('#answer-error', { hasText: 'Not sent:' }).waitFor();
      await screenshot(tab, 'refused-arguments');
      await edited.fill('{ "label": "human", "new_string": "Likes coffee" }');
      await tab.getByRole('button', { name: 'Send answer' }).click();
      await tab.getByText('Your answer was sent: the agent goes on.').waitFor();
      // The name given at sign-in travels with the answer (X-Letta-Approver), into the audit trail.
      await detail.getByText(/^Answered .* by Ann \(with the server password\)\.$/).waitFor();
      await screenshot(tab, 'edited-and-approved');
      // The tool ran with the edited argument, and the second tab saw the answer without a reload.
      expect(
        await eventually(
          () => humanBlock(bo.id),
          (value) => value.includes('coffee'),
        ),
      ).toBe('Name: Alice\nLikes coffee');
      await listsCalls(second, 4);
      await listsCalls(polled, 4);
      await announces(second, "Bo's request was answered.");
      await screenshot(second, 'second-tab-after-approval');

      // Cy's call, denied with a reason the model then reads.
      await request(tab, 'Cy').click();
      const cyFields = callFields(tab, INSERT);
      await cyFields.getByRole('radio', { name: 'Deny' }).check();
      await cyFields.getByLabel('Reason for denying memory_insert').fill('Alice is not on holiday');
      await screenshot(tab, 'deny-with-reason');
      await tab.getByRole('button', { name: 'Send answer' }).click();
      await tab.getByText('Your answer was sent: the agent goes on.').waitFor();
      const seen = await eventually(
        async () => toolReturnsSeen(h.stub.requests)[cyCall],
        (text) => text !== undefined,
      );
      expect(seen).toContain('Alice is not on holiday');
      expect(await humanBlock(cy.id)).toBe('Name: Alice');
      await listsCalls(second, 3);

      // Ada's three calls, answered in the second tab with the keyboard only: approve, approve, deny.
      const tabTo = async (matches: (page: Page) => Promise<boolean>, what: string) => {
        for (let presses = 0; presses < 60; presses++) {
          if (await matches(second)) return;
          await second.keyboard.press('Tab');
        }
        throw new Error(`Tab never reached ${what}`);
      };
      await second.bringToFront();
      await tabTo(focusedIs('#requests button', 'Ada'), 'Ada’s request');
      await second.keyboard.press('Enter');
      await second
        .locator('#detail')
        .getByRole('heading', { name: /^Ada asks to run/ })
        .waitFor();
      expect(await focusedIs('#detail-title')(second)).toBe(true);
      await tabTo(focusedIs('input[name="call-0-decision"][value="approve"]'), 'the first call’s Approve');
      await second.keyboard.press('Space');
      await tabTo(focusedIs('input[name="call-1-decision"][value="approve"]'), 'the second call’s Approve');
      await second.keyboard.press('Space');
      await tabTo(focusedIs('input[name="call-2-decision"]'), 'the third call’s choices');
      // Arrow keys move through a radio group, choosing as they go: Approve, Approve edited, Deny.
      await second.keyboard.press('ArrowRight');
      await second.keyboard.press('ArrowRight');
      expect(await focusedIs('input[name="call-2-decision"][value="deny"]:checked')(second)).toBe(true);
      await second.keyboard.press('Tab');
      expect(await focusedIs('#call-2-reason')(second)).toBe(true);
      await second.keyboard.type('Chess is a secret');
      await tabTo(focusedIs('button.send'), 'Send answer');
      await screenshot(second, 'keyboard-answer');
      await second.keyboard.press('Enter');
      await second.getByText('Your answer was sent: the agent goes on.').waitFor();
      await listsCalls(tab, 0);
      await tab.getByText('Nothing waits for an answer.').waitFor();
      await screenshot(tab, 'nothing-waits');
      expect(
        await eventually(
          () => humanBlock(ada.id),
          (value) => value.includes('jazz'),
        ),
      ).toBe('Name: Alice\nLikes jazz');
      const adaSeen = await eventually(
        async () => toolReturnsSeen(h.stub.requests),
        (returns) => adaCalls.every((id) => returns[id] !== undefined),
      );
      expect(adaSeen[adaCalls[2]]).toContain('Chess is a secret');
      expect(adaSeen[boCall]).toContain('Likes coffee');

      expect(secondLoads).toBe(1);
      expect(errors).toEqual([]);

      // A policy on Bo's memory edits: harmless ones run without a pause, those naming a secret wait.
      await client.agents.tools.updateApproval(INSERT, {
        agent_id: bo.id,
        body_requires_approval: true,
        when: [{ argument: 'new_string', op: 'matches', value: 'secret' }],
      } as Parameters<typeof client.agents.tools.updateApproval>[1]);
      h.stub.enqueue(
        { toolCalls: [{ name: INSERT, arguments: { label: 'human', new_string: 'Likes tea' } }] },
        { text: 'Noted.' },
      );
      const harmless = await client.agents.messages.create(bo.id, {
        messages: [{ role: 'user', content: 'Remember tea' }],
      });
      expect(harmless.stop_reason.stop_reason).toBe('end_turn');
      expect(await humanBlock(bo.id)).toBe('Name: Alice\nLikes coffee\nLikes tea');
      await pauseOn(bo.id, 'Remember the secret', [
        { name: INSERT, arguments: { label: 'human', new_string: 'The secret is 42' } },
      ]);
      await listsCalls(tab, 1);
      // The last one is approved by the signed link its webhook carried, without the password.
      const boRuns = pausedRuns.get(bo.id)!;
      const notice = await eventually(
        async () => receiver.notices.find((n) => n.links && n.approval_request_id === requestOf(boRuns[1])),
        (found) => found !== undefined,
      );
      h.stub.enqueue({ text: 'Kept the secret.' });
      const approved = await fetch(notice!.links!.approve, { method: 'POST', body: '{}' });
      expect(approved.status).toBe(200);
      await listsCalls(tab, 0);
      expect(
        await eventually(
          () => humanBlock(bo.id),
          (value) => value.includes('42'),
        ),
      ).toContain('The secret is 42');

      // The runs API tells who answered each pause.
      const answerers = await Promise.all(
        [bo.id, cy.id, ada.id, bo.id].map(async (agentId, i) => {
          const runId = pausedRuns.get(agentId)![i === 3 ? 1 : 0];
          const run = await (await api(`/v1/runs/${runId}`)).json();
          return (run as { approvals: { answered_by: Record<string, string> }[] }).approvals[0].answered_by;
        }),
      );
      expect(answerers).toEqual([
        { kind: 'password', name: 'Ann' },
        { kind: 'password', name: 'Ann' },
        { kind: 'password' },
        { kind: 'signed_link', id: expect.any(String), via: new URL(receiver.url).host },
      ]);
    } catch (error) {
      await screenshot(tab, 'failed-first-tab');
      await screenshot(second, 'failed-second-tab');
      throw error;
    } finally {
      await context.close();
    }
  });
});

describe('the approval page on a server without a password', () => {
  const h = useAgentServer('openai');
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('says the server has no password, and signs in with the field left empty', async () => {
    const agent = await h.client.agents.create({
      name: 'open-server-agent',
      model: 'openai/gpt-4o-mini',
      tool_rules: [{ type: 'requires_approval', tool_name: INSERT }],
    });
    h.stub.enqueue({ toolCalls: [{ name: INSERT, arguments: { label: 'human', new_str: 'Likes tea' } }] });
    const paused = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Remember that I like tea.' }],
    });
    expect(paused.stop_reason.stop_reason).toBe('requires_approval');

    const page = await browser.newPage();
    try {
      await page.goto(`${h.server.url}/approvals`);
      await page.getByText('This server has no password').waitFor();
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('Live: the list updates by itself.').waitFor();
      await page.locator('#requests .call', { hasText: INSERT }).waitFor();
      expect(await page.locator('#login-error').innerText()).toBe('');
    } catch (error) {
      await page.screenshot({ path: path.join(ARTIFACTS, 'failed-open-server.png'), fullPage: true });
      throw error;
    } finally {
      await page.close();
    }
  });
});
