// The AG-UI chat page's script: a chat driven by the published @ag-ui/client, as any AG-UI frontend
// drives this server (POST /v1/ag-ui/agents/{agent_id}), with one frontend tool that acts on the page.
//
// The page holds no data: it asks for the server's password or a scoped access token, keeps it in this
// tab's sessionStorage and sends it as `Authorization: Bearer …`, which a browser never adds by itself
// (no CSRF). Data from the server goes into the page as text, never as HTML.
import { HttpAgent } from '@ag-ui/client';
import { v4 as uuid } from 'uuid';
import { $, announce, h, showSignedIn, showWhetherOpen, signInRefusal } from './shared/page.js';

const STORED = {
  credential: 'letta-ag-ui.credential',
  agent: 'letta-ag-ui.agent',
  /** A chat's thread, by agent: a reload continues it. */
  thread: (agentId) => `letta-ag-ui.thread.${agentId}`,
};
const AGENT_LIST_LIMIT = 100;

const state = {
  /** The password or token signed in with: '' on a server without a password, null when signed out. */
  credential: sessionStorage.getItem(STORED.credential),
  /** Whether the server asks no password (it then answers on loopback only, to anyone there). */
  open: false,
  /** The HttpAgent of the open chat. */
  agent: undefined,
  /** Each shown message's element, by message id. */
  shown: new Map(),
};

const bearer = () => (state.credential ? { authorization: `Bearer ${state.credential}` } : {});

/** A GET of the API: its status, and its JSON when it answered 2xx. */
async function get(path) {
  const response = await fetch(path, { cache: 'no-store', headers: bearer() });
  return { status: response.status, body: response.ok ? await response.json() : undefined };
}

// ---- The frontend tool -------------------------------------------------------------------------

/** The tools this page runs itself: the model calls them, the page answers with their result. */
const FRONTEND_TOOLS = {
  set_theme_color: {
    description:
      "Sets the accent colour of the chat page the user is looking at (buttons, links, the user's messages).",
    parameters: {
      type: 'object',
      properties: {
        color: { type: 'string', description: 'A CSS colour: a name (teal), #rrggbb, rgb(…) or hsl(…).' },
      },
      required: ['color'],
    },
    run({ color }) {
      if (typeof color !== 'string' || !CSS.supports('color', color))
        return `"${color}" is not a CSS colour: the page's accent colour is unchanged.`;
      document.documentElement.style.setProperty('--accent', color);
      announce(`The agent set the accent colour to ${color}.`);
      return `The page's accent colour is now ${color}.`;
    },
  },
};

const TOOLS = Object.entries(FRONTEND_TOOLS).map(([name, { description, parameters }]) => ({
  name,
  description,
  parameters,
}));

/** The result of one call of a frontend tool, as the text the model reads. */
function runFrontendTool(call) {
  const tool = FRONTEND_TOOLS[call.function.name];
  if (!tool) return `This page has no tool named ${call.function.name}.`;
  let args;
  try {
    args = JSON.parse(call.function.arguments || '{}');
  } catch {
    return `The arguments are not JSON: ${call.function.arguments}`;
  }
  return tool.run(args);
}

// ---- Messages, memory and interrupts as the page shows them -----------------------------------

const ROLE_NAMES = { user: 'You', assistant: 'Agent', tool: 'Tool result', reasoning: 'Thinking' };

/** A message's element, made once and updated in place as its text streams in. */
function messageElement(message) {
  let element = state.shown.get(message.id);
  if (!element) {
    element = h(
      'li',
      { class: `message ${message.role}`, 'data-message-id': message.id },
      h('span', { class: 'role' }, ROLE_NAMES[message.role] ?? message.role),
      h('div', { class: 'text' }),
      h('ul', { class: 'tool-calls' }),
    );
    state.shown.set(message.id, element);
    $('messages').append(element);
  }
  return element;
}

function showMessage(message) {
  if (message.role === 'system' || message.role === 'developer' || message.role === 'activity') return;
  const element = messageElement(message);
  const text = typeof message.content === 'string' ? message.content : textOf(message.content);
  element.querySelector('.text').textContent = text ?? '';
  element
    .querySelector('.tool-calls')
    .replaceChildren(
      ...(message.toolCalls ?? []).map((call) =>
        h(
          'li',
          { class: 'tool-call', 'data-tool-call-id': call.id },
          h('code', {}, `${call.function.name}(${call.function.arguments})`),
        ),
      ),
    );
}

/** The text parts of a multimodal message. */
const textOf = (parts) =>
  Array.isArray(parts)
    ? parts
        .filter((part) => part.type === 'text')
        .map((part) => part.text)
        .join('\n')
    : undefined;

function showMessages(messages) {
  const ids = new Set(messages.map((message) => message.id));
  for (const [id, element] of state.shown)
    if (!ids.has(id)) {
      element.remove();
      state.shown.delete(id);
    }
  for (const message of messages) showMessage(message);
  $('messages').lastElementChild?.scrollIntoView({ block: 'end' });
}

/** The memory blocks the run's state carries, `{ memory: { label: value } }`. */
function showMemory(agentState) {
  const blocks = Object.entries(agentState?.memory ?? {});
  $('memory-empty').hidden = blocks.length > 0;
  $('memory').replaceChildren(
    ...blocks.flatMap(([label, value]) => [
      h('dt', {}, label),
      h('dd', {}, typeof value === 'string' ? value : JSON.stringify(value)),
    ]),
  );
}

/**
 * Tool calls that wait for a person's approval, each answered here; the next run resumes them all
 * together, as AG-UI asks of a resume (an entry for every open interrupt).
 */
function showInterrupts(interrupts) {
  const box = $('interrupts');
  const answers = new Map();
  const answer = (interrupt, entry, card) => {
    answers.set(interrupt.id, entry);
    const said = entry.status === 'cancelled' ? 'Declined.' : entry.payload.approve ? 'Approved.' : 'Denied.';
    card.replaceChildren(h('p', {}, said));
    if (answers.size === interrupts.length) {
      box.hidden = true;
      box.replaceChildren();
      converse({ resume: [...answers.values()] });
    }
  };
  box.replaceChildren(...interrupts.map((interrupt) => interruptCard(interrupt, answer)));
  box.hidden = interrupts.length === 0;
  if (interrupts.length) {
    announce('The agent waits for your approval.');
    box.querySelector('button')?.focus();
  }
}

/**
 * An MCP server's question: its form is answered on the approval page (/approvals), which shows the
 * server's requested fields; here it can only be declined.
 */
function questionCard(interrupt, answer) {
  const card = h(
    'div',
    { class: 'interrupt', 'data-interrupt-id': interrupt.id },
    h('p', {}, interrupt.message ?? 'An MCP server asks you something.'),
    h(
      'p',
      {},
      'Answer it on the ',
      h('a', { href: '/approvals', target: '_blank', rel: 'noopener' }, 'approval page'),
      ', then reload.',
    ),
    h(
      'div',
      { class: 'answers' },
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          onclick: () => answer(interrupt, { interruptId: interrupt.id, status: 'cancelled' }, card),
        },
        'Decline',
      ),
    ),
  );
  return card;
}

function interruptCard(interrupt, answer) {
  if (interrupt.reason === 'mcp_elicitation') return questionCard(interrupt, answer);
  const { tool_name: toolName, arguments: args } = interrupt.metadata ?? {};
  const reason = h('input', {
    type: 'text',
    'aria-label': 'Reason to deny (optional)',
    placeholder: 'Reason',
  });
  const card = h(
    'div',
    { class: 'interrupt', 'data-interrupt-id': interrupt.id },
    h('p', {}, interrupt.message ?? 'A tool call waits for your approval.'),
    toolName && h('p', {}, h('code', {}, `${toolName}(${JSON.stringify(args ?? {})})`)),
    h(
      'div',
      { class: 'answers' },
      h(
        'button',
        {
          type: 'button',
          onclick: () =>
            answer(
              interrupt,
              { interruptId: interrupt.id, status: 'resolved', payload: { approve: true } },
              card,
            ),
        },
        'Approve',
      ),
      reason,
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          onclick: () =>
            answer(
              interrupt,
              {
                interruptId: interrupt.id,
                status: 'resolved',
                payload: { approve: false, ...(reason.value.trim() ? { reason: reason.value.trim() } : {}) },
              },
              card,
            ),
        },
        'Deny',
      ),
    ),
  );
  return card;
}

// ---- Runs --------------------------------------------------------------------------------------

function busy(running) {
  $('send').disabled = running;
  $('message').disabled = running;
  $('stop').hidden = !running;
  $('new-chat').disabled = running;
  $('open-agent').disabled = running;
}

/** What the page learns of a run as its events arrive. */
function subscriber(finished) {
  return {
    onMessagesChanged: ({ messages }) => showMessages(messages),
    onStateChanged: ({ state: agentState }) => showMemory(agentState),
    onRunFinishedEvent: (params) => Object.assign(finished, params),
    onRunErrorEvent: ({ event }) => Object.assign(finished, { error: event.message }),
  };
}

/**
 * Runs the agent until it needs the user: a frontend tool's calls are run here and their results
 * resume the run; interrupts wait for an answer (showInterrupts); an answer or an error ends it.
 */
async function converse(parameters = {}) {
  const agent = state.agent;
  $('chat-error').textContent = '';
  busy(true);
  try {
    for (let next = parameters; next;) {
      const finished = {};
      await agent.runAgent({ tools: TOOLS, ...next }, subscriber(finished));
      if (finished.error) throw new Error(finished.error);
      next = undefined;
      if (finished.outcome === 'interrupt') showInterrupts(finished.interrupts);
      else if (finished.outcome === 'success' && finished.pendingToolCallIds?.length) {
        answerToolCalls(agent, finished.pendingToolCallIds);
        next = {};
      }
    }
  } catch (failure) {
    if (failure?.status === 401)
      return signOut('The server no longer accepts this password or token: sign in again.');
    if (failure?.name !== 'AbortError') $('chat-error').textContent = failure?.message ?? String(failure);
  } finally {
    if (state.agent === agent) busy(false);
  }
}

/** Each pending call of a frontend tool, run and answered with a tool message (AG-UI's shape). */
function answerToolCalls(agent, toolCallIds) {
  const calls = agent.messages.flatMap((message) => message.toolCalls ?? []);
  for (const toolCallId of toolCallIds) {
    const call = calls.find((candidate) => candidate.id === toolCallId);
    const content = call ? runFrontendTool(call) : 'This page knows no such tool call.';
    agent.addMessage({ role: 'tool', id: uuid(), toolCallId, content });
  }
  showMessages(agent.messages);
}

function send(event) {
  event.preventDefault();
  const text = $('message').value.trim();
  if (!text || !state.agent || state.agent.isRunning) return;
  $('message').value = '';
  state.agent.addMessage({ role: 'user', id: uuid(), content: text });
  showMessages(state.agent.messages);
  converse();
}

// ---- Agents and chats --------------------------------------------------------------------------

/** Opens a chat with `agentId`: the thread kept for it in this tab, or a new one. */
function openChat(agentId, { fresh = false } = {}) {
  state.agent?.abortRun();
  const stored = fresh ? null : sessionStorage.getItem(STORED.thread(agentId));
  const threadId = stored ?? uuid();
  sessionStorage.setItem(STORED.thread(agentId), threadId);
  sessionStorage.setItem(STORED.agent, agentId);
  state.agent = new HttpAgent({
    url: `/v1/ag-ui/agents/${encodeURIComponent(agentId)}`,
    headers: bearer(),
    threadId,
  });
  state.shown.clear();
  $('messages').replaceChildren();
  $('interrupts').replaceChildren();
  $('interrupts').hidden = true;
  showMemory(undefined);
  $('new-chat').disabled = false;
  $('message').disabled = false;
  $('send').disabled = false;
  $('agent-hint').textContent = `Chat ${threadId.slice(0, 8)} with ${agentId}.`;
  // A run with no messages brings back the thread's history (MESSAGES_SNAPSHOT) and the agent's memory.
  if (stored) converse();
  $('message').focus();
}

function chosenAgent() {
  return $('agent').hidden ? $('agent-id').value.trim() : $('agent').value;
}

/** The agents to choose from; a token that may not list them names its agent instead. */
async function listAgents() {
  const { status, body } = await get(`/v1/agents/?limit=${AGENT_LIST_LIMIT}`);
  const listed = status === 200;
  $('agent').hidden = !listed;
  $('agent-id').hidden = listed;
  if (listed)
    $('agent').replaceChildren(
      ...body.map((agent) => h('option', { value: agent.id }, agent.name ? `${agent.name}` : agent.id)),
    );
  $('agent-hint').textContent = listed
    ? body.length
      ? ''
      : 'This server has no agents yet: create one through the API first.'
    : "Enter the id of an agent this token reaches (it may not list the server's agents).";
  const remembered = sessionStorage.getItem(STORED.agent);
  if (remembered && listed && body.some((agent) => agent.id === remembered)) {
    $('agent').value = remembered;
    openChat(remembered);
  }
}

// ---- Signing in and out ------------------------------------------------------------------------

async function signIn(event) {
  event.preventDefault();
  const error = $('login-error');
  const credential = $('credential').value.trim();
  error.textContent = '';
  if (!credential && !state.open) {
    error.textContent = 'Enter the server password or an access token.';
    return $('credential').focus();
  }
  state.credential = credential;
  let status;
  try {
    ({ status } = await get('/v1/agents/?limit=1'));
  } catch {
    status = 0;
  }
  // A scoped token may not list the agents (403), yet it is a credential the server knows.
  if (status !== 200 && status !== 403) {
    state.credential = null;
    error.textContent = signInRefusal(status);
    return $('credential').focus();
  }
  sessionStorage.setItem(STORED.credential, credential);
  $('credential').value = '';
  enterWorkspace();
}

function enterWorkspace() {
  showSignedIn(true);
  $('who').textContent = state.credential ? 'Signed in' : 'Signed in (no password on this server)';
  listAgents().catch(() => ($('agent-hint').textContent = 'The agents could not be listed.'));
}

function signOut(message = '') {
  state.agent?.abortRun();
  state.agent = undefined;
  state.shown.clear();
  state.credential = null;
  sessionStorage.removeItem(STORED.credential);
  $('messages').replaceChildren();
  showSignedIn(false);
  $('login-error').textContent = message;
  $('credential').focus();
}

// ---- Start -------------------------------------------------------------------------------------

$('login-form').addEventListener('submit', signIn);
$('sign-out').addEventListener('click', () => signOut());
$('agent-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const agentId = chosenAgent();
  if (agentId) openChat(agentId);
});
$('new-chat').addEventListener('click', () => state.agent && openChat(chosenAgent(), { fresh: true }));
$('message-form').addEventListener('submit', send);
$('message').addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey) send(event);
});
$('stop').addEventListener('click', () => state.agent?.abortRun());
showWhetherOpen('/v1/agents/?limit=1').then((open) => (state.open = open));
if (state.credential !== null) enterWorkspace();
else $('credential').focus();
