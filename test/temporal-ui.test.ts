/**
 * What an operator sees of a turn in the Temporal Web UI (the test run's dev server's, 2.42), read in
 * headless Chromium: each model, sandboxed tool and MCP call as an activity named by its summary; a
 * long sandboxed call under Pending Activities while it runs; where a paused turn waits (its call
 * stack) and what it waits for (its current details). Screenshots go to test-artifacts/temporal-ui/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { useAgentServer } from './helpers/agent-server';
import { testTemporalUiUrl } from './helpers/env';
import { eventually } from './helpers/eventually';
import { stdioConfig } from './helpers/mcp-servers';
import { connectTemporalClient, turnWorkflowId } from './helpers/temporal';

const ARTIFACTS = path.join(__dirname, '..', 'test-artifacts', 'temporal-ui');

const DOUBLE =
  'def double(n: int) -> int:\n    """Doubles n.\n\n    Args:\n        n: a number\n    """\n    return n * 2\n';
const NAP =
  'def nap() -> str:\n    """Sleeps a while."""\n    import time\n    time.sleep(15)\n    return "rested"\n';
const ASK_USER = {
  name: 'ask_user',
  description: 'Asks the user a question',
  parameters: { type: 'object', properties: { question: { type: 'string' } } },
};

describe('the Temporal UI shows what a turn does', () => {
  const h = useAgentServer('openai');
  let browser: Browser;
  beforeAll(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** The turn's workflow page, as a link to it opens: the latest run's history. */
  const openTurn = async (workflowId: string): Promise<Page> => {
    const page = await browser.newPage({ viewport: { width: 1600, height: 1200 } });
    await page.goto(`${testTemporalUiUrl()}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`);
    await page.waitForURL(/\/history$/);
    return page;
  };

  const screenshot = (page: Page, name: string) =>
    page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });

  /** The text the page shows, its frames' too (the UI renders summaries and details in iframes). */
  const pageText = async (page: Page): Promise<string> => {
    const texts = await Promise.all(
      page.frames().map((frame) =>
        frame
          .locator('body')
          .innerText({ timeout: 1_000 })
          .catch(() => ''),
      ),
    );
    return texts.join('\n');
  };

  /** Waits until the page shows `text`; on timeout, fails with what it showed and a screenshot. */
  const shows = async (page: Page, text: string, name: string, timeoutMs = 20_000) => {
    const shown = await eventually(
      () => pageText(page),
      (current) => current.includes(text),
      timeoutMs,
    );
    if (shown.includes(text)) return;
    await screenshot(page, `${name}-failed`);
    throw new Error(`the UI did not show "${text}"; it showed:\n${shown}`);
  };

  const openTab = async (page: Page, tab: string) => {
    await page.getByRole('tab', { name: new RegExp(`^${tab}`) }).click();
    await page.waitForURL(new RegExp(`/${tab.toLowerCase().replace(/ /g, '-')}$`));
  };

  it('shows a paused turn: its model, sandbox and MCP calls as activities with their summaries, where it waits and what for', async () => {
    const double = await h.client.tools.create({ source_code: DOUBLE });
    const mcp = await h.client.mcpServers.create({
      server_name: 'everything',
      config: stdioConfig('everything', ['stdio']),
    });
    const echo = (await h.client.mcpServers.tools.list(mcp.id!)).find((tool) => tool.name === 'echo')!;
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      include_base_tools: false,
      tool_ids: [double.id, echo.id!],
    });
    h.stub.enqueue(
      { toolCalls: [{ name: 'double', arguments: { n: 21 } }] },
      { toolCalls: [{ name: 'echo', arguments: { message: 'hello UI' } }] },
      { toolCalls: [{ name: ASK_USER.name, arguments: { question: 'Go on?' } }] },
    );
    const paused = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Double 21, echo, then ask me.' }],
      client_tools: [ASK_USER],
    });
    expect(paused.stop_reason.stop_reason).toBe('requires_approval');
    const request = paused.messages.at(-1) as { message_type: string; tool_call: { tool_call_id: string } };
    expect(request.message_type).toBe('approval_request_message');
    const workflowId = await turnWorkflowId(h.server.db, paused.messages[0].run_id!);

    const page = await openTurn(workflowId);
    for (const activity of [
      'callModel • model openai/gpt-4o-mini',
      'runSandboxTool • double (sandbox)',
      'runMcpTool • echo (MCP)',
    ])
      await shows(page, activity, 'paused-history');
    fs.writeFileSync(path.join(ARTIFACTS, 'paused-history.txt'), await page.innerText('body'));
    await screenshot(page, 'paused-history');

    await openTab(page, 'Call Stack');
    await shows(page, 'waitForAnswer', 'paused-call-stack');
    await screenshot(page, 'paused-call-stack');

    // User Metadata: the turn's summary and details, each activity's summary, its current details.
    await openTab(page, 'User Metadata');
    await shows(
      page,
      `Waiting for approval of ask_user (${request.tool_call.tool_call_id})`,
      'paused-details',
    );
    for (const summary of ['model openai/gpt-4o-mini', 'double (sandbox)', 'echo (MCP)'])
      await shows(page, summary, 'paused-details');
    fs.writeFileSync(path.join(ARTIFACTS, 'paused-details.txt'), await pageText(page));
    await screenshot(page, 'paused-details');
    await page.close();
    await h.client.mcpServers.delete(mcp.id!);
  });

  it('lists a long sandboxed call under Pending Activities while it runs', async () => {
    const nap = await h.client.tools.create({ source_code: NAP });
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      include_base_tools: false,
      tool_ids: [nap.id],
    });
    h.stub.enqueue({ toolCalls: [{ name: 'nap', arguments: {} }] }, { text: 'Rested.' });
    const run = await h.client.agents.messages.createAsync(agent.id, {
      messages: [{ role: 'user', content: 'Take a nap.' }],
    });
    const workflowId = await eventually(
      () => turnWorkflowId(h.server.db, run.id),
      (id) => Boolean(id),
    );

    // The page is opened once the sandbox runs the call (the UI does not poll a tab's content).
    const temporal = await connectTemporalClient();
    const pending = await eventually(
      async () =>
        (await temporal.client.workflow.getHandle(workflowId).describe()).raw.pendingActivities ?? [],
      (activities) => activities.some((a) => a.activityType?.name === 'runSandboxTool'),
    );
    await temporal.close();
    expect(pending.map((a) => a.activityType?.name)).toEqual(['runSandboxTool']);

    const page = await openTurn(workflowId);
    await openTab(page, 'Pending Activities');
    await shows(page, 'runSandboxTool', 'pending-activities');
    for (const text of ['Started', 'Attempt', '1 of 3', 'Last Heartbeat'])
      await shows(page, text, 'pending-activities');
    fs.writeFileSync(path.join(ARTIFACTS, 'pending-activities.txt'), await pageText(page));
    await screenshot(page, 'pending-activities');
    // The tab names the call's activity type only; the history's timeline and events name its summary.
    await openTab(page, 'History');
    await shows(page, 'runSandboxTool • nap (sandbox)', 'pending-history');
    await shows(page, 'Pending Activity', 'pending-history');
    await screenshot(page, 'pending-history');
    // What the turn does meanwhile: its current details, on the User Metadata tab.
    await openTab(page, 'User Metadata');
    await shows(page, 'Running tool nap (sandbox)', 'running-details');
    await screenshot(page, 'running-details');

    const finished = await eventually(
      () => h.client.runs.retrieve(run.id),
      (current) => current.status === 'completed',
      40_000,
    );
    expect(finished).toMatchObject({ status: 'completed', stop_reason: 'end_turn' });
    await page.reload();
    await openTab(page, 'Pending Activities');
    await shows(page, 'No Pending Activities', 'completed-pending-activities');
    await shows(page, 'Completed', 'completed-pending-activities');
    await screenshot(page, 'completed-pending-activities');
    await page.close();
  });
});
